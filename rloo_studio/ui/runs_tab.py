"""Runs tab: every run (reward, RLOO, generate, export) with status and key figures; overlay curves; delete;
launch files; export an RLOO run's policy for serving (a job: runs.export_model.export_job)."""
from __future__ import annotations

import html
from functools import partial

import gradio as gr

from rloo_studio.rloo.tokens import FILE as TOKENS_FILE
from rloo_studio.runs import catalog, chart_data, jobs, run_warnings
from rloo_studio.runs.runner import step_files
from rloo_studio.core.errors import StudioError
from rloo_studio.runs.accelerate_launch import launch_files, launch_text
from rloo_studio.runs.export_model import ExportConfig, app_out, default_out, export_job, run_adapter
from rloo_studio.studio import Studio
from rloo_studio.ui import charts, launch_panel, messages, render, run_panel, token_view

HEADERS = ["run", "kind", "status", "started", "duration (s)", "key figures", "message"]
WIDTHS = ["17%", "7%", "9%", "11%", "10%", "25%", "21%"]  # every column on a 1400 px page; long text wraps
EVERY_S = 2.0  # the table's refresh while a run is active (run_panel.IDLE_S otherwise)


def _table(ws) -> list[list]:
    return [[s["id"], s["kind"], s["status"], s["started"], s["duration_s"], s["figures"], _message(s)]
            for s in catalog.summaries(ws)]


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
    return _table(ws), gr.update(choices=ids, value=[s for s in (selected or []) if s in ids])


def follow(ws, listed):
    """The timer's refresh: the table, the run list's choices only when runs came or went, and the timer's
    next period (run_panel.pace).

    It never sets the picked runs: a tick that read the picks just before the user added one would
    otherwise write the older picks back over the user's choice."""
    ids = [r["id"] for r in ws.runs()]
    pace = run_panel.pace(ws, None, EVERY_S)
    if ids == listed:
        return _table(ws), gr.skip(), listed, pace
    return _table(ws), gr.update(choices=ids), ids, pace


def _details(ws, rid: str) -> str:
    """A run's folder, and for a failed run its message first and the traceback folded."""
    out = f"<div>Run folder: <code>{html.escape(str(ws.run_dir(rid)))}</code></div>"
    r = ws.run(rid)
    if r and r["status"] == "failed":
        logged, tb = catalog.failure(ws, rid)
        out += f"<div><b>{html.escape(rid)} failed:</b></div>" + render.failure_html(r["message"] or logged, tb)
    return out


def choose(ws, selected, current):
    selected = _known(ws, selected)
    keys = catalog.numeric_keys(ws, selected)
    value = current if current in keys else ("loss" if "loss" in keys else (keys[0] if keys else None))
    return gr.update(choices=keys, value=value), "".join(_details(ws, r) for r in selected)


def draw(ws, selected, metric, weight=0.0, log=False):
    """The overlay chart: the metric's line for each selected run, named by the run, in the run's colour."""
    runs = [(rid, catalog.read_metrics(ws.run_dir(rid))) for rid in _known(ws, selected)] if metric else []
    chart = chart_data.overlay_chart(runs, metric or "", float(weight or 0), bool(log))
    if not metric:
        chart.title, chart.note = "Overlay", "pick runs and a metric"
    return charts.figure(chart, height=360)


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
                             placeholder=f"empty: {studio.ws.exports_dir}/<run>-merged; a bare name goes under exports/")
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


def build(studio: Studio):
    ws = studio.ws
    table = gr.Dataframe(headers=HEADERS, value=_table(ws), interactive=False, wrap=True, column_widths=WIDTHS,
                         elem_id="runs-table", elem_classes=run_panel.live("runs", note=True))  # shown once current
    with gr.Row():
        pick = gr.Dropdown([r["id"] for r in ws.runs()], multiselect=True, label="Runs to compare", scale=3,
                           elem_id="runs-pick")
        metric = gr.Dropdown([], label="Metric", scale=1, elem_id="runs-metric")
        smooth = gr.Slider(0, 0.95, value=0.0, step=0.05, label="Smoothing", scale=1, elem_id="runs-smoothing")
        log_scale = gr.Checkbox(label="Log scale", value=False, scale=1, elem_id="runs-log")
    plot = charts.plot("Overlay of the selected runs", "runs-overlay", height=360)
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
    timer.tick(partial(follow, ws), listed, [table, pick, listed, timer], show_progress="hidden")
    draw_in = [pick, metric, smooth, log_scale]
    # The user's picks (input, not change): the timer's refresh of the run list must not re-run them
    # every 2 s, which kept a loading cover over the Metric box.
    quiet = dict(show_progress="hidden")
    pick.input(partial(choose, ws), [pick, metric], [metric, details], **quiet).then(
        partial(draw, ws), draw_in, plot, **quiet)
    pick.input(partial(first_rloo, ws), pick, token_run, **quiet)
    for w in (metric, smooth, log_scale):  # changed by the user, or by choose(): never by the timer
        w.change(partial(draw, ws), draw_in, plot, **quiet)
    delete.click(partial(remove, ws), [pick, confirm], msg).then(partial(refresh, ws), pick, [table, pick]).then(
        lambda: False, None, confirm).then(partial(choose, ws), [pick, metric], [metric, details]).then(
        partial(draw, ws), draw_in, plot).then(partial(first_rloo, ws), pick, token_run)
    messages.clear_on([(pick.input, []), (delete.click, [msg]), (b_launch.click, [launch_out]),
                       (b_export.click, [export_msg])], [msg, launch_out])

    def hooks(demo: gr.Blocks, tab: gr.Tab) -> None:
        # first, the table as it is now, then shown (not the rows of when the page was built or the tab last left)
        tab.select(partial(follow, ws), listed, [table, pick, listed, timer], show_progress="hidden").then(
            None, js=run_panel.shown_js("runs"))
        tab.select(partial(draw, ws), draw_in, plot)  # a chart drawn while the tab was hidden gets its size

    return hooks
