"""The Reward model tab in Chromium: train from the form, watch the loss plot grow, stop, find the run."""
import re
import time

import pytest
from browser import fill, in_view, open_page, screenshot
from playwright.sync_api import expect

from rloo_studio.core.workspace import Workspace


@pytest.fixture(scope="module")
def app(first_runs_app):
    return first_runs_app  # shared with test_rloo_ui (tests/conftest.py)


def _loss_points(page) -> int:
    """Points on the loss chart's training line, read from the SVG path Plotly drew (M x,y L x,y ...)."""
    return page.locator("#reward-plot-loss").evaluate(
        """el => Math.max(0, ...[...el.querySelectorAll('g.scatterlayer g.trace')]
             .filter(g => ((g.__data__ || [])[0]?.trace?.name || '').startsWith('training batches'))
             .map(g => (g.querySelector('path.js-line')?.getAttribute('d') || '').split(/[ML]/).length - 1))""")


def _wait(cond, timeout, what):
    t0 = time.time()
    while not cond():
        assert time.time() - t0 < timeout, f"timed out waiting for {what}"
        time.sleep(0.25)


def _open_tab(page):
    page.get_by_role("tab", name="Reward model").click()
    expect(page.locator("#reward-preflight")).to_contain_text("237", timeout=60000)


def test_bad_input_shows_a_message_and_starts_nothing(app):
    with open_page(app.url) as page:
        _open_tab(page)
        fill(page, "reward-learning-rate", -1)
        page.locator("#reward-launch").click()
        expect(page.locator("#reward-check")).to_contain_text("learning_rate must be positive")
        fill(page, "reward-learning-rate", 0.001)
        missing = str(app.ws_dir / "no-such-model")  # inside the workspace: the app may look there
        fill(page, "reward-model", missing)
        page.get_by_role("button", name="Check settings").click()
        expect(page.locator("#reward-preflight")).to_contain_text(f"No model at {missing}")
        screenshot(page, "reward-bad-input")
    assert Workspace(app.ws_dir).runs("reward") == []


# At 1400x1000 without scrolling: the settings changed most, the buttons, the run's status and its main charts.
IN_VIEW = ("reward-preset", "reward-model", "reward-learning-rate", "reward-max-steps", "reward-num-train-epochs",
           "reward-validate", "reward-launch", "reward-stop", "reward-resume", "reward-status", "reward-plot-loss",
           "reward-plot-accuracy", "reward-plot-margin")


def test_train_from_the_tab_plots_grow_then_stop_and_find_the_run(app):
    with open_page(app.url) as page:
        _open_tab(page)
        assert in_view(page, *IN_VIEW) == {}
        fill(page, "reward-max-steps", 400)
        page.locator("#reward-launch").click()
        expect(page.locator("#reward-status")).to_contain_text("running", timeout=60000)
        _wait(lambda: _loss_points(page) >= 2, 300, "the first loss points")
        first = _loss_points(page)
        _wait(lambda: _loss_points(page) >= first + 2, 300, "more loss points")
        expect(page.locator("#reward-status")).to_contain_text(re.compile(r"step \d+/400 · .+ in all · about .+ left"))
        assert in_view(page, *IN_VIEW, "reward-check") == {}  # and while it trains, with Train's answer
        screenshot(page, "reward-training")
        # Generate while the run trains: it is queued behind it, then runs once the run stops.
        page.get_by_role("tab", name="Label").click()
        page.get_by_text("Generate candidates from a model").click()
        fill(page, "lbl-gen-limit", 2)
        page.get_by_role("button", name="Generate", exact=True).click()
        expect(page.get_by_text(re.compile(r"queued \(generate-"))).to_be_visible(timeout=60000)
        _open_tab(page)
        expect(page.locator("#reward-resume")).to_be_disabled()  # running: Stop, not Resume
        page.locator("#reward-stop").click()
        expect(page.locator("#reward-status")).to_contain_text("stopped at step", timeout=300000)
        expect(page.locator("#reward-stop")).to_be_disabled(timeout=60000)  # stopped: nothing left to stop ...
        expect(page.locator("#reward-resume")).to_be_enabled(timeout=60000)  # ... and its checkpoint to resume from
        (run,) = Workspace(app.ws_dir).runs("reward")
        table = page.locator("#reward-runs")
        expect(table).to_contain_text(run["id"])
        row = table.locator("tr", has_text=run["id"]).first
        expect(row).to_contain_text("stopped", timeout=60000)  # the list refreshes on its own timer
        expect(row).to_contain_text("190 / 47")
        table.get_by_text(run["id"]).filter(visible=True).first.click()
        expect(page.get_by_text("max_steps: 400").first).to_be_visible()
        expect(page.get_by_text("--set max_steps=400").first).to_be_visible()
        assert _loss_points(page) >= first + 2
        screenshot(page, "reward-stopped")
        page.get_by_role("tab", name="Label").click()
        expect(page.get_by_text(re.compile(r"completed: \d+ new pairs from 2 prompts"))).to_be_visible(timeout=300000)
