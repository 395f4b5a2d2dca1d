"""Bad values typed into every free-text field of the Reward, Inspect, RLOO and Runs tabs, in Chromium:
each answer is one plain message on the page, no element shows the bare word "Error" (gradio's red
toasts and boxes), nothing is started, and the app serves the next action. Also: a failed run shows its
message first and its traceback folded; Train is refused by the pre-flight; ticking a reward fills in
its weight; an action clears the earlier action's message; Inspect opens on the newest trained model.
"""
import re

import pytest
from browser import fill, open_page, reveal, running_app
from playwright.sync_api import expect

from rloo_studio.core.paths import DEMO_MODEL
from rloo_studio.core.workspace import Workspace
from rloo_studio.label.demo_data import open_workspace
from rloo_studio.label.store import preference_pairs
from rloo_studio.reward.config import RewardJobConfig
from rloo_studio.reward.job import train_reward
from rloo_studio.rloo import job as rloo_job
from rloo_studio.rloo.config import RlooJobConfig
from rloo_studio.runs.catalog import trained_adapters
from rloo_studio.runs.runner import JobRunner

T = 60000
LONG = "a" * 300  # longer than any file name may be
HUGE = "1+1=2 " * 4000  # 24,000 characters: far past the demo model's 1,024 tokens


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    ws_dir = tmp_path_factory.mktemp("typed") / "ws"
    ws = open_workspace(ws_dir, demo=True)
    # Two runs that failed for real, before the app starts: the job functions raise, the runner records it.
    runner = JobRunner(ws)
    reward = runner.submit("reward", RewardJobConfig(model=str(ws_dir / "models" / "gone")), train_reward)
    rloo = runner.submit("rloo", RlooJobConfig(prompt_set="no-such-set"), rloo_job.train_rloo)
    assert runner.wait(reward, 120) == "failed" and runner.wait(rloo, 120) == "failed"
    with running_app(ws_dir, seed=False) as a:
        a.failed = {"reward": reward, "rloo": rloo}
        yield a


def no_error_word(page) -> None:
    """Nothing on the page says just "Error" (gradio's toast title and its red output boxes)."""
    page.wait_for_timeout(500)
    assert page.get_by_text("Error", exact=True).count() == 0
    assert page.get_by_text(re.compile("Traceback")).filter(visible=True).count() == 0


def runs(app) -> list[str]:
    return [r["id"] for r in Workspace(app.ws_dir).runs()]


def test_reward_tab(app):
    before = runs(app)
    with open_page(app.url) as page:
        page.get_by_role("tab", name="Reward model").click()
        expect(page.locator("#reward-preflight")).to_contain_text("237", timeout=T)
        # the failed run (the newest reward run): its message first, the traceback folded below it
        failure = page.locator("#reward-failure")
        expect(failure.get_by_test_id("failure-message")).to_contain_text("No model at", timeout=T)
        expect(failure.locator("details.traceback")).to_have_count(1)
        assert failure.locator("details.traceback").get_attribute("open") is None
        expect(failure.locator("details.traceback pre")).not_to_be_visible()
        expect(page.locator("#reward-log textarea")).not_to_have_value(re.compile("Traceback"))
        failure.locator("details.traceback summary").click()
        expect(failure.locator("details.traceback pre")).to_contain_text("Traceback (most recent call last)")
        failure.locator("details.traceback summary").click()  # folded again
        expect(failure.locator("details.traceback pre")).not_to_be_visible()
        # bad text in the free-text fields: Train is refused with the pre-flight's words, no run is made
        cases = [("reward-model", "../../../etc", "outside the folders this app may read"),
                 ("reward-model", LONG, "too long to be a folder or a hub id"),
                 ("reward-model", "", "No model given"),
                 ("reward-model", str(app.ws_dir / "no-such-model"), "No model at"),
                 ("reward-lora-target-modules", "", "lora.target_modules must name at least one layer")]
        for elem, bad, message in cases:
            reveal(page, elem)
            good = page.locator(f"#{elem} input").first.input_value()
            fill(page, elem, bad)
            page.locator("#reward-launch").click()
            expect(page.locator("#reward-check")).to_contain_text(message, timeout=T)
            no_error_word(page)
            fill(page, elem, good)
        # the next action replaces the refusal with its own answer
        page.get_by_role("button", name="Check settings").click()
        expect(page.locator("#reward-check")).to_contain_text("Settings are valid", timeout=T)
        expect(page.locator("#reward-check")).not_to_contain_text("target_modules")
        assert runs(app) == before  # nothing the pre-flight knew to be wrong became a run
        # several GPUs: a count that is not a whole number from 1 is said in words
        page.get_by_text("Run on several GPUs or machines").first.click()
        fill(page, "reward-launch-gpus", 0)
        page.locator("#reward-launch-write").click()
        expect(page.locator("#reward-launch-out")).to_contain_text("GPUs per machine: give a whole number", timeout=T)
        no_error_word(page)
        # the app still serves: a real run trains (2 steps), and Inspect then opens on it
        fill(page, "reward-max-steps", 2)
        page.locator("#reward-launch").click()
        expect(page.locator("#reward-check")).to_contain_text("Started run", timeout=T)
        expect(page.locator("#reward-launch-out")).to_have_text("")  # Train cleared the launch panel's refusal
        expect(page.locator("#reward-status")).to_contain_text("completed", timeout=300000)
        (new,) = [r for r in runs(app) if r not in before]
        expect(page.locator("#reward-failure")).to_have_text("")  # the newest run did not fail
        page.get_by_role("tab", name="Inspect").click()
        expect(page.locator("#inspect-model input")).to_have_value(re.compile(re.escape(new)), timeout=T)


def test_inspect_tab(app):
    with open_page(app.url) as page:
        page.get_by_role("tab", name="Inspect").click()
        # a fresh page opens on the newest trained reward model too (test_reward_tab trained one)
        trained = trained_adapters(Workspace(app.ws_dir), "reward")
        newest = trained[0][1] if trained else "base model, untrained head"
        expect(page.locator("#inspect-model input")).to_have_value(re.compile(re.escape(newest)), timeout=T)
        # single view: empty, absurdly long
        for value, message in (("", "The response is empty"), (HUGE, "this model reads at most 1024")):
            fill(page, "inspect-response", value)
            page.locator("#inspect-score").click()
            expect(page.locator("#inspect-summary")).to_contain_text(message, timeout=T)
            no_error_word(page)
        # pair view: ids that name no labeled pair, typed in the number box
        page.get_by_role("tab", name="Pair").click()
        for value, message in (("999999", "There is no pair 999999"), ("-1", "whole numbers from 1"),
                               ("2.5", "whole numbers from 1"), ("", "Type a pair id first")):
            fill(page, "inspect-pair-id", value)
            page.locator("#inspect-load").click()
            expect(page.locator("#inspect-margin")).to_contain_text(message, timeout=T)
            expect(page.locator("#inspect-margin")).not_to_contain_text("+0.0000")
            expect(page.locator("#inspect-chosen-text textarea")).to_have_value("")
            no_error_word(page)
        page.locator("#inspect-score-pair").click()
        expect(page.locator("#inspect-margin")).to_contain_text("The chosen response is empty", timeout=T)
        fill(page, "inspect-pair-prompt", "x" * 120_000)
        fill(page, "inspect-chosen-text", "x")
        fill(page, "inspect-rejected-text", "y")
        page.locator("#inspect-score-pair").click()
        expect(page.locator("#inspect-margin")).to_contain_text("the reward model scores up to 100,000", timeout=T)
        no_error_word(page)
        fill(page, "inspect-pair-prompt", "Add 1 and 1.")
        # the base-model box, with the untrained head
        page.locator("#inspect-model input").click()
        page.get_by_role("option", name="base model, untrained head").click()
        for value, message in (("../../../etc", "outside the folders"), (LONG, "too long to be a folder")):
            fill(page, "inspect-base", value)
            page.locator("#inspect-score-pair").click()
            expect(page.locator("#inspect-margin")).to_contain_text(message, timeout=T)
            no_error_word(page)
        # the app still serves: a labeled pair loads and scores
        fill(page, "inspect-base", DEMO_MODEL)
        pid = preference_pairs(Workspace(app.ws_dir))[0]["pair_id"]
        fill(page, "inspect-pair-id", pid)
        page.locator("#inspect-load").click()
        expect(page.get_by_test_id("margin")).to_have_text(re.compile(r"[+-]\d+\.\d{4}"), timeout=T)
        # dataset view: a refusal is cleared by the next action
        page.get_by_role("tab", name="Dataset").click()
        page.locator("#inspect-open").click()
        expect(page.locator("#inspect-ds-msg")).to_contain_text("Click a row of the table first", timeout=T)
        page.locator("#inspect-dataset").click()
        expect(page.locator("#inspect-ds-msg")).to_have_text("", timeout=T)
        expect(page.get_by_test_id("accuracy")).to_be_visible(timeout=T)
        no_error_word(page)


def test_rloo_tab(app):
    before = runs(app)
    with open_page(app.url) as page:
        page.get_by_role("tab", name="RLOO").click()
        expect(page.locator("#rloo-status")).to_contain_text(app.failed["rloo"], timeout=T)
        # the failed run: its message first, the traceback folded
        failure = page.locator("#rloo-failure")
        expect(failure.get_by_test_id("failure-message")).to_contain_text("no-such-set", timeout=T)
        assert failure.locator("details.traceback").get_attribute("open") is None
        # the failed run saved no checkpoint: nothing to stop or resume, and both buttons look it
        check = page.locator("#rloo-check")
        expect(page.locator("#rloo-stop")).to_be_disabled(timeout=T)
        expect(page.locator("#rloo-resume")).to_be_disabled(timeout=T)
        # a bad run id typed into the Run box: the status line says what to do; Stop and Resume stay greyed out
        for rid in ("../../../etc", LONG, "rloo-19990101-000000"):
            fill(page, "rloo-run", rid)
            expect(page.locator("#rloo-status")).to_contain_text(re.compile(r"pick (a run|one) from the list"),
                                                                 timeout=T)
            for button in ("#rloo-resume", "#rloo-stop"):
                expect(page.locator(button)).to_be_disabled()
            no_error_word(page)
        page.get_by_text("Before / after").click()
        page.locator("#rloo-compare").click()
        expect(page.locator("#rloo-compare-summary")).to_contain_text("pick one from the list", timeout=T)
        # ticking a reward fills in its weight; unticking removes it
        reveal(page, "rloo-reward-weights")
        weights = page.locator("#rloo-reward-weights input")
        expect(weights).to_have_value("1.0")
        page.locator("#rloo-rewards").get_by_text("think_format", exact=True).click()
        expect(weights).to_have_value("1.0, 1.0", timeout=T)
        page.locator("#rloo-validate").click()
        expect(check).to_contain_text("Settings are valid", timeout=T)
        expect(page.locator("#rloo-compare-summary")).to_have_text("")  # Check cleared Compare's refusal
        page.locator("#rloo-rewards").get_by_text("think_format", exact=True).click()
        expect(weights).to_have_value("1.0", timeout=T)
        # every free-text field of the form
        cases = [("rloo-model", LONG, "too long to be a folder"), ("rloo-model", "", "No model given"),
                 ("rloo-lora-target-modules", "", "target_modules must name at least one layer"),
                 ("rloo-reward-weights", "abc", "reward_weights: expected a number"),
                 ("rloo-reward-weights", "", "give one weight per reward"),
                 ("rloo-prompt-set", "../../../etc", "no prompt set named"),
                 ("rloo-prompt-set", LONG, "no prompt set named"),
                 ("rloo-optim", "nonsense", "is not an optimizer"),
                 ("rloo-eval-prompt-set", "../../x", "eval_prompt_set: no prompt set named")]
        for elem, bad, message in cases:
            reveal(page, elem)
            good = page.locator(f"#{elem} input").first.input_value()
            fill(page, elem, bad)
            page.locator("#rloo-launch").click()
            expect(check).to_contain_text(message, timeout=T)
            expect(check).not_to_contain_text("Settings are valid")
            no_error_word(page)
            fill(page, elem, good)
        # the app still serves
        fill(page, "rloo-run", app.failed["rloo"])
        page.locator("#rloo-validate").click()
        expect(check).to_contain_text("Settings are valid", timeout=T)
        expect(page.locator("#rloo-status")).to_contain_text("failed", timeout=T)
        no_error_word(page)
    assert runs(app) == before


def test_runs_tab(app):
    with open_page(app.url) as page:
        page.get_by_role("tab", name="Runs").click()
        page.locator("#runs-delete").click()
        expect(page.locator("#runs-msg")).to_contain_text("Select a run first", timeout=T)
        pick = page.locator("#runs-pick input")
        pick.fill("../../../etc")
        pick.press("Enter")
        page.get_by_text("Run on several GPUs or machines").first.click()
        page.locator("#runs-launch-write").click()
        expect(page.locator("#runs-launch-out")).to_contain_text("Select a reward or RLOO run first", timeout=T)
        expect(page.locator("#runs-msg")).to_have_text("")  # the launch action cleared Delete's answer
        no_error_word(page)
        pick.fill(app.failed["reward"])
        page.get_by_role("option", name=app.failed["reward"]).click()
        details = page.locator("#runs-details")
        expect(details.get_by_test_id("failure-message")).to_contain_text("No model at", timeout=T)
        assert details.locator("details.traceback").get_attribute("open") is None
        for gpus in ("0", "-2"):  # (1.5 is rounded to 2 by the whole-number field itself, on the page)
            fill(page, "runs-launch-gpus", gpus)
            page.locator("#runs-launch-write").click()
            expect(page.locator("#runs-launch-out")).to_contain_text("give a whole number", timeout=T)
            no_error_word(page)
        fill(page, "runs-launch-gpus", 2)
        page.locator("#runs-launch-write").click()
        expect(page.locator("#runs-launch-out")).to_contain_text("accelerate launch", timeout=T)
        no_error_word(page)


def test_label_records_and_playground_tabs(app):
    """The free-text fields of the Label tab's export, the Records tab and the Playground: plain answers,
    no bare "Error", nothing stored, and the page keeps serving."""
    ws = Workspace(app.ws_dir)
    labels_before = ws.query("SELECT COUNT(*) FROM labels")[0][0]
    with open_page(app.url) as page:
        page.get_by_label("Your name").fill("tester")  # the name the Records tab labels under, too
        page.get_by_label("Your name").press("Enter")
        page.get_by_text("Export for other tools").first.click()
        for bad, says in ((LONG, "may have at most 200 characters"), ("../pairs.jsonl", "plain file name"),
                          (" ", "plain file name")):
            fill(page, "lbl-export-name", bad)
            page.locator("#lbl-export-go").click()
            expect(page.locator("#lbl-export-msg")).to_contain_text(says, timeout=T)
            no_error_word(page)
        assert not any((app.ws_dir / "exports").glob("a" * 50 + "*"))

        page.get_by_role("tab", name="Records").click()
        for bad, says in (("abc", "is not a pair number"), ("999999", "There is no pair 999999")):
            fill(page, "records-pair", bad)
            expect(page.locator("#records-detail")).to_contain_text(says, timeout=T)
            no_error_word(page)
        page.locator("#records-a").click()
        expect(page.locator("#records-msg")).to_contain_text("no pair 999999", timeout=T)
        for field, bad, says in (("records-page", -3, "match"),  # a page before the first shows the first
                                 ("records-per-page", 0, "Rows per page must be between 1 and 200")):
            fill(page, field, bad)
            page.locator("#records-go").click()
            expect(page.locator("#records-count")).to_contain_text(says, timeout=T)
            no_error_word(page)
        fill(page, "records-per-page", 20)
        fill(page, "records-search", HUGE[:2000])
        page.locator("#records-go").click()
        expect(page.locator("#records-count")).to_contain_text("0 pairs match", timeout=T)
        no_error_word(page)

        page.get_by_role("tab", name="Playground").click()
        page.locator("#playground-go").click()  # no prompt
        expect(page.locator("#playground-msg")).not_to_be_empty(timeout=T)
        no_error_word(page)
        fill(page, "playground-prompt", "What is 2+2?")
        fill(page, "playground-base-model", "../../../etc")
        page.locator("#playground-go").click()
        expect(page.locator("#playground-msg")).not_to_be_empty(timeout=T)
        no_error_word(page)
        fill(page, "playground-base-model", "")
        page.get_by_role("button", name="Sampling").click()  # the accordion that holds max new tokens
        fill(page, "playground-max-new", -5)
        page.locator("#playground-go").click()
        expect(page.locator("#playground-msg")).not_to_be_empty(timeout=T)
        no_error_word(page)
    assert ws.query("SELECT COUNT(*) FROM labels")[0][0] == labels_before  # nothing was labeled
