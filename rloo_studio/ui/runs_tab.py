"""Runs tab: every run (reward, RLOO, generate, export) with status, its result (runs.headline) and the runs it is
linked to (runs.links); a click on a row picks its run; the picked runs' curves, one chart per kind and metric
(runs.overlays); delete; launch files; export an RLOO run's policy for serving (a job: runs.export_model.export_job)."""
from __future__ import annotations

import html
from functools import partial

import gradio as gr
import pandas as pd

from rloo_studio.core.errors import StudioError
from rloo_studio.rloo.tokens import FILE as TOKENS_FILE
from rloo_studio.runs import catalog, headline, jobs, links, overlays, run_warnings
from rloo_studio.runs.accelerate_launch import launch_files, launch_text
from rloo_studio.runs.export_model import ExportConfig, app_out, default_out, export_job, run_adapter
from rloo_studio.runs.runner import step_files
from rloo_studio.studio import Studio
from rloo_studio.ui import charts, launch_panel, messages, render, run_panel, token_view

HEADERS = ["run", "kind", "status", "started", "duration (s)", "result", "linked runs", "message"]
WIDTHS = ["17%", "7%", "8%", "9%", "10%", "17%", "15%", "17%"]  # every column on a 1400 px page; long text wraps
EVERY_S = 2.0  # the table's refresh while a run is active (run_panel.IDLE_S otherwise)
CHART_H = 360
# A click on a row picks its run. Gradio still outlines the clicked cell of a read-only table, lifts it over its row
# and gives it row / column handles, which read as a cell editor: all of that is switched off here, and the picked
# runs' rows are shaded instead (`_table`, PICKED).
CSS = """
#runs-table .body-cell {cursor: pointer}
#runs-table .body-cell.cell-selected {box-shadow: none !important}
#runs-table .body-cell.cell-solo .cell-wrap > span {position: static !important; box-shadow: none !important;
    min-height: 0 !important; background: transparent !important; padding: 0 !important; cursor: pointer}
#runs-table .selection-button {display: none !important}
"""
PICKED = "background-color: #dbeafe"  # a picked run's row (blue-100: the text keeps its contrast)


def _table(ws, picked=()):
    """The runs table, the rows of the picked runs shaded (a pandas Styler: Gradio draws its cell styles)."""
    linked = links.run_links(ws)
    known = set(linked)
    rows = [[s["id"], jobs.title(s["kind"]), s["status"], s["started"], s["duration_s"], headline.headline(ws, s),
             links.links_text(linked.get(s["id"], links.RunLinks()), known), _message(s)]
            for s in catalog.summaries(ws)]
    picked = set(picked or ())
    return pd.DataFrame(rows, columns=HEADERS).style.apply(
        lambda row: [PICKED if row["run"] in picked else ""] * len(row), axis=1)


def _message(summary: dict) -> str:
    """The run's message, then the warnings it kept (the RLOO job records them with the steps they were seen)."""
    kept = [f"⚠ {w['text']} (seen at {run_warnings.seen(w)})" for w in summary["warnings"]]
    return "\n".join([summary["message"] or "", *kept]).strip()


def _known(ws, selected) -> list[str]:
    """The selected ids that still name runs (one deleted meanwhile, or anything typed, is left out)."""
    ids = {r["id"] for r in ws.runs()}
    return [s for s in (selected or []) if s in ids]


# -- callbacks (wired with functools.partial(callback, ws)) ---------------------------------------------

def refresh(ws, selected):
    ids = [r["id"] for r in ws.runs()]
    kept = [s for s in (selected or []) if s in ids]
    return _table(ws, kept), gr.update(choices=ids, value=kept)


def shade(ws, selected):
    """The table with the picked runs' rows shaded, after a pick."""
    return _table(ws, _known(ws, selected))


def follow(ws, listed, selected=()):
    """The timer's refresh: the table, the run list's choices only when runs came or went, and the timer's
    next period (run_panel.pace).

    It never sets the picked runs: a tick that read the picks just before the user added one would
    otherwise write the older picks back over the user's choice. It reads them to shade their rows (a
    shading one tick old is put right by the pick's own redraw, `shade`)."""
    ids = [r["id"] for r in ws.runs()]
    pace = run_panel.pace(ws, None, EVERY_S)
    table = _table(ws, _known(ws, selected))
    if ids == listed:
        return table, gr.skip(), listed, pace
    return table, gr.update(choices=ids), ids, pace


def _details(ws, rid: str) -> str:
    """A run's folder, and for a failed run its message first and the traceback folded."""
    out = f"<div>Run folder: <code>{html.escape(str(ws.run_dir(rid)))}</code></div>"
    r = ws.run(rid)
    if r and r["status"] == "failed":
        logged, tb = catalog.failure(ws, rid)
        out += f"<div><b>{html.escape(rid)} failed:</b></div>" + render.failure_html(r["message"] or logged, tb)
    return out


def choose(ws, selected, current):
    """The curves the picked runs can show (their kinds' own charts, in their words) and the picks kept or made,
    and the picked runs' details."""
    runs = overlays.load(ws, _known(ws, selected))
    available = overlays.curves(runs)
    current = current if isinstance(current, list) else [current] if current else []
    picks = overlays.picks(available, current)
    details = "".join(_details(ws, rid) for rid, _, _ in runs)
    bare = overlays.without_curves(runs)
    if bare:
        details += f"<div>Nothing to chart yet for {html.escape(', '.join(bare))}.</div>"
    return gr.update(choices=[(c.name, c.value) for c in available], value=picks), details


def pick_row(ws, selected, evt: gr.SelectData):
    """A click on a row of the runs table: its run joins the runs to compare, or leaves them if it was picked."""
    rid = (evt.row_value or [None])[0]
    picked = _known(ws, selected)
    if rid is None or ws.run(str(rid)) is None:
        return gr.skip()
    return gr.update(value=[r for r in picked if r != rid] if rid in picked else [*picked, rid])


def draw(ws, selected, chosen, weight=0.0, log=False):
    """(what to do next, in words, or ''; then each chart place): one chart per picked curve, a line per picked run
    of its kind; the unused places hidden, and all of them while there is nothing to draw (no empty axes)."""
    runs = overlays.load(ws, _known(ws, selected))
    drawn = overlays.charts(runs, chosen if isinstance(chosen, list) else [chosen] if chosen else [],
                            float(weight or 0), bool(log))
    shown = [gr.update(value=charts.figure(c, height=CHART_H), visible=True) for c in drawn]
    hint = "" if drawn else ("Pick the curves to draw." if runs else
                             "Click rows of the table (or pick runs above) to draw their curves.")
    return [hint, *shown, *[gr.update(visible=False)] * (overlays.MAX_CHARTS - len(shown))]


def remove(ws, selected, sure):
    if not selected:
        return "Select a run first."
    if not sure:
        return "Tick the box to confirm: deleting removes the run's folder, checkpoints and adapter."
    done, errors = [], []
    for rid in selected:
        try:
            catalog.find_run(ws, rid)
            catalog.delete_run(ws, rid)
            done.append(rid)
        except StudioError as e:
            errors.append(str(e))
        except (KeyError, ValueError) as e:
            errors.append(str(e.args[0] if e.args else e))
    return " ".join([f"Deleted {', '.join(done)}." if done else ""] + errors).strip()


def export_launch(ws, selected, strategy, gpus, machines):
    if not selected:
        return "Select a reward or RLOO run first."
    try:
        r = catalog.find_run(ws, selected[0])
        if r["kind"] not in {k.name for k in jobs.trainable()}:
            kinds = " and ".join(k.title for k in jobs.trainable())
            return f"**{html.escape(r['id'])} is a {r['kind']} run; launch files are for {kinds} runs.**"
        gpus, machines = launch_panel.counts(gpus, machines)
        path, cmd = launch_files(r["kind"], ws.root, ws.run_dir(r["id"]) / "config.yaml", strategy, gpus, machines)
    except (StudioError, ValueError, TypeError) as e:
        return f"**{html.escape(str(e))}**"
    return launch_text(path, cmd)


# -- export for serving: a job on the runner, polled while this page is open -------------------------------

def _plain(text: str) -> str:
    return f"**{html.escape(text, quote=False)}**"


def start_export(studio: Studio, selected, out, merged):
    """(export run id, message): queue the export of the first selected run, or say in plain words why not."""
    ws = studio.ws
    if not selected:
        return "", _plain("Select an RLOO run first (Runs to compare, above): its trained policy is exported.")
    try:
        rid, _, cfg = run_adapter(ws, selected[0])
        dest = app_out(ws, out) if str(out or "").strip() else default_out(ws, rid, bool(merged))
    except (StudioError, ValueError, TypeError) as e:
        return "", _plain(str(e))
    busy = (studio.runner.current or "the queued runs") if studio.runner.busy() else None
    job = studio.runner.submit("export", ExportConfig(run=rid, out=str(dest), merged=bool(merged)), export_job)
    what = "base + adapter merged" if merged else "the adapter alone"
    if merged and cfg.get("load_in_4bit"):
        what += " (the run trained on a 4-bit copy of its base: the adapter goes into the full-precision base)"
    head = f"Export {html.escape(job)}: {what} of {html.escape(rid)} to <code>{html.escape(str(dest))}</code>"
    return job, (f"{head}, queued behind {html.escape(busy)}: it starts when that run ends." if busy
                 else f"{head}: started.")


def poll_export(studio: Studio, job):
    """(message, timer): the export's stage while it runs, then the folder written (or why it failed)."""
    if not job:
        return gr.skip(), gr.Timer(active=False)
    st = studio.runner.status(job)
    state, pr = st.get("status"), st.get("progress") or {}
    if state == "queued":
        return f"Export {html.escape(job)} queued: it starts when the running job ends.", gr.Timer(active=True)
    if state == "running":
        return (f"Export {html.escape(job)} running: {html.escape(pr.get('what') or 'starting')}…",
                gr.Timer(active=True))
    if state == "completed":
        return f"✅ {html.escape(st.get('message') or '')}", gr.Timer(active=False)
    return _plain(f"Export {job} {state}: {st.get('message') or ''}"), gr.Timer(active=False)


def export_section(studio: Studio, pick):
    """The 'Export model' accordion, wired to the run list `pick`."""
    with gr.Accordion("Export model: the first selected RLOO run's policy, for serving", open=False):
        gr.Markdown("**Merged**: base + adapter in one standard safetensors folder with the tokenizer and its chat "
                    "template (`AutoModelForCausalLM.from_pretrained(folder)` loads it, no PEFT). A run trained on a "
                    "4-bit base is merged into the full-precision base. Unticked: the adapter alone.")
        with gr.Row(equal_height=True):
            out = gr.Textbox(label="Folder (a new or empty one)", scale=3, max_lines=1, elem_id="runs-export-out",
                             placeholder=f"empty: {studio.ws.exports_dir}/<run>-merged; "
                                         "a bare name goes under exports/")
            merged = gr.Checkbox(True, label="Merged (base + adapter)", scale=1, elem_id="runs-export-merged")
            go = gr.Button("Export model", variant="primary", scale=1, elem_id="runs-export-go")
        msg = gr.Markdown(elem_id="runs-export-msg")
    job, timer = gr.State(""), gr.Timer(1.0, active=False)
    go.click(partial(start_export, studio), [pick, out, merged], [job, msg]).then(
        lambda j: gr.Timer(active=bool(j)), job, timer)
    timer.tick(partial(poll_export, studio), job, [msg, timer], show_progress="hidden")
    return go, msg


def first_rloo(ws, selected) -> str:
    """The first selected run of a kind that records a token view ('' if none is): the one the token view draws."""
    kinds = {r["id"]: r["kind"] for r in ws.runs()}
    return next((r for r in _known(ws, selected) if TOKENS_FILE in step_files(kinds[r])), "")


def _overlay_section(ids: list[str]):
    """The run and curve pickers, smoothing, log scale, a line that says what to pick, and MAX_CHARTS chart places."""
    with gr.Row(equal_height=True):
        pick = gr.Dropdown(ids, multiselect=True, label="Runs to compare", scale=2, elem_id="runs-pick",
                           info="click a row of the table to add its run, click it again to take it out")
        metric = gr.Dropdown([], multiselect=True, max_choices=overlays.MAX_CHARTS, scale=3, elem_id="runs-metric",
                             label="Curves (one chart each, a kind's runs together)")
        with gr.Column(scale=1, min_width=240):
            smooth = gr.Slider(0, 0.95, value=0.0, step=0.05, label="Smoothing", elem_id="runs-smoothing")
            log_scale = gr.Checkbox(label="Log scale", value=False, elem_id="runs-log")
    hint = gr.Markdown("Click rows of the table (or pick runs above) to draw their curves.",
                       elem_id="runs-overlay-note")
    plots = []
    for i in range(overlays.MAX_CHARTS):  # the page's width each: a title names the kind, the chart and the line
        plots.append(charts.plot("Overlay of the selected runs", "runs-overlay" + (f"-{i + 1}" if i else ""),
                                 height=CHART_H))
        plots[-1].visible = False  # shown when as many curves are picked
    return pick, metric, smooth, log_scale, [hint, *plots]


def build(studio: Studio):
    ws = studio.ws
    table = gr.Dataframe(headers=HEADERS, value=_table(ws), interactive=False, wrap=True, column_widths=WIDTHS,
                         elem_id="runs-table", elem_classes=run_panel.live("runs", note=True))  # shown once current
    pick, metric, smooth, log_scale, overlay = _overlay_section([r["id"] for r in ws.runs()])
    details = gr.HTML(elem_id="runs-details")
    with gr.Row():
        confirm = gr.Checkbox(label="Yes, delete the selected run(s) and their files", value=False)
        delete = gr.Button("Delete", variant="stop", elem_id="runs-delete")
    msg = gr.Markdown(elem_id="runs-msg")
    strategy, gpus, machines, b_launch, launch_out = launch_panel.controls(
        "runs", "Write launch files for the first selected run")
    b_export, export_msg = export_section(studio, pick)
    token_run = gr.State("")  # the first selected RLOO run
    token_view.build(studio, token_run, prefix="runs", latest=False,
                     title="Token view: what a step of the first selected RLOO run taught, token by token")

    b_launch.click(partial(export_launch, ws), [pick, strategy, gpus, machines], launch_out)
    listed = gr.State([r["id"] for r in ws.runs()])
    timer = gr.Timer(EVERY_S)
    timer.tick(partial(follow, ws), [listed, pick], [table, pick, listed, timer], show_progress="hidden")
    draw_in = [pick, metric, smooth, log_scale]
    # The user's picks (input and the table's select, not change): the timer's refresh of the run list must not
    # re-run them every 2 s, which kept a loading cover over the Curves box.
    quiet = dict(show_progress="hidden")
    picked = dict(fn=partial(choose, ws), inputs=[pick, metric], outputs=[metric, details], **quiet)
    drawn = dict(fn=partial(draw, ws), inputs=draw_in, outputs=overlay, **quiet)
    token = dict(fn=partial(first_rloo, ws), inputs=pick, outputs=token_run, **quiet)
    shaded = dict(fn=partial(shade, ws), inputs=pick, outputs=table, **quiet)
    pick.input(**picked).then(**drawn)
    pick.input(**token)
    pick.input(**shaded)

    def on_row(selected, evt: gr.SelectData):  # Gradio finds the event's data by this annotation, not through a partial
        return pick_row(ws, selected, evt)

    table.select(on_row, pick, pick, **quiet).then(**shaded).then(**picked).then(**drawn).then(**token)
    for w in (metric, smooth, log_scale):  # changed by the user, or by choose(): never by the timer
        w.change(**drawn)
    delete.click(partial(remove, ws), [pick, confirm], msg).then(partial(refresh, ws), pick, [table, pick]).then(
        lambda: False, None, confirm).then(**{**picked, "show_progress": "full"}).then(
        **{**drawn, "show_progress": "full"}).then(**{**token, "show_progress": "full"})
    messages.clear_on([(pick.input, []), (table.select, []), (delete.click, [msg]), (b_launch.click, [launch_out]),
                       (b_export.click, [export_msg])], [msg, launch_out])

    def hooks(demo: gr.Blocks, tab: gr.Tab) -> None:
        # first, the table as it is now, then shown (not the rows of when the page was built or the tab last left)
        tab.select(partial(follow, ws), [listed, pick], [table, pick, listed, timer], show_progress="hidden").then(
            None, js=run_panel.shown_js("runs"))
        tab.select(**{**drawn, "show_progress": "full"})  # a chart drawn while the tab was hidden gets its size

    return hooks
