"""Reward model tab: the config form (presets), pre-flight, Train / Stop / Resume, live plots, runs.

Thin: every callback reads widgets, calls rloo_studio.reward.job / rloo_studio.reward.view,
and formats. The run being watched is the one clicked in the runs list, else the newest.
"""
from __future__ import annotations

import html
from functools import partial

import gradio as gr

from rloo_studio.reward import view as rv
from rloo_studio.runs import catalog as runs, lifecycle
from rloo_studio.core.errors import StudioError, explain
from rloo_studio.reward.config import PRESETS, RewardJobConfig, preset
from rloo_studio.reward.job import format_preflight, preflight
from rloo_studio.core.models import TRUST_WARNING
from rloo_studio.studio import Studio
from rloo_studio.reward.charts import PLOTS, REWARD_TITLES, reward_charts
from rloo_studio.ui import charts, launch_panel, messages, render
from rloo_studio.ui import fields as F

CSS = """
#reward-status {padding:.4em .8em; border-radius:6px; background:var(--block-background-fill)}
#reward-status .failed, #reward-notice .error {color:var(--error-text-color, #c00); font-weight:600}
#reward-status progress {width:14em; vertical-align:middle; margin:0 .6em}
#reward-plots .plot-caption, #reward-plots [data-testid="block-info"] {font-size:.85em}
"""

GROUPS = [  # (accordion, keys in it, open at start); a field named in none goes under "Other settings"
    ("Model", ("model", "load_in_4bit", "use_unsloth", "trust_remote_code", "enable_thinking"), True),
    ("LoRA", ("lora.r", "lora.alpha", "lora.dropout", "lora.target_modules", "modules_to_save"), False),
    ("Training", ("learning_rate", "num_train_epochs", "max_steps", "per_device_train_batch_size",
                  "gradient_accumulation_steps", "center_rewards_coefficient", "optim", "gradient_checkpointing"), True),
    ("Data", ("max_length", "over_length", "eval_fraction", "split_by_kind", "step_pairs", "eval_batch_size", "seed"),
     False),
    ("Logging and checkpoints", ("logging_steps", "eval_steps", "save_steps"), False),
]


def groups(fields: list) -> list[tuple[str, tuple, bool]]:
    """GROUPS plus an "Other settings" accordion for the config's fields that no group names."""
    named = {k for _, keys, _ in GROUPS for k in keys}
    rest = tuple(f.key for f in fields if f.key not in named)
    return GROUPS + ([("Other settings", rest, False)] if rest else [])


def _warn_trust(on: bool) -> None:
    if on:
        gr.Warning(TRUST_WARNING)


def _status_html(studio: Studio, rid: str | None) -> str:
    if not rid:
        return "<div>No reward-model run yet. Check the data, then press <b>Train</b>.</div>"
    st = studio.runner.status(rid)
    state = st.get("status", "?")
    p = st.get("progress") or {}
    bar = f"<progress value='{p['done']}' max='{p['total']}'></progress>" if p.get("total") else ""
    where = lifecycle.progress_text(st) or rv.last_step_text(studio.runner.feed(rid))
    cls = "failed" if state == "failed" else ""
    msg = "" if state == "failed" else html.escape(st.get("message") or "")  # a failure has its own box
    return (f"<div>Run <b>{html.escape(rid)}</b> · <span class='state {cls}'>{state}</span> {bar} "
            f"<span class='progress'>{where}</span></div>"
            + (f"<div class='message'>{msg}</div>" if msg else ""))


def _failure_html(studio: Studio, rid: str | None) -> str:
    """A failed run's message in plain words, its traceback folded below."""
    if not rid or studio.runner.status(rid).get("status") != "failed":
        return ""
    logged, tb = runs.failure(studio.ws, rid)
    return render.failure_html(studio.runner.status(rid).get("message") or logged, tb)


def _note(text: str, ok: bool = False) -> str:
    return render.message_html(text, ok)


# -- callbacks (wired with functools.partial(callback, studio)) -----------------------------------------

def on_preset(fields, name):
    return [F.widget_value(f, v) for f, v in zip(fields, rv.form_values(preset(name)))]


def on_check(studio: Studio, *values):
    try:
        return format_preflight(preflight(studio.ws, rv.config_from_form(list(values))))
    except Exception as exc:  # a bad field or a model that is not there: say so, change nothing
        return f"⚠ {html.escape(explain(exc))}"


def on_train(studio: Studio, *values):
    """Train, unless the pre-flight already knows the run would fail: then say why and create no run."""
    try:
        cfg = rv.config_from_form(list(values))
        rid = lifecycle.start(studio.ws, studio.runner, "reward", cfg)
    except Exception as exc:  # noqa: BLE001 — a bad field, a missing model, too few pairs, busy: a message
        return gr.skip(), _note(explain(exc))
    trust = _note(TRUST_WARNING) if cfg.trust_remote_code else ""
    return rid, f"<div>Started run <b>{rid}</b>.</div>" + trust


def on_stop(studio: Studio, rid):
    try:
        return f"<div>{html.escape(lifecycle.stop(studio.ws, studio.runner, rid or rv.latest_run(studio.ws)))}</div>"
    except StudioError as exc:
        return _note(str(exc))


def on_resume(studio: Studio, rid):
    try:  # the run's own config: the checkpoint was made with it
        rid = lifecycle.resume(studio.ws, studio.runner, "reward", rid or rv.latest_run(studio.ws) or "")
    except StudioError as exc:
        return gr.skip(), _note(str(exc))
    return rid, f"<div>Resuming run <b>{rid}</b> from its last checkpoint.</div>"


def on_select(evt: gr.SelectData):
    return (evt.row_value or [None])[0]


def on_tick(studio: Studio, n_plots: int, rid, last):
    ws = studio.ws
    if rid and ws.run(rid) is None:  # a run deleted in the Runs tab: follow the newest again
        rid = None
    rid = rid or rv.latest_run(ws)
    table = rv.runs_rows(ws)
    if not rid:
        return [_status_html(studio, None), "", *[gr.skip()] * n_plots, "", table, gr.skip(), gr.skip(), last]
    records = studio.runner.feed(rid)
    state = studio.runner.status(rid)
    sig = (rid, len(records), state.get("status"))
    fresh = last is None or last[0] != rid
    changed = sig != (tuple(last) if last else None)
    out_plots = _plots(records) if changed else [gr.skip()] * n_plots
    # the failure box is redrawn only when something changed, so a traceback the user unfolded stays open
    failure = _failure_html(studio, rid) if changed else gr.skip()
    cfg = runs.run_config(ws, rid)
    return [_status_html(studio, rid), failure, *out_plots, rv.log_tail(ws, rid), table,
            rv.config_yaml(cfg) if fresh else gr.skip(),
            rv.cli_command(cfg, str(ws.root)) if fresh else gr.skip(), list(sig)]


def _plots(records: list[dict]) -> list:
    return [charts.figure(c) for c in reward_charts(records)]


def _form(studio: Studio, fields: list) -> tuple:
    """The preset and the config form, one accordion per group: (preset dropdown, widgets by key)."""
    values = dict(zip([f.key for f in fields], rv.form_values(RewardJobConfig())))
    widgets: dict[str, gr.components.Component] = {}
    preset_dd = gr.Dropdown(list(PRESETS), value="demo (CPU)", label="Preset",
                            info="Fills the form; GPU presets follow the Qwen3 (Thinking) seed recipe.")
    by_key = {f.key: f for f in fields}
    for name, keys, is_open in groups(fields):
        with gr.Accordion(name, open=is_open):
            for key in keys:
                if key in by_key:
                    widgets[key] = F.widget(by_key[key], values[key], "reward", workspace_root=studio.ws.root)
    return preset_dd, widgets


def _run_panel(studio: Studio) -> tuple:
    """Pre-flight, the buttons, the run's status, failure, plots and log."""
    with gr.Group():
        gr.Markdown("### Pre-flight")
        preflight_md = gr.Markdown(elem_id="reward-preflight")
        check_btn = gr.Button("Check data", size="sm")
    with gr.Row():
        train_btn = gr.Button("Train", variant="primary", elem_id="reward-train")
        stop_btn = gr.Button("Stop", variant="stop", elem_id="reward-stop")
        resume_btn = gr.Button("Resume", elem_id="reward-resume")
    notice = gr.HTML(elem_id="reward-notice")  # what the buttons answer (the timer never overwrites it)
    status = gr.HTML(_status_html(studio, rv.latest_run(studio.ws)), elem_id="reward-status")
    failure = gr.HTML(elem_id="reward-failure")  # a failed run: its message, the traceback folded
    gr.HTML("<div class='legend'>Held-out pairs are measured at each evaluation; step 0 is the "
            "untrained model.</div>")
    plots = []
    with gr.Column(elem_id="reward-plots"):
        titles = list(PLOTS)
        for pair in (titles[:2], titles[2:]):
            with gr.Row(equal_height=True):
                plots += [charts.plot(REWARD_TITLES.get(t, t), f"reward-plot-{t.replace(' ', '-')}",
                                      height=270) for t in pair]
    log = gr.Textbox(label="Log (last lines)", lines=8, max_lines=8, interactive=False, elem_id="reward-log")
    return preflight_md, check_btn, (train_btn, stop_btn, resume_btn), notice, status, failure, plots, log


def _runs_list(studio: Studio) -> tuple:
    gr.Markdown("### Reward-model runs\nClick a run to see its plots, its config and the command that repeats it.")
    runs_table = gr.Dataframe(headers=rv.RUN_HEADERS, value=rv.runs_rows(studio.ws), interactive=False, wrap=True,
                              elem_id="reward-runs")
    with gr.Row():
        cfg_yaml = gr.Code(label="config.yaml", language="yaml", interactive=False)
        cli = gr.Code(label="The same run from the command line", language="shell", interactive=False)
    return runs_table, cfg_yaml, cli


def build(studio: Studio):
    fields = rv.form_fields()
    watched = gr.State(None)  # run id clicked in the runs list (None: follow the newest run)
    seen = gr.State(None)  # what the plots last showed, to skip redrawing unchanged data
    with gr.Row():
        with gr.Column(scale=1, min_width=320):
            preset_dd, widgets = _form(studio, fields)
        with gr.Column(scale=2):
            preflight_md, check_btn, (train_btn, stop_btn, resume_btn), notice, status, failure, plots, log = \
                _run_panel(studio)
    runs_table, cfg_yaml, cli = _runs_list(studio)

    inputs = [widgets[f.key] for f in fields]
    launch_btn, launch_out = launch_panel.build(studio, "reward", inputs, rv.config_from_form, "reward")
    check, tick = partial(on_check, studio), partial(on_tick, studio, len(plots))

    preset_dd.change(partial(on_preset, fields), preset_dd, inputs)
    check_btn.click(check, inputs, preflight_md)
    widgets["trust_remote_code"].input(_warn_trust, widgets["trust_remote_code"], None)
    for key in ("model", "max_length", "over_length", "eval_fraction", "trust_remote_code", "enable_thinking"):
        if key in widgets:
            widgets[key].change(check, inputs, preflight_md, show_progress="hidden")
    train_btn.click(partial(on_train, studio), inputs, [watched, notice])
    stop_btn.click(partial(on_stop, studio), watched, notice)
    resume_btn.click(partial(on_resume, studio), watched, [watched, notice])
    runs_table.select(on_select, None, watched)
    messages.clear_on([(preset_dd.input, []), (check_btn.click, []), (train_btn.click, [notice]),
                       (stop_btn.click, [notice]), (resume_btn.click, [notice]), (runs_table.select, []),
                       (launch_btn.click, [launch_out])], [notice, launch_out])
    tick_out = [status, failure, *plots, log, runs_table, cfg_yaml, cli, seen]
    gr.Timer(1.0).tick(tick, [watched, seen], tick_out, show_progress="hidden")

    def hooks(demo: gr.Blocks, tab: gr.Tab) -> None:
        # first paint: pre-flight of the default form and the newest run's plots (re-attaches to a live run)
        demo.load(check, inputs, preflight_md)
        demo.load(tick, [watched, seen], tick_out)
        tab.select(check, inputs, preflight_md)  # labels may have changed since
        # charts first drawn while the tab was hidden have no size: forget what was drawn, the next tick redraws
        tab.select(lambda: None, None, seen, queue=False, show_progress="hidden")

    return hooks
