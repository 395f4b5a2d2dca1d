"""Every training chart in Chromium at 1400x1000: each expected series has a legend label that is in the
page and inside its chart (not clipped), and a drawn line. A short reward job, two short RLOO jobs, the
Runs tab overlay of the two RLOO runs. Screenshots mid-run and after go to test-artifacts/ (docs/ keeps
the chosen ones)."""
import re
import time

import pytest
from playwright.sync_api import expect

from browser import ARTIFACTS, fill, open_page, running_app, screenshot
from rloo_studio.runs import series as S
from rloo_studio.runs.runner import read_metrics
from rloo_studio.rloo.view import PLOTS
from rloo_studio.core.workspace import Workspace

LONG = 900_000

# For one chart: its legend labels with their boxes, the chart's box, and the 'd' of each drawn line.
CHART_JS = """el => {
  const plot = el.querySelector('.js-plotly-plot');
  if (!plot) return null;
  const box = r => { const b = r.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
  return {
    chart: box(plot),
    legend: [...plot.querySelectorAll('g.legend text')].filter(t => t.textContent.trim())
              .map(t => [t.textContent, box(t)]),
    lines: [...plot.querySelectorAll('g.scatterlayer g.trace')].map(g => {
      const p = g.querySelector('path.js-line'); return p ? (p.getAttribute('d') || '') : ''; }),
    colors: [...plot.querySelectorAll('g.legend g.traces')].map(g => {
      const line = g.querySelector('path.js-line'), dot = g.querySelector('path.scatterpts');
      return [(g.querySelector('text.legendtext') || {}).textContent || '',
              (line && line.style.stroke) || (dot && dot.style.fill) || ''];
    }),
  };
}"""

# Every word of every visible table header, checked for being laid out on one line (a header that breaks
# mid-word, "correctn / ess", reads as two words).
BROKEN_HEADER_WORDS_JS = """() => {
  const bad = [];
  for (const th of document.querySelectorAll('th, [role=columnheader]')) {
    if (!th.offsetParent) continue;
    const walker = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
    let n;
    while ((n = walker.nextNode())) {
      const re = /\\S+/g; let m;
      while ((m = re.exec(n.textContent))) {
        const r = document.createRange(); r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
        const tops = new Set([...r.getClientRects()].filter(x => x.width > 0).map(x => Math.round(x.top)));
        if (tops.size > 1) bad.push(m[0]);
      }
    }
  }
  return bad;
}"""


def assert_headers_whole(page, where: str):
    headers = page.locator("th, [role=columnheader]").filter(visible=True)
    assert headers.count() > 0, f"{where}: no table header on screen"
    broken = page.evaluate(BROKEN_HEADER_WORDS_JS)
    assert not broken, f"{where}: table headers break mid-word: {broken}"


def run_colors(page, elem_id, run_id) -> set[str]:
    """The line colours of the legend entries that name `run_id` on a chart."""
    def names(text: str) -> bool:  # a legend label may be cut to fit: 'rloo-20261202-0058…'
        t = text.rstrip("…").strip()
        return len(t) >= 8 and (run_id.startswith(t) or t.startswith(run_id))

    return {c for text, c in chart_state(page, elem_id)["colors"] if names(text) and c}


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with running_app(tmp_path_factory.mktemp("charts-ui") / "ws") as a:
        yield a


def chart_state(page, elem_id, wait_s=60):
    """The chart's state once Plotly has drawn it (on a busy machine drawing nine charts takes a while)."""
    loc = page.locator(f"#{elem_id}")
    loc.scroll_into_view_if_needed()
    end = time.time() + wait_s
    while True:
        st = loc.evaluate(CHART_JS)
        if (st and st["lines"]) or time.time() > end:
            return st
        page.wait_for_timeout(500)


def check_chart(page, elem_id, expected: list[str]):
    """Each expected name: a legend label starting with it, inside the chart's box, and one line with >= 2 points."""
    st = chart_state(page, elem_id)
    assert st, f"{elem_id}: no chart drawn"
    l, t, r, b = st["chart"]
    assert r - l > 200 and b - t > 150, f"{elem_id}: chart has no size {st['chart']}"
    labels = {text: bx for text, bx in st["legend"]}
    for name in expected:
        hits = [(text, bx) for text, bx in labels.items() if text.startswith(name)]
        assert hits, f"{elem_id}: no legend label for {name!r}; legend: {list(labels)}"
        text, (x0, y0, x1, y1) = hits[0]
        assert x1 - x0 > 5 and l - 1 <= x0 and x1 <= r + 1 and t - 1 <= y0 and y1 <= b + 1, \
            f"{elem_id}: legend label {text!r} {hits[0][1]} lies outside the chart {st['chart']}"
    drawn = [d for d in st["lines"] if d.count("L") >= 1 and len(d) > 10]
    assert len(drawn) >= len([n for n in expected if not n.endswith(("(solid)", "(dashed)"))]), f"{elem_id}: {len(drawn)} drawn lines for {expected}: {st['lines']}"


def view(page, name: str, anchor: str):
    """What a user sees at 1400x1000 with `anchor` at the top of the window (the screenshots docs/ uses)."""
    page.locator(anchor).evaluate("el => el.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(800)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def choose_option(page, box, value, tries=10):
    """Pick `value` in a Gradio dropdown as a person would: type it, click its option; again if the
    dropdown was redrawn meanwhile (its choices follow the picked runs)."""
    for _ in range(tries):
        box.click()
        box.fill(value)
        option = page.get_by_role("option", name=value, exact=True)
        try:
            option.first.click(timeout=5000)
        except Exception:  # noqa: BLE001 — the list was redrawn under the pointer: type again
            page.keyboard.press("Escape")
            continue
        page.keyboard.press("Escape")
        if box.input_value() == value:
            return
    raise AssertionError(f"could not choose {value!r}; the box shows {box.input_value()!r}")


def wait_until(cond, timeout_s, what):
    end = time.time() + timeout_s
    while time.time() < end:
        if cond():
            return
        time.sleep(1)
    raise AssertionError(f"timed out waiting for {what}")


def rloo_expected(records, run_id="", earlier=None, earlier_id=""):
    """{chart elem_id: legend names} as the tab names them, for the charts that have lines."""
    out = {}
    for (plot_title, _), chart in zip(PLOTS, S.rloo_charts(records, run_id, earlier, earlier_id)):
        slug = "".join(c if c.isalnum() else "-" for c in plot_title.lower())
        slug = "-".join(p for p in slug.split("-") if p)
        lines = [ln for ln in chart.lines if len(ln.steps) >= 2]
        groups = list(dict.fromkeys(ln.group for ln in lines if ln.group))  # run headings of an overlay
        out["rloo-plot-" + slug] = [ln.name[:S.LEGEND_CHARS - 1] for ln in lines] + groups
    return out


def launch_rloo(page, ws, steps: int):
    fill(page, "rloo-num-generations", 2)
    fill(page, "rloo-per-device-train-batch-size", 4)
    fill(page, "rloo-max-completion-length", 48)
    fill(page, "rloo-max-steps", steps)
    before = {r["id"] for r in ws.runs("rloo")}
    page.locator("#rloo-launch").click()
    # the message of an earlier launch may still stand: wait for the new run itself
    wait_until(lambda: {r["id"] for r in ws.runs("rloo")} - before, 120, "the launched RLOO run")
    expect(page.locator("#rloo-check")).to_contain_text("Launched rloo-", timeout=LONG)


def test_every_chart_names_its_lines_in_a_visible_legend(app):
    ws = Workspace(app.ws_dir)
    with open_page(app.url) as page:
        # -- the reward model: train and held-out lines on all four charts
        page.get_by_role("tab", name="Reward model").click()
        expect(page.locator("#reward-preflight")).to_contain_text("237", timeout=60000)
        fill(page, "reward-max-steps", 24)
        page.locator("#reward-train").click()
        expect(page.locator("#reward-status")).to_contain_text("running", timeout=60000)
        wait_until(lambda: len([ln for ln in chart_state(page, "reward-plot-loss")["lines"] if "L" in ln]) >= 1,
                   600, "the reward loss line")
        screenshot(page, "charts-reward-running")
        view(page, "charts-reward-running-view", "#reward-status")
        expect(page.locator("#reward-status")).to_contain_text("completed", timeout=LONG)
        page.wait_for_timeout(2500)
        for t in ("loss", "accuracy", "margin", "mean-reward"):
            check_chart(page, f"reward-plot-{t}", ["training batches", "held-out pairs"])
        screenshot(page, "charts-reward-done")
        view(page, "charts-reward-done-view", "#reward-status")
        page.locator("#reward-runs").scroll_into_view_if_needed()
        assert_headers_whole(page, "Reward tab")

        # -- RLOO: a short run, then a shorter second one to overlay
        page.get_by_role("tab", name="RLOO").click()
        page.get_by_text("Checkpoints and before/after").click()
        fill(page, "rloo-eval-prompts", 0)
        launch_rloo(page, ws, 6)
        expect(page.locator("#rloo-status")).to_contain_text("running", timeout=LONG)
        wait_until(lambda: len(chart_state(page, "rloo-plot-reward")["lines"]) >= 2
                   and all("L" in d for d in chart_state(page, "rloo-plot-reward")["lines"]), 900, "two RLOO steps")
        screenshot(page, "charts-rloo-running")
        view(page, "charts-rloo-running-view", "#rloo-status")
        expect(page.locator("#rloo-status")).to_contain_text("completed", timeout=LONG)
        page.wait_for_timeout(3000)
        (first,) = ws.runs("rloo")
        recs = read_metrics(ws.run_dir(first["id"]))
        expected = rloo_expected(recs)
        assert sum(bool(v) for v in expected.values()) >= 7, expected  # loss, reward, KL, ... all have lines
        for elem_id, names in expected.items():
            if names:
                check_chart(page, elem_id, names)
        expect(page.locator("#rloo-plot-loss")).to_contain_text("Near zero by design: leave-one-out advantages")
        table = page.locator("#rloo-completions")
        expect(table).to_contain_text("advantage")
        groups = table.inner_text().count("· k=2")  # each row names its prompt's group ("3 · k=2")
        assert groups > 5, table.inner_text()[:2000]  # more than five completions shown
        table.scroll_into_view_if_needed()
        assert_headers_whole(page, "RLOO tab")
        screenshot(page, "charts-rloo-done")
        view(page, "charts-rloo-done-view", "#rloo-status")

        launch_rloo(page, ws, 3)
        second = [r for r in ws.runs("rloo") if r["id"] != first["id"]][0]
        expect(page.locator("#rloo-status")).to_contain_text(re.compile(second["id"] + ".*completed"), timeout=LONG)
        # the earlier run overlaid on the RLOO tab: each run named on every chart
        page.locator("#rloo-overlay input").click()
        page.get_by_role("option", name=first["id"]).click()
        page.wait_for_timeout(4000)
        both = rloo_expected(read_metrics(ws.run_dir(second["id"])), second["id"], recs, first["id"])
        for elem_id in ("rloo-plot-loss", "rloo-plot-reward", "rloo-plot-kl"):
            check_chart(page, elem_id, both[elem_id])
        screenshot(page, "charts-rloo-overlay")
        rloo_tab_colors = {rid: run_colors(page, "rloo-plot-kl", rid) for rid in (first["id"], second["id"])}
        assert all(rloo_tab_colors.values()) and not set.intersection(*rloo_tab_colors.values()), \
            (rloo_tab_colors, chart_state(page, "rloo-plot-kl")["colors"])
        view(page, "charts-rloo-overlay-view", "#rloo-status")

        # -- the Runs tab overlay of the two RLOO runs, each named, in its colour
        page.get_by_role("tab", name="Runs").click()
        pick = page.locator("#runs-pick input")
        for rid in (first["id"], second["id"]):
            pick.fill(rid)
            page.get_by_role("option", name=rid).click()
            expect(page.locator("#runs-pick")).to_contain_text(rid, timeout=60000)
        page.keyboard.press("Escape")
        metric = page.locator("#runs-metric input")
        expect(metric).to_have_value("loss", timeout=60000)  # the metric list came with the picked runs
        choose_option(page, metric, "reward")
        wait_until(lambda: len(chart_state(page, "runs-overlay")["legend"]) >= 2, 120, "both runs in the overlay")
        check_chart(page, "runs-overlay", [first["id"], second["id"]])
        for rid in (first["id"], second["id"]):  # a run has the colour it has on the RLOO tab
            drawn = run_colors(page, "runs-overlay", rid)
            assert drawn and drawn <= rloo_tab_colors[rid], (rid, drawn, rloo_tab_colors)
        assert_headers_whole(page, "Runs tab")
        screenshot(page, "charts-runs-overlay")
        view(page, "charts-runs-overlay-view", "#runs-pick")
