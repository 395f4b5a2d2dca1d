"""Every training chart in Chromium at 1400x1000, as a reader sees it: a short reward job (checked mid-run
and after), two short RLOO jobs (mid-run, after, and the earlier one overlaid on every chart), the Runs tab
overlay of the two RLOO runs on two curves (a chart each). For each expected series: a legend label that reads
its whole name, lies inside its chart, and belongs to a trace that is drawn (a visible stroke, or a whole marker for a
single point) and not hidden under an equal line drawn over it; no mode bar over a chart's title. Tables:
more than five completions in view, grouped rows ordered by reward or advantage on request, no header
clipped or broken mid-word (Reward, Inspect dataset, Records, RLOO, Runs, the Label tab's annotators panel).
Screenshots (1400x1000, what a user sees) go to $CHART_SHOTS, else test-artifacts/; docs/charts/ keeps them."""
import math
import os
import re
import time
from pathlib import Path

import pytest
from browser import ARTIFACTS, fill, open_page, running_app
from playwright.sync_api import expect

from rloo_studio.core.workspace import Workspace
from rloo_studio.reward.charts import reward_charts
from rloo_studio.rloo.charts import PLOTS, rloo_charts
from rloo_studio.runs import chart_data, overlays
from rloo_studio.runs.runner import read_metrics

LONG = 900_000
SHOTS = Path(os.environ.get("CHART_SHOTS") or ARTIFACTS)

# One chart as drawn: its block and plot boxes, the plot area, the title, each trace (from Plotly's own
# data: name, visibility, points, width, hover) with what the page shows of it (the stroke of its line, its
# markers, its legend entry), the legend group headings, and any mode bar button on screen.
CHART_JS = """el => {
  const plot = el.querySelector('.js-plotly-plot');
  if (!plot || !plot._fullData) return null;
  const box = r => { const b = r.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
  const seen = n => { for (let e = n; e && e !== plot; e = e.parentElement) {
      const cs = getComputedStyle(e);
      if (cs.display === 'none' || cs.visibility === 'hidden' || parseFloat(cs.opacity) === 0) return false; }
    return true; };
  const drag = plot.querySelector('.nsewdrag'), title = plot.querySelector('.gtitle');
  const legend = {};
  const headings = [];
  for (const g of plot.querySelectorAll('g.legend g.traces')) {
    const d = g.__data__, t = d && d[0] && d[0].trace, text = g.querySelector('text.legendtext');
    if (!t || !text) continue;
    if (d[0].groupTitle || t._isLegendGroupTitle) { headings.push([text.textContent, box(text)]); continue; }
    legend[t.index] = [text.textContent, box(text), seen(g)];
  }
  for (const t of plot.querySelectorAll('g.legend text.legendtitletext')) headings.push([t.textContent, box(t)]);
  const drawn = {};
  for (const g of plot.querySelectorAll('g.scatterlayer g.trace')) {
    const d = g.__data__, t = d && d[0] && d[0].trace;
    if (!t) continue;
    const p = g.querySelector('path.js-line'), cs = p && getComputedStyle(p);
    drawn[t.index] = {
      d: p ? (p.getAttribute('d') || '') : '',
      stroke: cs ? [cs.stroke, parseFloat(cs.strokeOpacity), parseFloat(cs.strokeWidth), seen(p)] : null,
      points: [...g.querySelectorAll('path.point')].map(m => { const s = getComputedStyle(m);
        return [box(m), s.fill, parseFloat(s.fillOpacity) * parseFloat(s.opacity), seen(m)]; }),
    };
  }
  return {
    block: box(el), chart: box(plot), area: drag ? box(drag) : null,
    title: title ? [title.textContent, box(title)] : null,
    modebar: [...plot.querySelectorAll('.modebar-btn')].filter(b => b.offsetParent && seen(b)).map(box),
    headings,
    traces: plot._fullData.map(t => ({index: t.index, name: t.name, group: t.legendgroup || '', visible: t.visible,
      x: t.x, y: t.y,
      width: t.line.width, dash: t.line.dash, hover: t.hovertemplate || '',
      legend: legend[t.index] || null, drawn: drawn[t.index] || null})),
  };
}"""

# Every word of every visible table header: laid out on one line ("correctn / ess" reads as two words) and
# not cut by its cell (a narrow column that hides the end of its name).
HEADER_JS = """() => {
  const broken = [], clipped = [];
  for (const th of document.querySelectorAll('th, [role=columnheader]')) {
    if (!th.offsetParent) continue;
    const cell = th.getBoundingClientRect();
    if (cell.width === 0) continue;
    const walker = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
    let n;
    while ((n = walker.nextNode())) {
      const re = /\\S+/g; let m;
      while ((m = re.exec(n.textContent))) {
        const r = document.createRange(); r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
        const rects = [...r.getClientRects()].filter(x => x.width > 0);
        if (new Set(rects.map(x => Math.round(x.top))).size > 1) broken.push(m[0]);
        if (rects.some(x => x.left < cell.left - 0.5 || x.right > cell.right + 0.5)) clipped.push(m[0]);
      }
    }
    for (const e of [th, ...th.querySelectorAll('*')]) {  // a box that hides what overflows it: is anything hidden?
      if (getComputedStyle(e).overflowX !== 'visible' && e.scrollWidth > e.clientWidth + 1 && e.textContent.trim())
        { clipped.push(th.textContent.trim()); break; }
    }
  }
  return {broken, clipped};
}"""

# The completions table: its column headers with their boxes, the scrolling viewport's box, and each
# rendered row with its box and cell texts.
TABLE_JS = """el => {
  const box = r => { const b = r.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
  const vp = el.querySelector('.virtual-table-viewport') || el.querySelector('.table-wrap') || el;
  return {
    viewport: box(vp), window: [0, 0, window.innerWidth, window.innerHeight],
    headers: [...el.querySelectorAll('thead th')].map(th => [th.innerText.trim(), box(th)]),
    rows: [...el.querySelectorAll('.virtual-body [role=row], tbody tr')]
      .filter(r => r.innerText.trim())
      .map(r => [box(r), [...r.querySelectorAll('td, [role=gridcell]')].map(c => c.innerText.trim())]),
  };
}"""


def assert_headers_whole(page, where: str):
    headers = page.locator("th, [role=columnheader]").filter(visible=True)
    assert headers.count() > 0, f"{where}: no table header on screen"
    bad = page.evaluate(HEADER_JS)
    assert not bad["broken"], f"{where}: table headers break mid-word: {bad['broken']}"
    assert not bad["clipped"], f"{where}: table headers cut by their column: {bad['clipped']}"


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
        if (st and st["traces"] and all(t["drawn"] for t in st["traces"])) or time.time() > end:
            return st
        page.wait_for_timeout(500)


def inside(inner, outer, slack=1.0) -> bool:
    return (outer[0] - slack <= inner[0] and inner[2] <= outer[2] + slack and outer[1] - slack <= inner[1]
            and inner[3] <= outer[3] + slack)


def reads_whole(label: str, name: str) -> bool:
    """The legend label is the whole name, then its latest value ('name · 0.75', 'name = 0 (constant)')."""
    return label == name or label.startswith(name + " · ") or (label.startswith(name + " = ")
                                                             and label.endswith("(constant)"))


def is_drawn(tr, area) -> str:
    """'' if the trace shows on the plot: a line through two or more points with a visible stroke, or a
    single point whose marker lies whole inside the plot area and is big enough to see; else why not."""
    d = tr["drawn"]
    if not d:
        return "no trace on the plot"
    if len(tr["x"]) >= 2:
        if d["d"].count("L") < 1:
            return f"no line path ({d['d'][:40]!r})"
        stroke, opacity, width, seen = d["stroke"]
        if stroke in ("none", "", "transparent", "rgba(0, 0, 0, 0)") or not opacity or not width or not seen:
            return f"its stroke is hidden: {d['stroke']}"
        return ""
    marks = [p for p in d["points"] if p[3] and p[2] and p[1] not in ("none", "rgba(0, 0, 0, 0)")]
    if not marks:
        return f"its single point has no visible marker: {d['points']}"
    (x0, y0, x1, y1) = marks[0][0]
    if x1 - x0 < 8 or y1 - y0 < 8:
        return f"its single point is a speck ({x1 - x0:.1f}x{y1 - y0:.1f} px)"
    if not inside(marks[0][0], area):
        return f"its single point {marks[0][0]} is cut by the plot's edge {area}"
    return ""


def hides(high, low) -> bool:
    """high, drawn over low, covers part of it: a segment (two neighbouring points) of low is a segment of
    high with the same values, or every step they share has the same value."""
    same = lambda x, y: math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12)  # noqa: E731
    hv, hi = dict(zip(high["x"], high["y"])), {s: i for i, s in enumerate(high["x"])}
    lv = dict(zip(low["x"], low["y"]))
    shared = [s for s in low["x"] if s in hv]
    if shared and all(same(lv[s], hv[s]) for s in shared):
        return True
    return any(s in hi and t in hi and hi[t] == hi[s] + 1 and same(lv[s], hv[s]) and same(lv[t], hv[t])
               for s, t in zip(low["x"], low["x"][1:]))


def check_chart(page, elem_id, expected: list, headings: list[str] = ()):
    """Each expected series (a name, or (name, run heading) where two runs share a chart): one trace,
    visible, whose legend label reads its whole name inside the chart (the hover names it too) and which is
    drawn; no line hidden under an equal one drawn over it; each run heading in the legend; no mode bar
    button over the title."""
    page.locator(f"#{elem_id}").hover()  # a mode bar, if any, shows on hover
    page.wait_for_timeout(300)
    st = chart_state(page, elem_id)
    assert st and st["area"], f"{elem_id}: no chart drawn"
    left, top, right, bottom = st["chart"]
    assert right - left > 200 and bottom - top > 150, f"{elem_id}: chart has no size {st['chart']}"
    frame = [max(st["chart"][0], st["block"][0]), max(st["chart"][1], st["block"][1]),
             min(st["chart"][2], st["block"][2]), min(st["chart"][3], st["block"][3])]
    labels = [tr["legend"][0] for tr in st["traces"] if tr["legend"]]
    for want in expected:
        name, group = want if isinstance(want, tuple) else (want, "")
        hits = [tr for tr in st["traces"]
                if tr["legend"] and reads_whole(tr["legend"][0], name) and tr["group"] == group]
        assert len(hits) == 1, f"{elem_id}: {len(hits)} legend labels read {want!r} whole; legend: {labels}"
        tr = hits[0]
        text, bx, shown = tr["legend"]
        assert tr["visible"] is True and shown, f"{elem_id}: {name!r} is switched off ({tr['visible']})"
        assert bx[2] - bx[0] > 5 and inside(bx, frame), \
            f"{elem_id}: legend label {text!r} {bx} is cut by the chart {frame}"
        assert f"<b>{name}</b>" in tr["hover"] or name in tr["hover"], f"{elem_id}: the hover does not name {name!r}"
        why = is_drawn(tr, st["area"])
        assert not why, f"{elem_id}: {name!r} is not drawn: {why}"
    for name in headings:
        hit = [bx for text, bx in st["headings"] if text == name]
        assert hit and inside(hit[0], frame), f"{elem_id}: no legend heading {name!r} in the chart: {st['headings']}"
    traces = st["traces"]
    for i, low in enumerate(traces):  # a line with an equal one drawn over it must show on both sides of it
        for high in traces[i + 1:]:
            if hides(high, low):
                assert low["width"] > high["width"], (f"{elem_id}: {low['name']!r} lies hidden under "
                                                      f"{high['name']!r} (same values, width {low['width']} "
                                                      f"<= {high['width']})")
    if st["title"]:
        title_box = st["title"][1]
        over = [m for m in st["modebar"] if not (m[2] < title_box[0] or m[0] > title_box[2]
                                                  or m[3] < title_box[1] or m[1] > title_box[3])]
        assert not over, f"{elem_id}: the mode bar covers the title {st['title']}"


def view(page, name: str, anchor: str):
    """What a user sees at 1400x1000 with `anchor` at the top of the window (the screenshots docs/ uses)."""
    page.locator(anchor).evaluate("el => el.scrollIntoView({block: 'start'})")
    page.mouse.move(5, 995)  # no hover label or highlight in the picture
    page.wait_for_timeout(800)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


def wait_until(cond, timeout_s, what):
    end = time.time() + timeout_s
    while time.time() < end:
        if cond():
            return
        time.sleep(1)
    raise AssertionError(f"timed out waiting for {what}")


def slug(plot_title: str) -> str:
    s = "".join(c if c.isalnum() else "-" for c in plot_title.lower())
    return "-".join(p for p in s.split("-") if p)


def expected_lines(chart) -> tuple[list[str], list[str]]:
    """(line names, run headings) of a chart_data.Chart: what its legend must read."""
    names = [(ln.name, ln.group) for ln in chart.lines if ln.steps]
    assert all(len(n) <= chart_data.LEGEND_CHARS for n, _ in names), names  # every name fits whole: none is shortened
    return names, list(dict.fromkeys(ln.group for ln in chart.lines if ln.group))


def rloo_expected(records, run_id="", earlier=None, earlier_id=""):
    """{chart elem_id: (legend names, run headings)} as the tab names them."""
    return {"rloo-plot-" + slug(plot_title): expected_lines(chart)
            for (plot_title, _), chart in zip(PLOTS, rloo_charts(records, run_id, earlier, earlier_id))}


def check_rloo_tab(page, expected, min_charts=7):
    assert sum(bool(names) for names, _ in expected.values()) >= min_charts, expected
    for elem_id, (names, headings) in expected.items():
        if names:
            check_chart(page, elem_id, names, headings)


def check_reward_tab(page, records):
    for t, chart in zip(("loss", "accuracy", "margin", "mean-reward"), reward_charts(records)):
        names, _ = expected_lines(chart)
        assert names, f"reward-plot-{t}: no line in the run's metrics"
        check_chart(page, f"reward-plot-{t}", names)


def completions(page):
    return page.locator("#rloo-completions").evaluate(TABLE_JS)


def check_completions_table(page):
    """More than five completions in view at once, every column header inside the table's view."""
    page.locator("#rloo-order").evaluate("el => el.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(800)
    tb = completions(page)
    vp, win = tb["viewport"], tb["window"]
    frame = [max(vp[0], win[0]), max(vp[1], win[1]), min(vp[2], win[2]), min(vp[3], win[3])]
    in_view = [cells for bx, cells in tb["rows"] if inside(bx, frame)]
    assert len(in_view) > 5, f"{len(in_view)} completions in view: {[c[:3] for c in in_view]} (viewport {vp})"
    cut = [h for h, bx in tb["headers"] if not inside(bx, [frame[0], bx[1], frame[2], bx[3]])]
    assert not cut, f"completions table: columns out of view at 1400 px: {cut}"


def check_order(page, order: str, column: str):
    """Pick the order in the radio; within each prompt's group (all its rows shown) `column` is highest first."""
    page.get_by_label(order, exact=True).check()

    def ordered():
        tb = completions(page)
        col = [h for h, _ in tb["headers"]].index(column)
        groups: dict[str, list[float]] = {}
        for _, cells in tb["rows"]:
            if len(cells) > col and cells[col] not in ("", "None"):
                groups.setdefault(cells[0], []).append(float(cells[col]))
        whole = {g: v for g, v in groups.items() if len(v) == int(g.split("k=")[1])}
        return whole and all(v == sorted(v, reverse=True) for v in whole.values()), groups

    end = time.time() + 60
    while not ordered()[0] and time.time() < end:  # the table is redrawn by the next tick
        page.wait_for_timeout(500)
    ok, groups = ordered()
    assert ok, f"ordered by {order!r}, the groups' {column} values: {groups}"
    assert any(len(set(v)) > 1 for v in groups.values()), f"no group with different {column} values: {groups}"


def launch_rloo(page, ws, steps: int):
    fill(page, "rloo-num-generations", 2)
    fill(page, "rloo-per-device-train-batch-size", 4)
    fill(page, "rloo-max-completion-length", 48)
    fill(page, "rloo-max-steps", steps)
    before = {r["id"] for r in ws.runs("rloo")}
    page.locator("#rloo-launch").click()
    # the message of an earlier launch may still stand: wait for the new run itself
    wait_until(lambda: {r["id"] for r in ws.runs("rloo")} - before, 120, "the launched RLOO run")
    expect(page.locator("#rloo-check")).to_contain_text("Started run rloo-", timeout=LONG)
    return next(r["id"] for r in ws.runs("rloo") if r["id"] not in before)


def add_curve(page, name: str):
    """Add a curve to the Runs tab's overlay as a person does: type the end of its name into the Curves box key by
    key (the box filters its list on each key), click it."""
    box = page.locator("#runs-metric input")
    for _ in range(5):
        box.click()
        box.press_sequentially(name.split(" › ")[-1], delay=20)
        try:
            page.get_by_role("option", name=name, exact=True).click(timeout=5_000)
            break
        except Exception:  # noqa: BLE001 — the list was redrawn under the pointer: type again
            box.fill("")
            page.keyboard.press("Escape")
    page.keyboard.press("Escape")
    expect(page.locator("#runs-metric")).to_contain_text(name, timeout=60_000)


def legend_texts(page, elem_id) -> list[str]:
    st = chart_state(page, elem_id, wait_s=0)
    return [tr["legend"][0] for tr in st["traces"] if tr["legend"]] if st else []


def drawn_color(page, elem_id, run_id) -> set[str]:
    """The line colour of the trace whose legend label names `run_id` on a one-metric chart."""
    colors = page.locator(f"#{elem_id}").evaluate(
        """el => [...el.querySelectorAll('g.legend g.traces')].map(g => {
          const line = g.querySelector('path.js-line');
          return [(g.querySelector('text.legendtext') || {}).textContent || '', (line && line.style.stroke) || ''];
        })""")
    return {c for text, c in colors if reads_whole(text, run_id) and c}


def reward_mid_run(page, ws):
    """The Reward tab while the job runs: its charts as they are, the single held-out point included."""
    rid = ws.runs("reward")[0]["id"]
    wait_until(lambda: {"training batches", "held-out pairs"} <= {t.split(" ·")[0].split(" =")[0]
                                                                 for t in legend_texts(page, "reward-plot-loss")},
               600, "the reward loss chart with its training and held-out lines")
    view(page, "charts-reward-running", "#reward-status")  # first: the job may end while the charts are checked
    check_reward_tab(page, read_metrics(ws.run_dir(rid)))


def other_tables(page):
    """Inspect's dataset view, the Records tab: no header broken or cut."""
    page.get_by_role("tab", name="Inspect").click()
    page.get_by_role("tab", name="Dataset").click()
    page.locator("#inspect-dataset").click()
    expect(page.locator("[data-testid=accuracy]")).to_have_text(re.compile(r"\d+\.\d%"), timeout=300_000)
    expect(page.locator("#inspect-disagreements").get_by_role("gridcell").first).to_be_visible(timeout=60_000)
    page.locator("#inspect-disagreements").scroll_into_view_if_needed()
    assert_headers_whole(page, "Inspect dataset view")
    page.get_by_role("tab", name="Records").click()
    expect(page.locator("#records-table").get_by_role("gridcell").first).to_be_visible(timeout=60_000)
    assert_headers_whole(page, "Records tab")


def annotators_panel(page):
    """The Label tab's annotators panel, once a person has labeled a pair: its table's headers whole."""
    page.get_by_role("tab", name="Label").click()
    expect(page.locator("#lbl-status")).to_contain_text("Enter your name", timeout=30000)
    name = page.get_by_placeholder("annotator name")  # the Records tab has a "Your name" box too
    name.fill("chart reader")
    name.press("Enter")
    expect(page.locator("#lbl-status")).to_contain_text("pair #", timeout=30000)
    page.locator("#lbl-progress").click()
    page.keyboard.press("1")
    page.get_by_role("button", name=re.compile("^Annotators and agreement")).click()
    expect(page.locator("#lbl-annotators tr", has_text="chart reader")).to_be_visible(timeout=30000)
    assert_headers_whole(page, "Label tab, annotators panel")


def test_every_chart_names_its_lines_in_a_visible_legend(app):
    ws = Workspace(app.ws_dir)
    with open_page(app.url) as page:
        # -- the reward model: train and held-out lines on all four charts, mid-run and after
        page.get_by_role("tab", name="Reward model").click()
        expect(page.locator("#reward-preflight")).to_contain_text("237", timeout=60000)
        fill(page, "reward-max-steps", 24)
        page.locator("#reward-launch").click()
        expect(page.locator("#reward-status")).to_contain_text("running", timeout=60000)
        reward_mid_run(page, ws)
        expect(page.locator("#reward-status")).to_contain_text("completed", timeout=LONG)
        page.wait_for_timeout(2500)
        check_reward_tab(page, read_metrics(ws.run_dir(ws.runs("reward")[0]["id"])))
        view(page, "charts-reward-done", "#reward-status")
        page.locator("#reward-runs").scroll_into_view_if_needed()
        assert_headers_whole(page, "Reward tab")
        other_tables(page)

        # -- RLOO: a short run (checked mid-run and after), then a shorter second one to overlay
        page.get_by_role("tab", name="RLOO").click()
        fill(page, "rloo-eval-prompts", 0)
        first = launch_rloo(page, ws, 30)  # long enough to be seen running on a quiet machine (~0.4 s a step)
        expect(page.locator("#rloo-status")).to_contain_text("running", timeout=LONG)
        wait_until(lambda: all(t["drawn"] and len(t["x"]) >= 2
                               for t in (chart_state(page, "rloo-plot-reward", 0)
                                         or {"traces": [{"drawn": 0}]})["traces"]),
                   900, "two RLOO steps on the reward chart")
        view(page, "charts-rloo-running", "#rloo-status")
        check_rloo_tab(page, rloo_expected(read_metrics(ws.run_dir(first))))
        expect(page.locator("#rloo-status")).to_contain_text("completed", timeout=LONG)
        page.wait_for_timeout(3000)
        recs = read_metrics(ws.run_dir(first))
        check_rloo_tab(page, rloo_expected(recs))
        expect(page.locator("#rloo-plot-loss")).to_contain_text("Near zero by design: leave-one-out advantages")
        view(page, "charts-rloo-done", "#rloo-status")
        # the completions: a prompt's group together, more than five in view, ordered on request
        expect(page.locator("#rloo-completions")).to_contain_text("advantage")
        check_completions_table(page)
        page.locator("#rloo-completions").scroll_into_view_if_needed()
        assert_headers_whole(page, "RLOO tab")
        check_order(page, "reward (best first)", "total")
        check_order(page, "advantage (best first)", "advantage")
        view(page, "charts-rloo-completions", "#rloo-order")

        second = launch_rloo(page, ws, 3)
        expect(page.locator("#rloo-status")).to_contain_text(re.compile(second + ".*completed"), timeout=LONG)
        # the earlier run overlaid on the RLOO tab: each run named on every chart
        page.locator("#rloo-overlay input").click()
        page.get_by_role("option", name=first).click()
        page.wait_for_timeout(4000)
        check_rloo_tab(page, rloo_expected(read_metrics(ws.run_dir(second)), second, recs, first))
        rloo_tab_colors = {rid: drawn_color(page, "rloo-plot-kl", rid) for rid in (first, second)}
        assert all(rloo_tab_colors.values()) and not set.intersection(*rloo_tab_colors.values()), rloo_tab_colors
        view(page, "charts-rloo-overlay", "#rloo-status")

        # -- the Runs tab overlay of the two RLOO runs on two metrics, each run named, in its colour
        page.get_by_role("tab", name="Runs").click()
        pick = page.locator("#runs-pick input")
        for rid in (first, second):
            pick.fill(rid)
            page.get_by_role("option", name=rid).click()
            expect(page.locator("#runs-pick")).to_contain_text(rid, timeout=60000)
        page.keyboard.press("Escape")
        names = {c.key: c.name for c in overlays.curves(overlays.load(ws, [first, second]))}  # as the picker says
        # the reward curve came with the picked runs (an RLOO run's headline curve); KL is added as a person adds it
        expect(page.locator("#runs-metric")).to_contain_text(names["reward"], timeout=60000)
        add_curve(page, names["kl"])
        for elem_id, key in (("runs-overlay", "reward"), ("runs-overlay-2", "kl")):
            wait_until(lambda: len(legend_texts(page, elem_id)) == 2
                       and chart_state(page, elem_id, 0)["title"][0] == names[key], 120,
                       f"both runs in the {key} overlay")
            check_chart(page, elem_id, [first, second])
            for rid in (first, second):  # a run has the colour it has on the RLOO tab
                drawn = drawn_color(page, elem_id, rid)
                assert drawn and drawn <= rloo_tab_colors[rid], (rid, drawn, rloo_tab_colors)
            if key == "reward":
                view(page, "charts-runs-overlay", "#runs-table")
        assert_headers_whole(page, "Runs tab")

        annotators_panel(page)  # last: labeling a pair changes what the reward job would train on
