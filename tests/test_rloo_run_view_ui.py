"""The RLOO tab beside a finished run, in Chromium at 1400x1000, read as a person reads it: after a reload the line
above the form says the form is a new run's (not the run's shown beside it) and one click loads the run's settings;
at the end of a run the loss, reward and KL charts are in view with the held-out before / after folded to its headline
under them; the completions table shows each reward to the digits that tell them apart; the compare table's columns
fit the page.

On the session's trained app (tests/conftest.py trained_app): its short RLOO run, and a finished process-reward run
written beside it for a moment (tests/rloo_shown_run.py; created a day earlier, so the tab's default run stays the
trained one for the other tests of that app) and deleted afterwards."""
import re

import pytest
from browser import fill, in_view, open_page, screenshot
from playwright.sync_api import expect
from rloo_shown_run import PRESET, STEPS, finished_run, process_reward_values

from rloo_studio.core.workspace import Workspace
from rloo_studio.runs.catalog import delete_run

T = 120_000  # ms: a shared 2-core machine can be slow; the test waits for behaviour, not for time
CHARTS = ("rloo-plot-loss", "rloo-plot-reward", "rloo-plot-kl")
CELLS_JS = """(el, column) => {  // [text, lines it takes] of each drawn cell of the column
    const heads = [...el.querySelectorAll('thead th')].map(th => th.innerText.trim());
    const at = heads.indexOf(column);
    return [...el.querySelectorAll('.virtual-body [role=row], tbody tr')].filter(r => r.innerText.trim())
        .map(r => r.querySelectorAll('td, [role=gridcell]')[at]).filter(c => c)
        .map(c => { const walk = document.createTreeWalker(c, NodeFilter.SHOW_TEXT), tops = new Set();
                    for (let t = walk.nextNode(); t; t = walk.nextNode()) {
                        if (!t.textContent.trim()) continue;
                        const range = document.createRange(); range.selectNodeContents(t);
                        for (const b of range.getClientRects()) tops.add(Math.round(b.top)); }
                    return [c.innerText.trim(), tops.size]; });
}"""


@pytest.fixture(scope="module")
def app(trained_app):
    return trained_app


@pytest.fixture
def shown_run(app):
    ws = Workspace(app.ws_dir)
    rid = finished_run(ws)
    yield rid
    delete_run(ws, rid)


def _rloo(page, rid: str):
    page.get_by_role("tab", name="RLOO").click()
    expect(page.locator("#rloo-status")).to_contain_text(rid, timeout=T)


def test_after_a_reload_the_form_says_it_is_a_new_runs_and_loads_the_runs_settings(app):
    note, rid = "#rloo-form-note", app.run_id
    with open_page(app.url) as page:
        _rloo(page, rid)
        expect(page.locator(note)).to_contain_text(
            re.compile(rf"The form holds a new run's settings \(preset demo-cpu\); the run shown is {rid} \(demo-cpu "
                       r"settings with .* changed\)"), timeout=T)
        assert in_view(page, "rloo-form-note", "rloo-load-run", "rloo-preset", "rloo-max-steps") == {}
        page.locator("#rloo-load-run").click()
        expect(page.locator(note)).to_contain_text(f"The form holds the settings of the run shown, {rid}", timeout=T)
        expect(page.locator("#rloo-max-steps input")).to_have_value("2")  # the run's, not the preset's 40
        expect(page.locator("#rloo-learning-rate input")).to_have_value("0.05")
        expect(page.locator("#rloo-load-run")).to_be_hidden()
        fill(page, "rloo-max-steps", 3)  # edited from the run's settings: said so
        expect(page.locator(note)).to_contain_text(f"new run's settings (the settings of {rid} with max_steps "
                                                   "changed)", timeout=T)
        screenshot(page, "rloo-form-note")
        page.reload()  # the page starts again from its first preset: said beside the run, never silently
        _rloo(page, rid)
        expect(page.locator(note)).to_contain_text("The form holds a new run's settings (preset demo-cpu)", timeout=T)
        expect(page.locator("#rloo-max-steps input")).to_have_value("40")
        expect(page.locator("#rloo-load-run")).to_be_visible()


def test_the_end_of_a_run_keeps_its_charts_in_view_and_each_reward_to_its_digits(app, shown_run):
    rid, headline = shown_run, f"Held-out accuracy 38.5% → 60.0% (+21.5 points) at step {STEPS}"
    with open_page(app.url) as page:
        _rloo(page, app.run_id)
        fill(page, "rloo-run", rid)
        expect(page.locator("#rloo-status")).to_contain_text(headline, timeout=T)
        expect(page.locator("#rloo-form-note")).to_contain_text(f"the run shown is {rid} ({PRESET} settings with "
                                                                "max_steps and save_steps changed)", timeout=T)
        page.wait_for_function("ids => ids.every(i => document.querySelector('#' + i + ' .js-plotly-plot'))",
                               arg=list(CHARTS), timeout=T)
        assert in_view(page, "rloo-status", *CHARTS) == {}  # the charts that matter, in view at the end as at start
        held = page.locator("#rloo-held-out")
        expect(held).to_contain_text(headline)  # folded to its headline, under the charts
        held.get_by_text(headline).click()
        expect(held.locator("table")).to_contain_text("+21.5 points", timeout=T)
        screenshot(page, "rloo-end-of-run")

        table = page.locator("#rloo-completions")
        expect(table).to_contain_text("0.8157", timeout=T)  # the shown run's completions, not the trained run's
        table.scroll_into_view_if_needed()
        for column in ("process_reward", "total"):
            cells = table.evaluate(CELLS_JS, column)
            shown = {text for text, _ in cells}  # the rows drawn (the table draws those near its view)
            # each as samples.jsonl holds it, to 4 significant digits: 0.8123 and 0.8157 told apart, none rounded to 0
            assert len(shown) >= 8 and shown <= {str(float(f"{v:.4g}")) for v in process_reward_values()}, \
                (column, sorted(shown))
            assert "0.8123" in shown and "0.8157" in shown
            broken = [(text, lines) for text, lines in cells if lines > 1]
            assert not broken, f"{column}: a figure broken over lines: {broken}"
        screenshot(page, "rloo-completions-digits")
