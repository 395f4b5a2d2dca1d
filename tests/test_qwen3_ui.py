"""Qwen3 models (the real Qwen3 tokenizer and Unsloth's templates, tests/qwen3_fixture.py) through the page.

- A hybrid Qwen3 (`qwen3` template) picked in the RLOO tab's model field, enable_thinking switched off, trained for
  two steps; the run trains as set, and what the policy read for a completion is the template's empty think
  block, opened and closed once in the prompt.
- A Qwen3-Thinking model (`qwen3-thinking` template: the generation prompt opens <think>): pairs written as
  Qwen3-Thinking writes them (no opening tag) uploaded in the Label tab, a reward model trained on them in the
  Reward model tab, and a response scored in the Inspect tab with and without the opening tag and cut short."""
import json
import re

import pytest
import yaml
from browser import fill, open_page, reveal, running_app, screenshot
from playwright.sync_api import expect
from test_qwen3_cli import qwen3_pairs

from rloo_studio.core.workspace import Workspace

LONG = 900_000
THINK, END_THINK = 151667, 151668  # <think>, </think> in the real Qwen3 vocabulary


@pytest.fixture(scope="module")
def app(tmp_path_factory, qwen3_hybrid_model, qwen3_model):
    with running_app(tmp_path_factory.mktemp("qwen3-ui") / "ws", "--allow-path", str(qwen3_hybrid_model),
                     "--allow-path", str(qwen3_model)) as a:
        a.model, a.thinking_model = qwen3_hybrid_model, qwen3_model
        yield a


def test_rloo_on_a_hybrid_qwen3_with_thinking_off(app):
    ws = Workspace(app.ws_dir)
    with open_page(app.url) as page:
        page.get_by_role("tab", name="RLOO").click()
        fill(page, "rloo-model", app.model)
        reveal(page, "rloo-backend")
        page.locator("#rloo-backend input").click()
        page.get_by_role("option", name="transformers", exact=True).click()
        page.locator("#rloo-enable-thinking input[type=checkbox]").uncheck()
        fill(page, "rloo-eval-prompts", 0)
        fill(page, "rloo-num-generations", 2)
        fill(page, "rloo-per-device-train-batch-size", 4)
        fill(page, "rloo-max-completion-length", 16)
        fill(page, "rloo-max-steps", 2)
        page.locator("#rloo-launch").click()
        expect(page.locator("#rloo-check")).to_contain_text("Started run rloo-", timeout=LONG)
        (run,) = ws.runs("rloo")
        expect(page.locator("#rloo-status")).to_contain_text(re.compile(run["id"] + ".*completed"), timeout=LONG)
        cfg = yaml.safe_load((ws.run_dir(run["id"]) / "config.yaml").read_text())
        assert cfg["enable_thinking"] is False and cfg["model"] == str(app.model) and cfg["backend"] == "transformers"

        rows = page.locator("#rloo-completions").get_by_role("row").filter(has_text=re.compile(r"\d+ · k=\d+"))
        expect(rows.first).to_be_visible(timeout=LONG)
        rows.first.get_by_role("gridcell").nth(2).click()  # a row's prompt cell picks that completion
        view = page.locator("#rloo-model-view [data-testid=model-view]")
        expect(view).to_have_count(1, timeout=LONG)
        # the hybrid template with enable_thinking=False ends the prompt with an empty, closed think block
        expect(view.locator(".mv-text")).to_contain_text("<|im_start|>assistant\n<think>\n\n</think>\n\n")
        opened = view.locator(f".mv-tok[data-id='{THINK}']")
        expect(opened).to_have_count(1)
        assert opened.get_attribute("title").endswith(" · prompt")
        closed = view.locator(f".mv-tok[data-id='{END_THINK}']")
        assert closed.count() >= 1 and closed.first.get_attribute("title").endswith(" · prompt")
        view.scroll_into_view_if_needed()
        screenshot(page, "qwen3-rloo-no-thinking")


PROMPT = "What is 12 + 34?"
BODY = "2+4=6\n\nthen the tens\n</think>\n\nThe answer is 46."  # as Qwen3-Thinking writes it: no opening tag
CUT = "2+4=6\n\nthen the te"  # cut before </think>


def _scored(page, response: str, shape: str) -> dict:
    """Score `response` in the Inspect tab; wait until the summary shows `shape` (the previous result showed
    another one, so what is read is this response's); return what is shown."""
    page.locator("#inspect-response textarea").fill(response)
    page.locator("#inspect-score").click()
    expect(page.locator("#inspect-summary")).to_contain_text(f" · {shape} · ", timeout=LONG)
    steps = page.locator("#inspect-steps .rs-step")
    return {"steps": steps.all_inner_texts(),
            "tips": [steps.nth(k).get_attribute("title") for k in range(steps.count())],
            "total": page.locator("#inspect-summary [data-testid=total]").inner_text(),
            "summary": page.locator("#inspect-summary .rs-summary").inner_text()}


def _trained_ids(run_dir, rows: list[dict], max_length: int, scratch) -> list[list[int]]:
    """The token ids TRL's RewardTrainer trains on for these rows: its own dataset preparation (EOS added,
    prompt + response tokenized as one text, pairs over max_length dropped), with the run's saved tokenizer."""
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import RewardConfig, RewardTrainer

    tok = AutoTokenizer.from_pretrained(run_dir / "adapter")
    args = RewardConfig(output_dir=str(scratch), max_length=max_length, use_cpu=True, bf16=False,
                        report_to=[])
    data = Dataset.from_list([{k: r[k] for k in ("prompt", "chosen", "rejected")} for r in rows])
    ds = RewardTrainer._prepare_dataset(None, data, tok, args, "train")  # uses no trainer state
    return [ids for ex in ds for ids in (ex["chosen_ids"], ex["rejected_ids"])]


def test_qwen3_thinking_pairs_imported_trained_and_inspected(app, tmp_path):
    ws = Workspace(app.ws_dir)
    src = tmp_path / "qwen3_pairs.jsonl"
    pairs = qwen3_pairs(12)
    src.write_text("".join(json.dumps(r) + "\n" for r in pairs))
    with open_page(app.url) as page:
        # -- Label: upload and import the Qwen3-style pairs; the store holds them as written, each labeled
        page.get_by_text("Import pairs or prompts", exact=True).last.click()
        page.locator("input[type=file]").first.set_input_files(str(src))
        page.get_by_role("button", name="Import", exact=True).click()
        expect(page.locator("#lbl-import-msg")).to_contain_text("Imported 12 rows from qwen3_pairs.jsonl", timeout=LONG)
        stored = ws.query(
            "SELECT pr.text AS prompt, ra.text AS a, rb.text AS b, l.choice FROM pairs p "
            "JOIN prompts pr ON pr.id = p.prompt_id JOIN responses ra ON ra.id = p.response_a "
            "JOIN responses rb ON rb.id = p.response_b JOIN labels l ON l.pair_id = p.id "
            "WHERE p.source = ? AND l.superseded = 0 ORDER BY p.id", ("qwen3_pairs.jsonl",))
        assert [(r["prompt"], r["a"], r["b"], r["choice"]) for r in stored] == \
               [(r["prompt"], r["chosen"], r["rejected"], "a") for r in pairs]
        assert not any(r["a"].startswith("<think>") or r["b"].startswith("<think>") for r in stored)

        # -- Reward model: the Qwen3-Thinking model, 2 steps
        page.get_by_role("tab", name="Reward model").click()
        fill(page, "reward-model", app.thinking_model)
        fill(page, "reward-max-steps", 2)
        fill(page, "reward-per-device-train-batch-size", 4)
        fill(page, "reward-max-length", 256)
        page.locator("#reward-launch").click()
        expect(page.locator("#reward-check")).to_contain_text("Started run reward-", timeout=LONG)
        (run,) = ws.runs("reward")
        rid, run_dir = run["id"], ws.run_dir(run["id"])
        expect(page.locator("#reward-status")).to_contain_text(re.compile(rid + ".*completed"), timeout=LONG)

        # -- Inspect: that run; the same steps and scores with and without the opening tag; a cut response
        page.get_by_role("tab", name="Inspect").click()
        page.locator("#inspect-model input").click()
        page.get_by_role("option", name=re.compile(re.escape(rid))).click()
        expect(page.locator("#inspect-base input")).to_have_value(re.compile(re.escape(app.thinking_model.name)),
                                                                  timeout=LONG)  # the run's base: the policy's view
        page.locator("#inspect-prompt textarea").fill(PROMPT)
        without = _scored(page, BODY, "thinking closed")
        assert without["steps"] == ["2+4=6", "then the tens"]
        assert "2 steps · thinking closed · " in without["summary"]

        cut = _scored(page, CUT, "thinking unclosed (truncated)")
        assert cut["steps"] == ["2+4=6", "then the te"]  # all of it reasoning: two steps, no answer
        assert "2 steps · thinking unclosed (truncated)" in cut["summary"]
        expect(page.locator("#inspect-steps .rs-answer")).to_have_count(0)
        screenshot(page, "qwen3-inspect-truncated")

        tagged = _scored(page, "<think>\n" + BODY, "thinking closed")
        assert tagged["steps"] == without["steps"]
        assert tagged["tips"] == without["tips"] and tagged["total"] == without["total"]  # the same scores
        rm_view = page.locator("#inspect-model-view [data-testid=model-view]").nth(1)
        expect(rm_view).to_contain_text("Reward model", timeout=LONG)
        expect(rm_view.locator(f".mv-tok[data-id='{THINK}']")).to_have_count(1)  # the prompt's; the response's went
        page.locator("#inspect-steps").scroll_into_view_if_needed()
        screenshot(page, "qwen3-inspect-steps")

    # -- the run folder: under the Thinking template, exactly one <think> per response in what TRL trained on.
    # pairs.jsonl holds the rows the job gave TRL (the imported pairs and the workspace's demo pairs, which begin
    # with their own <think>); TRL's own preparation of them, with the run's tokenizer and max_length, gives the ids.
    rows = [json.loads(x) for x in (run_dir / "pairs.jsonl").read_text().splitlines() if x.strip()]
    assert all(r["prompt"].endswith("<|im_start|>assistant\n<think>\n") for r in rows)
    assert {(r["chosen"], r["rejected"]) for r in rows} >= {(p["chosen"], p["rejected"]) for p in pairs}
    max_length = json.loads((run_dir / "reproduce.json").read_text())["trainer_args"]["max_length"]
    ids = _trained_ids(run_dir, [r for r in rows if r["split"] == "train"], max_length, tmp_path / "trl")
    assert len(ids) == 2 * json.loads((run_dir / "preflight.json").read_text())["trained_on"]["train"]
    assert [seq.count(THINK) for seq in ids] == [1] * len(ids)
    assert all(seq.count(END_THINK) <= 1 for seq in ids)  # two demo rejected responses are cut before </think>
