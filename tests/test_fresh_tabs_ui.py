"""A tab you come back to is current on its first paint, in Chromium at 1400x1000.

Every animation frame from the click on the tab is recorded in the page (FRAMES_JS), and the first frame in
which the tab's live part is visible must already show the current state: the step the run had reached when the
tab was clicked, every chart's x-axis covering all its points, the runs table listing every run. Nothing waits
for a later tick to fix it, and nothing is timed.

- Reward: a run started from the tab trains on while the user is on Records; back on the Reward tab.
- Runs and RLOO: an RLOO run written by another process (as `train-rloo` from the CLI writes one) appears after
  the page was built; the Runs tab lists it on first paint, and the RLOO tab, left while the run moved on,
  shows its newest step on return.
"""
import json
import os
import re
import time

import pytest
from browser import fill, open_page, running_app, screenshot
from playwright.sync_api import expect

from rloo_studio.core.workspace import Workspace
from rloo_studio.runs.jobs import KINDS
from rloo_studio.runs.runner import prepare_run, write_status

# One entry per animation frame from now on: [ms, part visible?, part's text, charts: [x-axis range, points' x],
# the part has a box (its tab is shown)?, what its ::before shows ('' if nothing)].
FRAMES_JS = """([part, charts]) => {
  const frames = window.__frames = [];  // a recording started earlier stops: it writes to its own list
  const t0 = performance.now();
  const shown = e => !!e && !!e.offsetParent && getComputedStyle(e).visibility === 'visible';
  const loop = () => {
    const el = document.querySelector(part);
    const plots = [...document.querySelectorAll(charts)].map(c => {
      const g = c.querySelector('.js-plotly-plot');
      if (!g || !g._fullLayout || !g._fullLayout.xaxis) return null;
      return [g._fullLayout.xaxis.range.slice(), (g.data || []).flatMap(t => [...(t.x || [])])];
    });
    const boxed = !!el && !!el.offsetParent, note = boxed ? getComputedStyle(el, '::before') : null;
    frames.push([performance.now() - t0, shown(el), el ? el.innerText : '', plots, boxed,
                 note && note.visibility === 'visible' && note.content !== 'none' ? note.content : '']);
    if (frames === window.__frames && frames.length < 3000) requestAnimationFrame(loop);
  };
  loop();
}"""


def first_shown(page, tab: str, part: str, charts: str = "#none") -> list:
    """Click `tab` and return the first frame (see FRAMES_JS) in which `part` is visible."""
    page.evaluate(FRAMES_JS, [part, charts])
    page.get_by_role("tab", name=tab, exact=True).click()
    expect(page.locator(part)).to_be_visible(timeout=120000)
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    frames = page.evaluate("window.__frames")
    assert not frames[0][1], f"{part} was already visible before {tab} was clicked"
    i = next(i for i, f in enumerate(frames) if f[1])
    # while the tab is shown and its part not yet current, the part's place says so (not a blank space)
    assert any(f[4] for f in frames[:i]), f"{part} was drawn current in the frame its tab appeared"
    blank = [f[0] for f in frames[:i] if f[4] and "Updating" not in f[5]]
    assert not blank, f"{part}: blank, not 'Updating…', {len(blank)} frames from {blank[0]:.0f} ms after the click"
    return frames[i]


def assert_axes_cover(frame, where: str, at_least: int | None = None) -> None:
    """Every chart drawn in this frame: its x-axis reaches its last point; with points, one at `at_least`."""
    drawn = [c for c in frame[3] if c and c[1]]
    assert drawn, f"{where}: no chart with points on the first paint"
    for (lo, hi), xs in drawn:
        assert lo <= min(xs) and hi >= max(xs), f"{where}: x-axis {lo:.2f}..{hi:.2f} cuts points up to {max(xs)}"
    if at_least is not None:
        newest = max(max(xs) for _, xs in drawn)
        assert newest >= at_least, f"{where}: the charts end at step {newest}, the run was at step {at_least}"


def shown_step(text: str) -> int:
    m = re.search(r"step (\d+)/\d+", text)
    assert m, f"no 'step N/M' in {text!r}"
    return int(m.group(1))


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with running_app(tmp_path_factory.mktemp("fresh-tabs") / "ws") as a:
        yield a


class OtherProcessRun:
    """An RLOO run that this test writes step by step, as a run in another process (the CLI) does."""

    def __init__(self, ws: Workspace, total: int = 50):
        self.ws, self.total = ws, total
        self.ctx = prepare_run(ws, "rloo", KINDS["rloo"].preset_config("demo-cpu"), pid=os.getpid())
        self.rid, self.step, self.started = self.ctx.run_id, 0, time.time()
        ws.upsert_run(self.rid, status="running", started=self.started)

    def advance(self, to: int) -> None:
        while self.step < to:
            self.step += 1
            s = self.step
            self.ctx.metric({"step": s, "loss": 0.01, "reward": 0.1 * s, "kl": 0.001 * s, "reward_std": 0.3,
                             "entropy": 1.0 - 0.01 * s, "completions/mean_length": 40 + s, "step_time": 0.6})
        write_status(self.ctx.dir, {"id": self.rid, "kind": "rloo", "status": "running", "started": self.started,
                                    "pid": os.getpid(), "progress": {"done": self.step, "total": self.total}})

    def end(self) -> None:
        write_status(self.ctx.dir, {"id": self.rid, "kind": "rloo", "status": "stopped", "started": self.started,
                                    "ended": time.time(), "message": f"stopped at step {self.step}"})
        self.ws.upsert_run(self.rid, status="stopped", ended=time.time(), message=f"stopped at step {self.step}")


def test_runs_and_rloo_tabs_show_a_run_of_another_process_on_first_paint(app):
    ws = Workspace(app.ws_dir)
    with open_page(app.url) as page:
        page.get_by_role("tab", name="Records").click()
        run = OtherProcessRun(ws)  # after the page was built: its build-time tables do not know the run
        try:
            run.advance(3)
            frame = first_shown(page, "Runs", "#runs-table")
            assert run.rid in frame[2], f"the Runs table's first paint has no row for {run.rid}: {frame[2]!r}"
            assert "running" in frame[2]

            frame = first_shown(page, "RLOO", "#rloo-status")
            assert run.rid in frame[2] and shown_step(frame[2]) == 3, frame[2]
            page.get_by_role("tab", name="Records").click()
            run.advance(17)  # the run moves on while the user is away
            frame = first_shown(page, "RLOO", "#rloo-status", ".live-rloo .studio-chart")
            assert shown_step(frame[2]) == 17, f"back on RLOO, the first paint shows {frame[2]!r}, not step 17"
            assert_axes_cover(frame, "RLOO tab", at_least=17)
            screenshot(page, "fresh-rloo-return")
        finally:
            run.end()


def _disk_step(ws_dir, rid: str) -> int:
    lines = (ws_dir / "runs" / rid / "metrics.jsonl").read_text().splitlines()
    return max([json.loads(x).get("step", 0) for x in lines if x.strip()] or [0])


def _wait(cond, timeout: float, what: str) -> None:
    t0 = time.time()
    while not cond():
        assert time.time() - t0 < timeout, f"timed out waiting for {what}"
        time.sleep(0.5)


def test_reward_tab_shows_the_current_step_and_whole_axes_when_it_comes_back(app):
    with open_page(app.url) as page:
        page.get_by_role("tab", name="Reward model").click()
        expect(page.locator("#reward-preflight")).to_contain_text("237", timeout=60000)
        fill(page, "reward-max-steps", 400)
        page.locator("#reward-launch").click()
        expect(page.locator("#reward-status")).to_contain_text(re.compile(r"step [2-9]\d*/400"), timeout=300000)
        (run,) = Workspace(app.ws_dir).runs("reward")
        left_at = shown_step(page.locator("#reward-status").inner_text())
        page.get_by_role("tab", name="Records").click()
        _wait(lambda: _disk_step(app.ws_dir, run["id"]) >= left_at + 6, 600, "six more steps while away")
        at_click = _disk_step(app.ws_dir, run["id"])
        frame = first_shown(page, "Reward model", "#reward-status", "#reward-plots .studio-chart")
        assert shown_step(frame[2]) >= at_click, f"back on Reward, the first paint shows {frame[2]!r}; the run " \
                                                 f"had logged step {at_click} (left at {left_at})"
        assert_axes_cover(frame, "Reward tab", at_least=at_click)
        screenshot(page, "fresh-reward-return")
        page.locator("#reward-stop").click()
        expect(page.locator("#reward-status")).to_contain_text("stopped at step", timeout=300000)
