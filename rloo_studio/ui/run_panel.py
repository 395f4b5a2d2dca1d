"""The run panel of the Reward model and RLOO tabs: which run is shown, its status line, its failure box, its
live charts, and the timer that follows it (slower while no run is active: `pace`).

A part is sent to the page only when what it shows changed (`changed`, remembered per page in `memo`): a
chart keeps its hover and zoom, a traceback the user unfolded stays open. Charts are drawn again whenever the
tab is selected, because a Plotly chart drawn in a hidden tab has no size. A run's records come from
runs.tail, which reads metrics.jsonl / samples.jsonl from where the last read stopped.

A tab's live parts (status, charts, tables: `live(key)`) are never shown stale. Leaving a tab marks them stale
(ui/app.py runs LEAVE_JS on every tab's selection); they stay hidden, their space kept, until the tick that
the tab's selection starts has drawn them from the current state (`shown_js`). Hidden tabs do not poll.
"""
from __future__ import annotations

import html
import re
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Callable

import gradio as gr

from rloo_studio.core.errors import StudioError
from rloo_studio.runs import catalog, jobs, lifecycle, tail
from rloo_studio.runs.chart_data import Chart
from rloo_studio.runs.runner import ACTIVE
from rloo_studio.studio import Studio
from rloo_studio.ui import charts, inputs, render

# Said in place of a stale part's first line (the status line, the runs table) while its fresh tick is queued:
# under load that can take seconds, and a blank space reads as "nothing here".
UPDATING = ("content:'Updating to the current state\\2026'; visibility:visible; font-style:italic; "
            "color:var(--body-text-color-subdued)")
CSS = """
.run-status {padding:.4em .8em; border-radius:6px; background:var(--block-background-fill)}
.block.run-status, .run-status .html-container {padding:0 !important}
.run-status .failed, .run-status .bad {color:var(--error-text-color, #c00); font-weight:600}
.run-status progress {width:8em; vertical-align:middle; margin:0 .5em}
"""


def css() -> str:
    """CSS plus, for each job kind's run panel (runs.jobs.KINDS) and the Runs tab, its live parts hidden until
    fresh."""
    return CSS + "".join(f"body:not(.fresh-{k}) .live-{k} {{visibility:hidden}}\n"
                         f"body:not(.fresh-{k}) .block.live-{k}.live-note::before {{{UPDATING}}}\n"
                         for k in [*jobs.KINDS, "runs"])


# On every tab's selection, in the browser (no server round trip), first of the tab's select events: every
# tab's live parts are stale, so the tab left is hidden when it comes back until its fresh tick has drawn it.
LEAVE_JS = "() => { for (const c of [...document.body.classList]) if (c.startsWith('fresh-')) " \
           "document.body.classList.remove(c); }"


def live(key: str, note: bool = False) -> list[str]:
    """elem_classes of a part that shows a run's state: hidden after its tab is left until drawn afresh; a
    `note` part says "Updating…" meanwhile (one per tab: the first thing the eye reads; on its outer block, as
    Gradio puts elem_classes on an HTML component's inner div too)."""
    return [f"live-{key}"] + (["live-note"] if note else [])


def shown_js(key: str) -> str:
    """After the tick started by a tab's selection: show the tab's live parts, once the page has drawn what
    the tick sent (two frames), unless the tab was left meanwhile (a live part in a hidden tab has no box)."""
    return ("async () => { await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r))); "
            f"if ([...document.querySelectorAll('.live-{key}')].some(e => e.offsetParent)) "
            f"document.body.classList.add('fresh-{key}'); }}")


# A tab's timer period while no run is active. Every Gradio event costs the page about 0.15 CPU-s whatever it
# sends (bench/bench_idle_page.py): a page left open on the Reward tab, ticking every second, took a sixth of a
# core with nothing running. A run started or resumed from the tab redraws it at once (its own event).
IDLE_S = 5.0
# While a run is active its charts (and the tables that follow its steps) are drawn again at most every CHARTS_S; the
# status line follows each tick (every 1-2 s, as the tab asks). A page following an RLOO run costs per 10 s, in
# Chromium and in the app (bench/bench_idle_page.py --run, 2026-12-07): 2.2 and 0.9 CPU-s so; 1.0 and 0.4 with 4 s
# ticks and charts every 12 s. Either way a run the page follows took about 1.4-1.6x as long as the same run from the
# CLI, and 1.0-1.1x in the app with no page open (bench/bench_watching.py, docs/BENCHMARKS.md): on 2 cores that a
# run's two compute threads fill, other load slows it by more than its share, and the slower page did not buy back
# training time beyond the host's spread, so the status line keeps its pace. A run that ends, or a change of what is
# shown, is drawn at once.
CHARTS_S = 6.0


def pace(ws, kind: str | None, every: float) -> gr.Timer:
    """A tab timer's next period, sent with each of its ticks: `every` while a run of `kind` (None: any) is
    active, IDLE_S otherwise (a run started by another process, the CLI, shows within that)."""
    return gr.Timer(every if lifecycle.any_active(ws, kind) else max(every, IDLE_S))


def paced(tick: Callable, timer: gr.Timer, ws, kind: str, every: float, form, fresh: bool = False) -> dict:
    """`tick`'s redraw and `timer`'s next period (`pace`)."""
    return {**tick(form, fresh=fresh), timer: pace(ws, kind, every)}


def slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")  # 'step time (s)' -> 'step-time-s'


def changed(memo: dict, part: str, key) -> bool:
    """Whether `part` would now show something other than it shows (its key differs); remembers the key."""
    if part in memo and memo[part] == key:
        return False
    memo[part] = key
    return True


def due(memo: dict, part: str, view, version, active: bool) -> bool:
    """Like `changed`, for a part that follows a run's records (`version`) in a given `view` (the run, how it is
    shown): at once when the view changed or the run is not active, else at most every CHARTS_S seconds. What a page
    following a run redraws at each step takes the run's own cores (bench/bench_watching.py)."""
    key = [view, version]
    if memo.get(part) == key:
        return False
    same_view = (memo.get(part) or [None])[0] == view
    if same_view and active and time.monotonic() - memo.get(f"{part}_at", 0.0) < CHARTS_S:
        return False
    memo[part], memo[f"{part}_at"] = key, time.monotonic()
    return True


def remembered(memo: dict | None, fresh: bool = False) -> dict:
    """A tick's copy of what the page shows. Fresh (the tab was just selected): everything but the failure
    box is sent again, charts and tables first drawn while the tab was hidden included."""
    memo = dict(memo or {})
    return {k: v for k, v in memo.items() if k == "failure"} if fresh else memo


def last_step(records: list[dict]) -> str:
    steps = [r["step"] for r in records if isinstance(r.get("step"), int)]
    return f"step {max(steps)}" if steps else ""


def status_html(rid: str, st: dict, records: list[dict], figures: str = "", extra: str = "",
                message: Callable[[str], str] = str) -> str:
    """'Run <id> · <state> <bar> <whole-run progress> · <figures>', then on one line the run's message (as `message`
    words it) and `extra` (HTML, inline). The bar, while the run is active, and the step never go below the furthest
    the run showed (a resume redoes steps)."""
    state = st.get("status", "?")
    failed = state == "failed"
    p, reached = st.get("progress") or {}, st.get("reached") or {}
    total, done = p.get("total"), max(p.get("done") or 0, reached.get("done") or 0)
    bar = f"<progress value='{done}' max='{total}'></progress>" if total and not failed else "·"
    where = " · ".join(x for x in (lifecycle.progress_text(st) or last_step(records), figures) if x)
    msg = "" if failed else html.escape(message(st.get("message") or ""))  # a failure has its own box
    said = " · ".join(x for x in (msg, extra) if x)
    return (f"<div>Run <b>{html.escape(rid)}</b> · <span class='state{' failed' if failed else ''}'>{state}</span> "
            f"{bar} <span class='progress'>{html.escape(where)}</span></div>"
            + (f"<div class='message'>{said}</div>" if said else ""))


@dataclass
class RunPanel:
    studio: Studio
    kind: str  # a job kind's name (runs.jobs.KINDS): the runs it shows, and the prefix of its elem_ids
    empty: str  # the status line before the kind's first run (HTML)
    status: gr.HTML
    failure: gr.HTML  # a failed run: its message, the traceback folded
    memo: gr.State  # what each part of the page shows now (see `changed`)
    shown: gr.State  # the run shown (None: none), set when it changes: what follows the run listens to its change
    plots: list[gr.Plot] = field(default_factory=list)
    heights: list[int] = field(default_factory=list)  # each chart's height, empty or drawn
    controls: tuple = ()  # (Stop, Resume): pressable only when the run shown can be stopped / resumed

    @classmethod
    def build(cls, studio: Studio, kind: str, empty: str) -> RunPanel:
        """The status line and the failure box, here; the charts go where the tab calls add_charts."""
        status = gr.HTML(elem_id=f"{kind}-status", elem_classes=["run-status", *live(kind, note=True)])
        return cls(studio, kind, empty, status,
                   gr.HTML(elem_id=f"{kind}-failure", elem_classes=["run-failure", *live(kind)]), gr.State({}),
                   gr.State(None))

    def add_charts(self, titles: list[tuple[str, str]], per_row: int, height: int = charts.HEIGHT) -> None:
        """One chart per (key, title in words), `per_row` to a row, `height` pixels tall (more when many lines
        need it); elem_id '<kind>-plot-<key as a slug>'."""
        for i in range(0, len(titles), per_row):
            with gr.Row(equal_height=True, elem_classes=live(self.kind)):
                self.plots += [charts.plot(title, f"{self.kind}-plot-{slug(key)}", height)
                               for key, title in titles[i:i + per_row]]
        self.heights += [height] * len(titles)

    def add_controls(self, stop: gr.Button, resume: gr.Button) -> None:
        """Stop and Resume follow the run shown: greyed out when there is nothing to stop or resume (before
        `follow`, which sends them)."""
        self.controls = (stop, resume)

    def _controls(self, memo: dict, rid: str | None, status: str | None) -> dict:
        # both buttons answer from the run's status, read after `status`
        if not self.controls or not changed(memo, "controls", [rid, status]):
            return {}
        ws, runner = self.studio.ws, self.studio.runner
        ok = (lifecycle.can_stop(runner, rid), lifecycle.can_resume(ws, runner, self.kind, rid))
        return {button: gr.update(interactive=on) for button, on in zip(self.controls, ok)}

    def find(self, typed) -> tuple[str | None, str | None]:
        """(run id, None) for the run typed or picked, else the kind's active or newest run; (None, why) for a
        typed id that names no run of this kind."""
        try:
            return lifecycle.follow(self.studio.ws, self.kind, typed), None
        except StudioError as exc:
            return None, str(exc)

    def records(self, rid: str) -> tuple[list[dict], int]:
        """(metric records, version) of a run, read from where the last read of its metrics.jsonl stopped."""
        return tail.records(self.studio.ws.run_dir(rid))

    def nothing(self, memo: dict, status: str | None = None) -> dict:
        """No run to show: the empty status line (or `status`), no failure."""
        memo.pop("failure", None)
        return {self.status: status or f"<div>{self.empty}</div>", self.failure: "", **self._controls(memo, None, None),
                **self._shown(memo, None)}

    def _shown(self, memo: dict, rid: str | None) -> dict:
        return {self.shown: rid} if changed(memo, "shown", rid) else {}

    def show(self, memo: dict, rid: str, records: list[dict], figures: str = "", extra: str = "",
             message: Callable[[str], str] = str) -> dict:
        """The status line of run `rid`, and its failure box when the run or its state changed."""
        st = self.studio.runner.status(rid)
        out = {self.status: status_html(rid, st, records, figures, extra, message),
               **self._controls(memo, rid, st.get("status")), **self._shown(memo, rid)}
        if changed(memo, "failure", [rid, st.get("status")]):
            out[self.failure] = ""
            if st.get("status") == "failed":
                logged, tb = catalog.failure(self.studio.ws, rid)
                out[self.failure] = render.failure_html(st.get("message") or logged, tb)
        return out

    def charts(self, memo: dict, view, version, draw: Callable[[], list[Chart]], rid: str | None = None) -> dict:
        """The charts drawn by `draw`, only when what they show changed: at once when `view` (the run and how it is
        drawn) changed, and as run `rid` grows (its records' `version`) at most every CHARTS_S seconds while it
        is active."""
        active = bool(rid) and self.studio.runner.status(rid).get("status") in ACTIVE
        if not due(memo, "charts", list(view), version, active):
            return {}
        return dict(zip(self.plots, (charts.figure(c, h) for c, h in zip(draw(), self.heights))))

    def follow(self, tick: Callable, every: float, form: type, widgets: dict, outputs: list,
               also: tuple = (), after: tuple = ()) -> Callable:
        """Wire `tick(form, fresh=False) -> {component: value}`, `form` a dataclass of the `widgets` and `memo`
        (ui/inputs.py): on a timer (every `every` seconds while a run is active, IDLE_S otherwise; only while
        the tab is open: ui/app.py), when a widget of `also` changes, after each event of `after` (a Resume,
        which keeps the run shown), and fresh when the tab is selected: the tab's live parts are shown once that
        tick has drawn them (`shown_js`). Returns hooks(demo, tab) for the tab's select event."""
        timer = gr.Timer(every)
        tick = partial(paced, tick, timer, self.studio.ws, self.kind, every)
        outputs = [self.status, self.failure, *self.plots, self.memo, self.shown, *self.controls, *outputs, timer]
        wire = dict(**inputs.bind(tick, form, **widgets, memo=self.memo), outputs=outputs, show_progress="hidden")
        timer.tick(**wire)
        for widget in also:
            widget.change(**wire)
        for event in after:
            event.then(**wire)

        def hooks(demo: gr.Blocks, tab: gr.Tab) -> None:
            tab.select(**inputs.bind(partial(tick, fresh=True), form, **widgets, memo=self.memo), outputs=outputs,
                       show_progress="hidden").then(None, js=shown_js(self.kind))

        return hooks
