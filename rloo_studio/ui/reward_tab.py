"""Reward model tab: the config form (presets), pre-flight, Train / Stop / Resume, live plots, runs.

Thin: every callback reads widgets, calls rloo_studio.reward.job / launch_form / runs_list,
and formats. The run being watched is the one clicked in the runs list, else the newest.
"""
from __future__ import annotations

import html
from dataclasses import dataclass
from functools import partial

import gradio as gr

from rloo_studio.reward import launch_form, runs_list
from rloo_studio.runs import catalog, lifecycle
from rloo_studio.runs.runner import ACTIVE
from rloo_studio.core.errors import StudioError, explain
from rloo_studio.reward.config import PRESETS, RewardJobConfig, preset
from rloo_studio.reward.job import PREFLIGHT_SAMPLE, format_preflight, preflight
from rloo_studio.core.model_options import TRUST_WARNING
from rloo_studio.studio import Studio
from rloo_studio.reward.charts import PLOTS, REWARD_TITLES, reward_charts
from rloo_studio.ui import launch_panel, messages, render, run_panel
from rloo_studio.ui.run_panel import RunPanel
from rloo_studio.ui.fields import widget, widget_value

CSS = """
#reward-notice .error {color:var(--error-text-color, #c00); font-weight:600}
#reward-plots .plot-caption, #reward-plots [data-testid="block-info"] {font-size:.85em}
"""

# runs_list.RUN_HEADERS on a 1400 px page: each column at least as wide as its header; long text wraps
RUN_WIDTHS = ["15%", "8%", "18%", "13%", "25%", "8%", "13%"]
EMPTY = "No reward-model run yet. Check the data, then press <b>Train</b>."

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


def _note(text: str, ok: bool = False) -> str:
    return render.message_html(text, ok)


# -- callbacks (wired with functools.partial(callback, studio)) -----------------------------------------

def on_preset(fields, name):
    return [widget_value(f, v) for f, v in zip(fields, launch_form.form_values(preset(name)))]


def on_check(studio: Studio, *values):
    try:
        cfg = launch_form.config_from_form(list(values))
        return format_preflight(preflight(studio.ws, cfg, sample=PREFLIGHT_SAMPLE))
    except Exception as exc:  # a bad field or a model that is not there: say so, change nothing
        return f"⚠ {html.escape(explain(exc))}"


def on_train(studio: Studio, *values):
    """Train, unless the pre-flight already knows the run would fail: then say why and create no run."""
    try:
        cfg = launch_form.config_from_form(list(values))
        rid = lifecycle.start(studio.ws, studio.runner, "reward", cfg)
    except Exception as exc:  # noqa: BLE001 — a bad field, a missing model, too few pairs, busy: a message
        return gr.skip(), _note(explain(exc))
    trust = _note(TRUST_WARNING) if cfg.trust_remote_code else ""
    return rid, f"<div>Started run <b>{rid}</b>.</div>" + trust


def on_stop(studio: Studio, rid):
    try:
        rid = lifecycle.follow(studio.ws, "reward", rid)
        return f"<div>{html.escape(lifecycle.stop(studio.ws, studio.runner, rid))}</div>"
    except StudioError as exc:
        return _note(str(exc))


def on_resume(studio: Studio, rid):
    try:  # the run's own config: the checkpoint was made with it
        rid = lifecycle.resume(studio.ws, studio.runner, "reward", lifecycle.follow(studio.ws, "reward", rid) or "")
    except StudioError as exc:
        return gr.skip(), _note(str(exc))
    return rid, f"<div>Resuming run <b>{rid}</b> from its last checkpoint.</div>"


def on_select(evt: gr.SelectData):
    return (evt.row_value or [None])[0]


@dataclass
class Live:
    """The parts of the tab the timer keeps up to date: the run panel, the log, the runs list, the run's config."""
    panel: RunPanel
    log: gr.Textbox
    runs: gr.Dataframe
    config: gr.Code
    cli: gr.Code


@dataclass(frozen=True)
class Shown:
    """What the tick reads: the run clicked in the runs list, and what the page shows (run_panel.memo)."""
    watched: str | None = None
    memo: dict | None = None


def on_tick(live: Live, shown: Shown, fresh: bool = False) -> dict:
    """The run clicked in the runs list (a run deleted since: the newest again), else the active or newest."""
    panel, ws = live.panel, live.panel.studio.ws
    memo = run_panel.remembered(shown.memo, fresh)
    rid = panel.find(shown.watched)[0] or panel.find(None)[0]
    out = {panel.memo: memo, **_runs_rows(live, memo)}
    if not rid:
        return {**out, **panel.nothing(memo), live.log: ""}
    records, version = panel.records(rid)
    out |= panel.show(memo, rid, records)
    out |= panel.charts(memo, [rid, version], lambda: reward_charts(records))
    log = ws.run_dir(rid) / "log.txt"
    if run_panel.changed(memo, "log", [rid, *_size(log)]):
        out[live.log] = runs_list.log_tail(ws, rid)
    if run_panel.changed(memo, "config", rid):
        cfg = catalog.run_config(ws, rid)
        out |= {live.config: launch_form.config_yaml(cfg), live.cli: launch_form.cli_command(cfg, str(ws.root))}
    return out


def _runs_rows(live: Live, memo: dict) -> dict:
    """The runs list, worked out again only when a run was added, deleted or changed state, or the running
    one logged; sent only when its rows changed."""
    ws = live.panel.studio.ws
    listed = ws.runs("reward")
    key = [(r["id"], r["status"], r["started"], r["ended"], r["message"],
            live.panel.records(r["id"])[1] if r["status"] in ACTIVE else None) for r in listed]
    if not run_panel.changed(memo, "runs", key):
        return {}
    rows = runs_list.runs_rows(ws)
    return {live.runs: rows} if run_panel.changed(memo, "rows", rows) else {}


def _size(path) -> tuple:
    try:
        st = path.stat()
        return st.st_size, st.st_mtime_ns
    except OSError:
        return ()


def _form(studio: Studio, fields: list) -> tuple:
    """The preset and the config form, one accordion per group: (preset dropdown, widgets by key)."""
    values = dict(zip([f.key for f in fields], launch_form.form_values(RewardJobConfig())))
    widgets: dict[str, gr.components.Component] = {}
    preset_dd = gr.Dropdown(list(PRESETS), value="demo (CPU)", label="Preset",
                            info="Fills the form; GPU presets follow the Qwen3 (Thinking) seed recipe.")
    by_key = {f.key: f for f in fields}
    for name, keys, is_open in groups(fields):
        with gr.Accordion(name, open=is_open):
            for key in keys:
                if key in by_key:
                    widgets[key] = widget(by_key[key], values[key], "reward", workspace_root=studio.ws.root)
    return preset_dd, widgets


def _run_panel(studio: Studio) -> tuple:
    """Pre-flight, the buttons, the run panel (status, failure, charts) and the log."""
    with gr.Group():
        gr.Markdown("### Pre-flight")
        preflight_md = gr.Markdown(elem_id="reward-preflight")
    with gr.Row():  # as on the RLOO tab: check, then start / stop / resume
        check_btn = gr.Button("Check data", elem_id="reward-check")
        train_btn = gr.Button("Train", variant="primary", elem_id="reward-train")
        stop_btn = gr.Button("Stop", variant="stop", elem_id="reward-stop", interactive=False)
        resume_btn = gr.Button("Resume", elem_id="reward-resume", interactive=False)  # the run panel enables them
    notice = gr.HTML(elem_id="reward-notice")  # what the buttons answer (the timer never overwrites it)
    panel = RunPanel.build(studio, "reward", EMPTY)
    gr.HTML("<div class='legend'>Held-out pairs are measured at each evaluation; step 0 is the "
            "untrained model.</div>")
    with gr.Column(elem_id="reward-plots"):
        panel.add_charts([(t, REWARD_TITLES.get(t, t)) for t in PLOTS], per_row=2, height=270)
    log = gr.Textbox(label="Log (last lines)", lines=8, max_lines=8, interactive=False, elem_id="reward-log",
                     elem_classes=run_panel.live("reward"))
    return preflight_md, check_btn, (train_btn, stop_btn, resume_btn), notice, panel, log


def _runs_list(studio: Studio) -> tuple:
    gr.Markdown("### Reward-model runs\nClick a run to see its plots, its config and the command that repeats it.")
    runs_table = gr.Dataframe(headers=runs_list.RUN_HEADERS, interactive=False, wrap=True, elem_id="reward-runs",
                              column_widths=RUN_WIDTHS, elem_classes=run_panel.live("reward"))
    with gr.Row():
        cfg_yaml = gr.Code(label="config.yaml", language="yaml", interactive=False)
        cli = gr.Code(label="The same run from the command line", language="shell", interactive=False)
    return runs_table, cfg_yaml, cli


def build(studio: Studio):
    fields = launch_form.form_fields()
    watched = gr.State(None)  # run id clicked in the runs list (None: follow the newest run)
    with gr.Row():
        with gr.Column(scale=1, min_width=320):
            preset_dd, widgets = _form(studio, fields)
        with gr.Column(scale=2):
            preflight_md, check_btn, (train_btn, stop_btn, resume_btn), notice, panel, log = _run_panel(studio)
    runs_table, cfg_yaml, cli = _runs_list(studio)

    inputs = [widgets[f.key] for f in fields]
    launch_btn, launch_out = launch_panel.build(studio, "reward", inputs, launch_form.config_from_form, "reward")
    check = partial(on_check, studio)

    preset_dd.change(partial(on_preset, fields), preset_dd, inputs)
    check_btn.click(check, inputs, preflight_md)
    widgets["trust_remote_code"].input(_warn_trust, widgets["trust_remote_code"], None)
    for key in ("model", "max_length", "over_length", "eval_fraction", "trust_remote_code", "enable_thinking"):
        if key in widgets:
            widgets[key].change(check, inputs, preflight_md, show_progress="hidden")
    train_btn.click(partial(on_train, studio), inputs, [watched, notice])
    stop_btn.click(partial(on_stop, studio), watched, notice)
    resumed = resume_btn.click(partial(on_resume, studio), watched, [watched, notice])
    runs_table.select(on_select, None, watched)
    messages.clear_on([(preset_dd.input, []), (check_btn.click, []), (train_btn.click, [notice]),
                       (stop_btn.click, [notice]), (resume_btn.click, [notice]), (runs_table.select, []),
                       (launch_btn.click, [launch_out])], [notice, launch_out])
    live = Live(panel, log, runs_table, cfg_yaml, cli)
    panel.add_controls(stop_btn, resume_btn)
    follow = panel.follow(partial(on_tick, live), 1.0, Shown, {"watched": watched},
                          [log, runs_table, cfg_yaml, cli], also=(watched,), after=(resumed,))

    def hooks(demo: gr.Blocks, tab: gr.Tab) -> None:
        demo.load(check, inputs, preflight_md)  # first paint: the pre-flight of the default form
        tab.select(check, inputs, preflight_md)  # labels may have changed since
        follow(demo, tab)  # the run panel, drawn afresh: charts drawn while the tab was hidden have no size

    return hooks
