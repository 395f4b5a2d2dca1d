"""The RLOO tab in a real browser: presets, validation, launch, live plots and completions, stop."""
import re
import time

import pytest
from browser import fill, in_view, open_page, reveal, screenshot
from playwright.sync_api import expect

from rloo_studio.core.workspace import Workspace
from rloo_studio.runs.jobs import KINDS

LONG = 900_000  # ms: a shared 2-core machine can be slow; the test waits for behaviour, not for time

POINTS_JS = """el => Math.max(0, ...[...el.querySelectorAll('g.scatterlayer g.trace path.js-line')]
                  .map(p => (p.getAttribute('d') || '').split('L').length))"""  # Plotly: M x,y L x,y ...


@pytest.fixture(scope="module")
def app(first_runs_app):
    return first_runs_app  # shared with test_reward_ui (tests/conftest.py)


def _points(page, plot):
    return page.locator(f"#rloo-plot-{plot}").evaluate(POINTS_JS)


def _wait_points(page, plots, n, timeout_s=900):
    end = time.time() + timeout_s
    while time.time() < end:
        got = {p: _points(page, p) for p in plots}
        if min(got.values()) >= n:
            return got
        page.wait_for_timeout(1000)
    raise AssertionError(f"plots never reached {n} points: {got}")


# At 1400x1000 without scrolling: the settings changed most, the buttons, the run's status and its main charts.
IN_VIEW = ("rloo-preset", "rloo-model", "rloo-rewards", "rloo-num-generations", "rloo-beta", "rloo-learning-rate",
           "rloo-max-steps", "rloo-max-completion-length", "rloo-validate", "rloo-launch", "rloo-stop", "rloo-resume",
           "rloo-status", "rloo-plot-loss", "rloo-plot-reward", "rloo-plot-kl")


def test_rloo_tab_launch_plots_completions_stop(app):
    ws = Workspace(app.ws_dir)
    with open_page(app.url) as page:
        page.get_by_role("tab", name="RLOO").click()
        expect(page.locator("#rloo-status")).to_contain_text("No RLOO run yet", timeout=LONG)
        expect(page.locator("#rloo-stop")).to_be_disabled()  # nothing to stop or resume: both look it
        expect(page.locator("#rloo-resume")).to_be_disabled()
        assert in_view(page, *IN_VIEW) == {}

        # presets fill the form from the config dataclass
        page.locator("#rloo-preset input").click()
        page.get_by_role("option", name="gpu-24gb").click()
        expect(page.locator("#rloo-model input")).to_have_value("Qwen/Qwen3-4B-Thinking-2507", timeout=LONG)
        page.locator("#rloo-preset input").click()
        page.get_by_role("option", name="demo-cpu", exact=True).click()  # not demo-cpu-reward-model
        expect(page.locator("#rloo-model input")).to_have_value(re.compile(r"^demo model · "), timeout=LONG)

        # bad input: a plain message, and nothing is saved
        fill(page, "rloo-per-device-train-batch-size", 6)
        page.locator("#rloo-launch").click()
        expect(page.locator("#rloo-check")).to_contain_text(
            "per_device_train_batch_size (6) must be a multiple of num_generations (8); try 8", timeout=LONG)
        assert ws.runs("rloo") == []

        # a short real run
        fill(page, "rloo-num-generations", 2)
        fill(page, "rloo-per-device-train-batch-size", 4)
        # too short to close </think> even when the demo model skips its reasoning: the page must warn
        fill(page, "rloo-max-completion-length", 2)
        fill(page, "rloo-max-steps", 500)  # Stop ends it: long enough not to finish before (50 steps once did, in 12 s)
        fill(page, "rloo-eval-prompts", 0)
        page.locator("#rloo-validate").click()
        expect(page.locator("#rloo-check")).to_contain_text("Settings are valid.", timeout=LONG)
        page.locator("#rloo-launch").click()
        expect(page.locator("#rloo-check")).to_contain_text("Started run rloo-", timeout=LONG)
        expect(page.locator("#rloo-status")).to_contain_text("running", timeout=LONG)

        first = _wait_points(page, ["loss", "reward", "kl"], 2)
        assert in_view(page, *IN_VIEW, "rloo-check") == {}  # and while it runs, with Launch's answer
        expect(page.locator("#rloo-completions")).to_contain_text("(cut before </think>)", timeout=LONG)
        expect(page.locator("#rloo-warnings")).to_contain_text("cut at max completion length (2 tokens) before",
                                                               timeout=LONG)
        more = _wait_points(page, ["loss", "reward", "kl"], max(first.values()) + 1)
        assert all(more[k] > first[k] for k in more), (first, more)  # the plots gained points while we watched
        expect(page.locator("#rloo-status")).to_contain_text("last: loss", timeout=LONG)
        screenshot(page, "rloo-running")
        expect(page.locator("#rloo-resume")).to_be_disabled()  # a running run: Stop, not Resume

        page.locator("#rloo-stop").click()
        expect(page.locator("#rloo-check")).to_contain_text("Stopping", timeout=LONG)
        expect(page.locator("#rloo-status")).to_contain_text("stopped", timeout=LONG)
        expect(page.locator("#rloo-stop")).to_be_disabled(timeout=LONG)  # stopped: nothing left to stop ...
        expect(page.locator("#rloo-resume")).to_be_enabled(timeout=LONG)  # ... and its checkpoint to resume from
        (run,) = ws.runs("rloo")
        assert run["status"] == "stopped"
        assert (ws.run_dir(run["id"]) / "adapter" / "adapter_config.json").exists()
        # the warning outlives the run's end, with the steps it was seen at
        page.wait_for_timeout(3000)  # a few ticks after the run ended
        expect(page.locator("#rloo-warnings")).to_contain_text("cut at max completion length (2 tokens) before",
                                                               timeout=LONG)
        expect(page.locator("#rloo-warnings")).to_contain_text("seen at step")
        screenshot(page, "rloo-stopped")

        # before / after on held-out prompts, from the saved adapter
        page.get_by_text("Before / after: the same held-out prompts").click()
        fill(page, "rloo-compare-n", 4)
        page.locator("#rloo-compare").click()
        expect(page.locator("#rloo-compare-summary")).to_contain_text("4 held-out prompts", timeout=LONG)
        expect(page.locator("#rloo-compare-summary")).to_contain_text("trained (" + run["id"], timeout=LONG)


def test_prompt_file_upload_becomes_a_prompt_set(app, tmp_path):
    good = tmp_path / "mine.csv"
    good.write_text("prompt,answer\nWhat is 1+1?,2\nAdd 2 and 2.,4\n")
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text('{"prompt": "x", "chosen": "a", "rejected": "b"}\n')
    with open_page(app.url) as page:
        page.get_by_role("tab", name="RLOO").click()
        reveal(page, "rloo-prompt-set")  # the upload sits with the prompt set, in the folded prompts section
        upload = page.locator("#rloo-upload input[type=file]")
        upload.set_input_files(str(pairs))
        expect(page.locator("#rloo-check")).to_contain_text("pairs.jsonl holds preference pairs", timeout=LONG)
        page.locator("#rloo-upload button[aria-label='Clear']").click()
        upload.set_input_files(str(good))
        expect(page.locator("#rloo-check")).to_contain_text(
            "Imported 2 prompts as prompt set 'mine.csv' (columns for the rewards: answer)", timeout=LONG)
        expect(page.locator("#rloo-prompt-set input")).to_have_value("mine.csv", timeout=LONG)
    ws = Workspace(app.ws_dir)
    assert ws.query("SELECT COUNT(*) FROM prompts p JOIN prompt_sets s ON s.id = p.set_id "
                    "WHERE s.name='mine.csv'")[0][0] == 2
    assert not ws.query("SELECT 1 FROM prompt_sets WHERE name='pairs.jsonl'")  # the refused file wrote nothing


def test_launch_panel_writes_the_form_and_an_accelerate_config(app):
    import yaml

    from rloo_studio.core.config import build
    from rloo_studio.rloo.config import RlooJobConfig

    with open_page(app.url) as page:
        page.get_by_role("tab", name="RLOO").click()
        page.locator("#rloo-preset input").click()
        page.get_by_role("option", name="gpu-16gb").click()
        expect(page.locator("#rloo-model input")).to_have_value(KINDS["rloo"].preset_config("gpu-16gb").model,
                                                                timeout=LONG)
        page.locator("#rloo-validate").click()  # the preset's two rewards reach the tick-boxes as a list
        expect(page.locator("#rloo-check")).to_contain_text("is not in the local Hugging Face cache", timeout=LONG)
        page.get_by_text("Run on several GPUs or machines (accelerate)").click()
        page.locator("#rloo-launch-strategy input").click()
        page.get_by_role("option", name="DeepSpeed ZeRO-3").click()
        fill(page, "rloo-launch-gpus", 8)
        page.locator("#rloo-launch-write").click()
        out = page.locator("#rloo-launch-out")
        expect(out).to_contain_text("accelerate launch --config_file", timeout=LONG)
        expect(out).to_contain_text("train-rloo")
        screenshot(page, "rloo-launch-panel")
    (folder,) = (app.ws_dir / "launch").glob("rloo-*")
    assert build(RlooJobConfig, folder / "config.yaml") == KINDS["rloo"].preset_config("gpu-16gb")
    (acc,) = folder.glob("accelerate-*.yaml")
    c = yaml.safe_load(acc.read_text())
    assert (c["distributed_type"], c["deepspeed_config"]["zero_stage"], c["num_processes"]) == ("DEEPSPEED", 3, 8)
