"""The Process reward tab in Chromium, as a user starts with it on the demo: the demo's step labels loaded with one
click (counted by who made them, loaded once), a process reward model trained from the tab on them, its three charts
drawn with every series named in a visible legend, and the held-out figures it reached in the run's status; the run
stopped midway names the step its figures were measured at, and resumed from the tab says what it recomputes, never
shows its step counter go back and finishes with each step logged once."""
import json
import re

import pytest
from browser import fill, open_page, running_app, screenshot
from playwright.sync_api import expect
from test_charts_ui import check_chart

from rloo_studio.core.paths import DEMO_DATA
from rloo_studio.core.workspace import Workspace
from rloo_studio.label.steps import labeled_responses
from rloo_studio.prm.charts import PLOTS
from rloo_studio.ui.run_panel import slug

LONG = 600_000  # ms: wait for behaviour, not for time, on a shared 2-core machine
# Keeps on the element every text it shows (el.__seen): what a person watching the status line read, in order.
WATCH_JS = """el => { el.__seen = [el.innerText];
    new MutationObserver(() => { if (el.innerText !== el.__seen[el.__seen.length - 1]) el.__seen.push(el.innerText); })
        .observe(el, {subtree: true, childList: true, characterData: true}); }"""


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with running_app(tmp_path_factory.mktemp("prm-ui") / "ws") as a:  # its own: the step labels change the queue
        yield a


def test_load_the_demos_step_labels_then_train_a_process_reward_model_from_the_tab(app):
    bundled = len((DEMO_DATA / "step_labels.jsonl").read_text().splitlines())
    with open_page(app.url) as page:
        page.get_by_role("tab", name="Process reward").click()
        expect(page.locator("#prm-labels")).to_contain_text("No step labels yet", timeout=LONG)
        page.locator("#prm-load-demo").click()
        expect(page.locator("#prm-load-demo-msg")).to_contain_text(f"Added {bundled} responses", timeout=LONG)
        expect(page.locator("#prm-labels")).to_contain_text(re.compile(rf"rollouts\s+{bundled}\b"), timeout=LONG)
        # labels to train on: the rollouts section folds, and the process reward model's Train comes into view
        expect(page.locator("#rollouts-launch")).to_be_hidden(timeout=LONG)
        expect(page.locator("#prm-launch")).to_be_in_viewport()
        page.locator("#prm-load-demo").click()
        expect(page.locator("#prm-load-demo-msg")).to_contain_text("already in this workspace", timeout=LONG)
        assert len(labeled_responses(Workspace(app.ws_dir), "rollouts")) == bundled  # loaded once

        fill(page, "prm-max-steps", 40)
        fill(page, "prm-copies", 1)  # fewer changed copies: the tab's training is the subject here
        fill(page, "prm-eval-steps", 10)
        page.locator("#prm-launch").click()
        expect(page.locator("#prm-check")).to_contain_text("Started run prm-", timeout=LONG)
        (run,) = Workspace(app.ws_dir).runs("prm")

        # Stop mid-run (a checkpoint where it stopped), Resume from the tab, and the run finishes its 40 steps
        page.locator("#prm-status").evaluate(WATCH_JS)  # every status line the page shows from here on
        expect(page.locator("#prm-status")).to_contain_text(re.compile(r"step ([5-9]|[1-3]\d)/40"), timeout=LONG)
        page.locator("#prm-stop").click()
        expect(page.locator("#prm-status")).to_contain_text("stopped", timeout=LONG)
        said = page.locator("#prm-status").inner_text()
        stopped_at = int(re.search(r"stopped at step (\d+)", said)[1])
        assert 0 < stopped_at < 40
        # the figures at the stop are the stop step's (an evaluation is cheap here), and say so
        assert re.search(rf"stopped at step {stopped_at}; held-out figures at step {stopped_at}: step accuracy "
                         r"\d+\.\d%", said), said
        expect(page.locator("#prm-resume")).to_be_enabled(timeout=LONG)
        page.locator("#prm-resume").click()
        expect(page.locator("#prm-check")).to_contain_text(re.compile(
            rf"Resuming run {run['id']} from the checkpoint at step (\d+)( \(the run had reached {stopped_at}\))?: "
            r"recomputing the teacher's labels and the base's states( \(about [^)]+\))?, then continuing from step "
            r"\1\."), timeout=LONG)
        expect(page.locator("#prm-status")).to_contain_text("completed", timeout=LONG)
        expect(page.locator("#prm-status")).to_contain_text(re.compile(r"finished at step 40; held-out figures at "
                                                                       r"step 40: step accuracy \d+\.\d%"))
        shown = page.locator("#prm-status").evaluate("el => el.__seen")
        counters = [int(m[1]) for line in shown for m in [re.search(r"step (\d+)/40", line)] if m]
        assert counters == sorted(counters), f"the step counter went back: {shown}"  # never below what it showed
        assert counters[-1] == 40 and min(counters) <= stopped_at
        left = [line for line in shown if re.search(r"about \d+ min", line)]
        assert all(int(re.search(r"about (\d+) min", line)[1]) < 30 for line in left), left  # no first-step guess
        logged = (Workspace(app.ws_dir).run_dir(run["id"]) / "metrics.jsonl").read_text().splitlines()
        steps = [m["step"] for m in map(json.loads, logged) if "loss" in m]
        assert steps == sorted(set(steps)) and steps[-1] == 40  # each step logged once, on to the end
        for title, series in PLOTS.items():
            check_chart(page, f"prm-plot-{slug(title)}", [name for name, _ in series])
        screenshot(page, "prm-tab")
    (run,) = Workspace(app.ws_dir).runs("prm")
    assert run["status"] == "completed"
