"""The Process reward tab in Chromium, as a user starts with it on the demo: the demo's step labels loaded with one
click (counted by who made them, loaded once), a process reward model trained from the tab on them, its three charts
drawn with every series named in a visible legend, and the held-out figures it reached in the run's status; the run
stopped midway and resumed from the tab finishes with each step logged once."""
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
        expect(page.locator("#prm-status")).to_contain_text(re.compile(r"step ([5-9]|[1-3]\d)/40"), timeout=LONG)
        page.locator("#prm-stop").click()
        expect(page.locator("#prm-status")).to_contain_text("stopped", timeout=LONG)
        stopped_at = int(re.search(r"stopped at step (\d+)", page.locator("#prm-status").inner_text())[1])
        assert 0 < stopped_at < 40
        expect(page.locator("#prm-resume")).to_be_enabled(timeout=LONG)
        page.locator("#prm-resume").click()
        expect(page.locator("#prm-check")).to_contain_text(f"Resuming run {run['id']}", timeout=LONG)
        expect(page.locator("#prm-status")).to_contain_text("completed", timeout=LONG)
        expect(page.locator("#prm-status")).to_contain_text(re.compile(r"finished at step 40; held-out step "
                                                                       r"accuracy \d+\.\d%"))
        logged = (Workspace(app.ws_dir).run_dir(run["id"]) / "metrics.jsonl").read_text().splitlines()
        steps = [m["step"] for m in map(json.loads, logged) if "loss" in m]
        assert steps == sorted(set(steps)) and steps[-1] == 40  # each step logged once, on to the end
        for title, series in PLOTS.items():
            check_chart(page, f"prm-plot-{slug(title)}", [name for name, _ in series])
        screenshot(page, "prm-tab")
    (run,) = Workspace(app.ws_dir).runs("prm")
    assert run["status"] == "completed"
