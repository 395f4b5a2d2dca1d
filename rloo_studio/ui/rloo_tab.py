"""RLOO tab: the job section (ui/job_section.py: preset and form, Check settings / Launch / Stop / Resume, the run
panel, the runs list), plus what is RLOO's own: the prompt upload, the reward tick-boxes and their weights, the run
picker with an overlay, the warnings, the completions table, one completion as the models read it, sending a
group to labeling, the token view and the before/after.

Thin: callbacks read widgets, call rloo_studio.rloo, and format. The run shown is the one picked in the run list
(by default the active or newest run).
"""
from __future__ import annotations

import html
from dataclasses import dataclass
from functools import partial

import gradio as gr

from rloo_studio.core import model_choices
from rloo_studio.core.errors import StudioError, explain
from rloo_studio.core.job_config import OPTIMIZERS
from rloo_studio.label.importing import import_upload
from rloo_studio.rloo import compare as rloo_eval
from rloo_studio.rloo import completions, health, launch_form
from rloo_studio.rloo import config as rloo_config
from rloo_studio.rloo.charts import CHART_TITLES, PLOTS, rloo_charts
from rloo_studio.rloo.config import LATEST
from rloo_studio.runs import run_warnings, tail
from rloo_studio.runs.catalog import find_run, scorer_runs
from rloo_studio.runs.jobs import KINDS
from rloo_studio.studio import Studio
from rloo_studio.ui import job_section, rloo_model_input, rloo_render, rloo_send, run_panel, token_view
from rloo_studio.ui.fields import Pick, Range, Ticks
from rloo_studio.ui.job_section import JobSection
from rloo_studio.ui.run_panel import RunPanel
from rloo_studio.ui.uploads import discard_upload

KIND = "rloo"
CSS = rloo_render.CSS
EMPTY = "No RLOO run yet. Pick a preset, check the settings, then press <b>Launch</b>."
PRESET_INFO = ("demo-cpu: rewarded by correctness; demo-cpu-reward-model / -process-reward: by your newest reward / "
               "process reward model alone; gpu-*: the Qwen3 Thinking recipe")
PROMPTS = "Prompts and reward models: prompt set, upload, weights, reward-model and process-reward runs"

# (accordion, rows of keys, open at start): the settings changed most stay in view (None: no accordion) beside the
# live run; the rest is folded in sections that say what they hold
LAYOUT = [
    (None, (("model",), ("rewards",), ("num_generations",), ("beta", "learning_rate"),
            ("max_steps", "max_completion_length")), True),
    ("Policy: backend, 4-bit, thinking, LoRA", (("backend", "load_in_4bit"), ("enable_thinking", "trust_remote_code"),
                                                ("lora.r", "lora.alpha", "lora.dropout"), ("lora.target_modules",)),
     False),
    (PROMPTS, (("prompt_set",), ("reward_weights", "reward_clip_range"), ("answer_format",), ("reward_model_run",),
               ("reward_model_normalize", "reward_model_std_floor"), ("reward_model_clip", "reward_model_batch_size"),
               ("process_reward_run",), ("process_reward_aggregate", "process_reward_correct_only"),
               ("process_reward_filter", "process_reward_unfinished")), False),
    ("Training: optimizer, temperature, batch, seed, advantages",
     (("optim", "temperature"), ("per_device_train_batch_size", "gradient_accumulation_steps"),
      ("seed", "normalize_advantages", "mask_truncated_completions")), False),
    ("GPU memory: checkpointing, generation batch, the guard",
     (("gradient_checkpointing", "generation_batch_size"), ("memory_guard",)), False),
    ("Checkpoints and before/after", (("save_steps", "logging_steps"), ("eval_prompts", "eval_seed"),
                                      ("eval_prompt_set",)), False),
    ("Generation with a vLLM server (GPU)", (("use_vllm",), ("vllm_server_base_url", "vllm_server_timeout")), False),
    ("Other TRL settings (YAML, passed to the trainer as they are)", (("trl",),), False),
]
IN_VIEW, IN_VIEW_HEIGHT = 4, 280  # charts beside the form, two to a row: loss, reward, KL, reward spread


def _specials(ws) -> dict:
    """The fields whose widget is not the one their kind gives (ui/fields.py: Pick, Ticks, Range)."""
    sets = launch_form.prompt_set_choices(ws)
    return {"prompt_set": Pick(sets), "eval_prompt_set": Pick(sets), "rewards": Ticks(launch_form.reward_choices(ws)),
            "reward_model_run": Pick(_reward_runs(ws)), "process_reward_run": Pick(_process_runs(ws)),
            "optim": Pick(list(OPTIMIZERS)), "num_generations": Range(2, 16)}


def _reward_runs(ws) -> list:
    # 'latest' is what the demo-cpu-reward-model preset sets: the newest reward run, named at launch
    return [("(none)", ""), ("latest (the newest reward run, named at launch)", LATEST)] + scorer_runs(ws, ("outcome",))


def _process_runs(ws) -> list:
    return [("(none)", ""), ("latest (the newest process-reward run, named at launch)", LATEST)] + \
        scorer_runs(ws, ("process",))


def _run(ws, rid) -> tuple[str | None, str | None]:
    """(run id, None) for an RLOO run of this workspace, else (None, a plain message)."""
    try:
        return find_run(ws, rid, "rloo")["id"], None
    except StudioError as exc:
        return None, str(exc)


# -- callbacks (wired with functools.partial(callback, studio)): read widgets, call the core, format ----------

def on_model(value) -> str:
    """Said as soon as the model field changes (a GPU preset fills it too): a model this machine does not
    have, before anything starts."""
    problem = model_choices.availability(str(value or ""))
    return job_section.answer(problem, False) if problem else ""


def on_rewards(ticked, weights, before):
    """Ticking a reward gives it a weight (1.0); unticking removes its weight. Returns (weights, ticked)."""
    return launch_form.weights_after_tick(before or [], ticked or [], weights or ""), list(ticked or [])


def on_upload(studio: Studio, path):
    ws = studio.ws
    if not path:
        return gr.update(), gr.update()
    try:
        res = import_upload(ws, path, expect=("prompts",))
    except Exception as exc:  # noqa: BLE001 — a file that is not a prompt set: say so, import nothing
        return job_section.answer(explain(exc), False), gr.update()
    finally:
        discard_upload(ws, path)  # Gradio's copy; the workspace keeps its own under uploads/
    cols = ", ".join(res.columns)
    return (job_section.answer(f"Imported {res.prompts} prompts as prompt set {res.name!r}"
                               + (f" (columns for the rewards: {cols})" if cols else ""), True),
            gr.Dropdown(choices=launch_form.prompt_set_choices(ws), value=res.name))


@dataclass
class Live:
    """The parts of the tab the timer keeps up to date: the job section (run panel, runs list, config), the
    warnings, the completions table, and the run box (filled when the tab is first opened)."""
    section: JobSection
    warnings: gr.HTML
    table: gr.Dataframe
    run: gr.Dropdown
    held: gr.Accordion | None = None  # the run's own held-out before / after, folded to its headline under the charts
    held_table: gr.HTML | None = None

    @property
    def panel(self) -> RunPanel:
        return self.section.panel


@dataclass(frozen=True)
class Shown:
    """What the tick reads: the run picked or typed (else the active or newest), an earlier run to overlay,
    the charts' smoothing and scale, the order within each group, and what the page shows (run_panel.memo)."""
    run: str | None = None
    overlay: str | None = None
    smoothing: float = 0.0
    log_scale: bool = False
    order: str = completions.ORDERS[0]
    memo: dict | None = None


def on_tick(live: Live, shown: Shown, fresh: bool = False) -> dict:
    panel, ws = live.panel, live.panel.studio.ws
    memo = run_panel.remembered(shown.memo, fresh)
    rid, err = panel.find(shown.run)
    listed = job_section.listed(live.section, memo) if live.section.runs is not None else {}
    if not rid:  # a typed run id that names no run: say so where the run would be shown
        return {panel.memo: memo, **listed, **panel.nothing(memo, err and job_section.answer(err, False)),
                live.warnings: ""}
    records, version = panel.records(rid)
    other = panel.find(shown.overlay)[0] if str(shown.overlay or "").strip() else None  # a deleted run: none
    earlier, earlier_version = panel.records(other) if other and other != rid else (None, None)
    samples, samples_version = tail.records(ws.run_dir(rid), "samples.jsonl", last_steps=health.WINDOW)
    weight, log = float(shown.smoothing or 0), bool(shown.log_scale)
    ev = rloo_eval.read_eval(ws, rid)
    said = rloo_render.headline(ev, _last_step(records), panel.studio.runner.status(rid).get("status"))
    out = {panel.memo: memo, **listed, **panel.show(memo, rid, records, rloo_render.figures(records),
                                                     f"<span class='headline'>{html.escape(said)}</span>" * bool(said),
                                                     partial(rloo_render.message, ev=ev))}
    out |= _held(live, memo, rid, ev, said)
    if fresh and not str(shown.run or "").strip():
        out[live.run] = rid  # the run box names the run shown; what reads the box (token view, ...) follows
    out |= panel.charts(memo, [rid, other if earlier else None, earlier_version, weight, log], version,
                        lambda: rloo_charts(records, rid, earlier, other or "", weight, log), rid)
    active = panel.studio.runner.status(rid).get("status") in run_panel.ACTIVE
    if run_panel.due(memo, "warnings", rid, [version, samples_version], active):
        kept = run_warnings.read(ws.run_dir(rid))  # the job keeps them, so they outlive their steps
        out[live.warnings] = rloo_render.warnings(kept or health.warnings(records, _max_length(ws, rid), samples))
    # the table only when its completions (paced while the run is active) or order changed: the scroll position stays
    if run_panel.due(memo, "table", [rid, shown.order], samples_version, active):
        cols, rows = completions.completion_groups(samples, shown.order or completions.ORDERS[0])
        if rows:
            out[live.table] = gr.Dataframe(value=rows, headers=cols, column_widths=rloo_render.widths(cols))
    return out | (job_section.config_parts(live.section, memo, rid) if live.section.config is not None else {})


def _held(live: Live, memo: dict, rid: str, ev: dict, said: str) -> dict:
    """The run's own before / after under the charts, folded to its headline, when it changed."""
    if live.held is None or not run_panel.changed(memo, "held", [rid, ev, said]):
        return {}
    return {live.held: gr.Accordion(label=f"Before / after, the run's own measurement: {said or 'none yet'}",
                                    visible=bool(said)), live.held_table: rloo_render.eval_line(None, rid, ev)}


def _last_step(records: list[dict]) -> int | None:
    return max((r["step"] for r in health.step_records(records) if isinstance(r.get("step"), int)), default=None)


def _max_length(ws, rid: str) -> int | None:
    try:
        return rloo_config.run_config(ws, rid).max_completion_length
    except Exception:  # noqa: BLE001 — an old or hand-edited config.yaml: warn without the limit
        return None


def on_compare(studio: Studio, rid, n):
    rid, err = _run(studio.ws, rid)
    if err:
        return f"**{html.escape(err)}**", gr.update()
    if n is None or n != int(n) or not 1 <= int(n) <= launch_form.MAX_COMPARE:
        return f"**Held-out prompts: give a whole number from 1 to {launch_form.MAX_COMPARE}.**", gr.update()
    try:
        res = rloo_eval.compare(studio.ws, rid, int(n))
    except Exception as exc:  # noqa: BLE001 — a broken adapter must not show a traceback
        return f"**{html.escape(explain(exc))}**", gr.update()
    b, t = res["base"], res["trained"]
    md = (f"| | accuracy | format rate | thinks |\n|---|---|---|---|\n"
          f"| base | {b['accuracy']:.1%} | {b['format_rate']:.1%} | {b['thinking_rate']:.1%} |\n"
          f"| trained ({rid}) | {t['accuracy']:.1%} | {t['format_rate']:.1%} | {t['thinking_rate']:.1%} |\n\n"
          f"{b['n']} held-out prompts, same seed and temperature for both.")
    rows = [[r["prompt"], r["answer"], r["base"], r["trained"]] for r in res["rows"]]
    return md, gr.Dataframe(value=rows, column_widths=rloo_render.COMPARE_WIDTHS)


def run_choices(studio: Studio, with_none: bool):
    ids = [r["id"] for r in studio.ws.runs("rloo")]
    return gr.Dropdown(choices=([("(none)", "")] if with_none else []) + ids)


def fresh_choices(studio: Studio):
    # Reward runs, reward files and prompt sets made since the page was built.
    ws = studio.ws
    return (gr.Dropdown(choices=_reward_runs(ws)), gr.Dropdown(choices=_process_runs(ws)),
            gr.CheckboxGroup(choices=launch_form.reward_choices(ws)),
            gr.Dropdown(choices=launch_form.prompt_set_choices(ws)))


def _run_bar(ws) -> tuple:
    with gr.Row():
        # Empty until the tab is opened (on_tick fills it): a value sent with the page would set off the token
        # view, the send-to-Label groups and a redraw in the hidden tab at every page load.
        run_dd = gr.Dropdown(label="Run", choices=[r["id"] for r in ws.runs("rloo")], value=None,
                             allow_custom_value=True, scale=2, elem_id="rloo-run")
        overlay_dd = gr.Dropdown(label="Overlay an earlier run", choices=[("(none)", "")] +
                                 [r["id"] for r in ws.runs("rloo")], value="", scale=2, elem_id="rloo-overlay",
                                 allow_custom_value=True)  # a run deleted meanwhile is ignored, not an error
        smooth = gr.Slider(0, 0.95, value=0.0, step=0.05, label="Smoothing", scale=1, elem_id="rloo-smoothing")
        log_scale = gr.Checkbox(label="Log scale (log10 of positive values)", value=False, scale=1, elem_id="rloo-log")
    return run_dd, overlay_dd, smooth, log_scale


def _live(section: JobSection) -> tuple:
    """The run panel (status, failure box), the first charts in view beside the form, the run's own before / after
    folded to its headline under them (at its end the charts stay where they were), the warnings, the rest."""
    panel = section.run_panel(EMPTY)
    titles = [(t, CHART_TITLES.get(t, t)) for t, _ in PLOTS]
    panel.add_charts(titles[:IN_VIEW], per_row=2, height=IN_VIEW_HEIGHT)
    with gr.Accordion("Before / after, the run's own measurement", open=False, visible=False,
                      elem_id="rloo-held-out", elem_classes=run_panel.live(KIND)) as held:
        held_table = gr.HTML(elem_id="rloo-before-after-table")
    warn = gr.HTML(elem_id="rloo-warnings", elem_classes=run_panel.live(KIND))
    panel.add_charts(titles[IN_VIEW:], per_row=2)
    return warn, held, held_table


def _completions() -> tuple:
    """How each group is ordered, and the completions table."""
    with gr.Row():
        order_dd = gr.Radio(list(completions.ORDERS), value=completions.ORDERS[0],
                            label="Within each prompt's group, order by",
                            scale=2, elem_id="rloo-order")
        gr.HTML("<div id='rloo-table-note'>Each group is one prompt's k completions. <b>advantage</b> = this "
                "completion's reward minus the mean reward of the other k−1 (leave-one-out): it is what the "
                "update pushes up or down. Click a header to sort the whole table by it.</div>")
    table = gr.Dataframe(headers=completions.completion_groups([])[0], label="Completions (newest groups first)",
                         interactive=False, wrap=True, max_height=720, elem_id="rloo-completions",
                         elem_classes=run_panel.live("rloo"),
                         column_widths=rloo_render.widths(completions.completion_groups([])[0]))
    return order_dd, table


def _compare() -> tuple:
    with gr.Accordion("Before / after: the same held-out prompts, base vs trained policy", open=False):
        with gr.Row():
            n_cmp = gr.Number(value=50, precision=None, label="Held-out prompts", scale=1, elem_id="rloo-compare-n")
            cmp_btn = gr.Button("Compare base and trained", scale=1, elem_id="rloo-compare")
        cmp_md = gr.Markdown(elem_id="rloo-compare-summary")
        cmp_table = gr.Dataframe(headers=["prompt", "answer", "base", "trained"], interactive=False, wrap=True,
                                 max_height=420, column_widths=rloo_render.COMPARE_WIDTHS, elem_id="rloo-compare-table")
    return n_cmp, cmp_btn, cmp_md, cmp_table


def _upload() -> gr.File:
    return gr.File(label="Import a prompt file (JSONL / CSV / Parquet with a prompt column)",
                   file_types=[".jsonl", ".json", ".csv", ".parquet"], elem_id="rloo-upload", height=120)


def _form(section: JobSection) -> gr.File:
    """The preset, the settings changed most, the rest folded (the prompt upload with the prompts); returns the
    upload."""
    section.preset_dropdown("demo-cpu", PRESET_INFO)
    files = []
    section.accordions(LAYOUT, KINDS[KIND].preset_config("demo-cpu", section.studio.ws), min_width=140,
                       inside={PROMPTS: lambda: files.append(_upload())})
    return files[0]


def build(studio: Studio):
    section = JobSection.start(studio, KIND, _specials(studio.ws))
    with gr.Row():
        with gr.Column(scale=2, min_width=420):
            upload = _form(section)
        with gr.Column(scale=3):  # the live run, in view while it trains
            section.actions()  # Stop saves the adapter (its answer says so)
            warn, held, held_table = _live(section)
    run_dd, overlay_dd, smooth, log_scale = _run_bar(studio.ws)
    order_dd, table = _completions()
    rloo_model_input.build(studio, run_dd, table)  # one completion as the models read it (ui/rloo_model_input.py)
    rloo_send.build(studio, run_dd)  # a group of these completions into the Label queue (ui/rloo_send.py)
    token_view.build(studio, run_dd)  # what a step taught, token by token (ui/token_view.py)
    n_cmp, cmp_btn, cmp_md, cmp_table = _compare()
    with gr.Accordion("RLOO runs: each run's config and the command that repeats it", open=False):
        section.runs_list("RLOO runs")
    section.launch_files()
    widgets, check = section.widgets, section.check
    # to keep the weights aligned with the ticks
    ticked = gr.State(list(KINDS[KIND].preset_config("demo-cpu", studio.ws).rewards))

    actions = job_section.wire(section, run_dd)
    run_dd.focus(partial(run_choices, studio, False), None, run_dd)
    overlay_dd.focus(partial(run_choices, studio, True), None, overlay_dd)
    section.preset.input(lambda name: KINDS[KIND].preset_config(name, studio.ws).rewards, section.preset, ticked)
    section.loaded.then(lambda now: list(now or []), widgets["rewards"], ticked)  # a run's settings loaded
    widgets["model"].change(on_model, widgets["model"], check, show_progress="hidden")  # GPU preset, not cached
    widgets["rewards"].input(on_rewards, [widgets["rewards"], widgets["reward_weights"], ticked],
                             [widgets["reward_weights"], ticked])
    upload.upload(partial(on_upload, studio), upload, [check, widgets["prompt_set"]])
    cmp_btn.click(partial(on_compare, studio), [run_dd, n_cmp], [cmp_md, cmp_table])
    job_section.clear_messages(section, actions + [(upload.upload, [check]), (cmp_btn.click, [cmp_md])], [cmp_md])
    shown = {"run": run_dd, "overlay": overlay_dd, "smoothing": smooth, "log_scale": log_scale, "order": order_dd}
    live = Live(section, warn, table, run_dd, held, held_table)
    follow = section.panel.follow(partial(on_tick, live), 2.0, Shown, shown,
                                  [warn, table, run_dd, held, held_table, section.runs, section.config, section.cli],
                                  also=tuple(shown.values()), after=(section.resumed,))

    def hooks(demo: gr.Blocks, tab: gr.Tab) -> None:
        follow(demo, tab)  # the run panel, drawn afresh: charts drawn while the tab was hidden have no size
        tab.select(partial(fresh_choices, studio), None,
                   [widgets["reward_model_run"], widgets["process_reward_run"], widgets["rewards"],
                    widgets["prompt_set"]])

    return hooks
