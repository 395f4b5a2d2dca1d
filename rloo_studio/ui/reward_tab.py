"""Reward model tab: the job section (ui/job_section.py: preset and form, Check / Train / Stop / Resume, the run
panel, the runs list) laid out in two columns, plus what is the reward model's own: the data pre-flight (pairs
TRL would drop), the held-out charts and the log.

The run being watched is the one clicked in the runs list, else the active or newest.
"""
from __future__ import annotations

import html
from dataclasses import dataclass
from functools import partial

import gradio as gr

from rloo_studio.core.errors import explain
from rloo_studio.reward import runs_list
from rloo_studio.reward.charts import PLOTS, REWARD_TITLES
from rloo_studio.reward.job import PREFLIGHT_SAMPLE, format_preflight, preflight
from rloo_studio.studio import Studio
from rloo_studio.ui import job_section, run_panel
from rloo_studio.ui.job_section import JobSection

KIND = "reward"
CSS = """
#reward-plots .plot-caption, #reward-plots [data-testid="block-info"] {font-size:.85em}
"""

# runs_list.RUN_HEADERS on a 1400 px page: each column at least as wide as its header; long text wraps
RUN_WIDTHS = ["15%", "8%", "18%", "13%", "25%", "8%", "13%"]
EMPTY = "No reward-model run yet. Check the settings, then press <b>Train</b>."

# (accordion, rows of keys, open at start): the settings changed most stay in view (None: no accordion) beside the
# live run; the rest is folded in sections that say what they hold
LAYOUT = [
    (None, (("model",), ("learning_rate", "max_steps"), ("num_train_epochs",)), True),
    ("Model loading: 4-bit, Unsloth, remote code, thinking", (("load_in_4bit", "use_unsloth"),
                                                                ("enable_thinking", "trust_remote_code")), False),
    ("LoRA", (("lora.r", "lora.alpha", "lora.dropout"), ("lora.target_modules",), ("modules_to_save",)), False),
    ("Training: batch, optimizer, centering, checkpointing", (("per_device_train_batch_size",
                                                               "gradient_accumulation_steps"),
                                                              ("optim", "center_rewards_coefficient"),
                                                              ("gradient_checkpointing", "memory_guard")), False),
    ("Data: length, held-out split, step pairs", (("max_length", "over_length"), ("eval_fraction", "split_by_kind"),
                                                  ("step_pairs", "eval_batch_size", "seed")), False),
    ("Logging and checkpoints", (("logging_steps", "eval_steps", "save_steps"),), False),
    ("Other TRL settings (YAML, passed to the trainer as they are)", (("trl",),), False),
]
PREFLIGHT_FIELDS = ("model", "max_length", "over_length", "eval_fraction", "trust_remote_code", "enable_thinking")


def on_preflight(studio: Studio, *values) -> str:
    """The data pre-flight of the form as it stands: pairs, lengths, what TRL would drop, the split, memory."""
    try:
        cfg = job_section.config_of(KIND, values)
        return format_preflight(preflight(studio.ws, cfg, sample=PREFLIGHT_SAMPLE))
    except Exception as exc:  # a bad field or a model that is not there: say so, change nothing
        return f"⚠ {html.escape(explain(exc))}"


@dataclass
class Live:
    """The parts of the tab the timer keeps up to date: the job section (run panel, runs list, config) and the log."""
    section: JobSection
    log: gr.Textbox


Shown = job_section.Shown  # the run clicked in the runs list, and what the page shows


def on_tick(live: Live, shown: Shown, fresh: bool = False) -> dict:
    """The job section's redraw (ui/job_section.py: the run clicked in the runs list, else the active or newest),
    and the run's log."""
    def log(memo: dict, rid: str | None, records: list) -> dict:
        if not rid:
            return {live.log: ""}
        path = live.section.studio.ws.run_dir(rid) / "log.txt"
        return {live.log: runs_list.log_tail(live.section.studio.ws, rid)} \
            if run_panel.changed(memo, "log", [rid, *_size(path)]) else {}

    return job_section.on_tick(live.section, shown, fresh, log)


def _size(path) -> tuple:
    try:
        st = path.stat()
        return st.st_size, st.st_mtime_ns
    except OSError:
        return ()


def _panel(section: JobSection) -> None:
    """The buttons and the run panel (status, failure, the charts), in view beside the form."""
    section.actions(launch="Train")
    section.run_panel(EMPTY)
    gr.HTML("<div class='legend'>Held-out pairs are measured at each evaluation; step 0 is the "
            "untrained model.</div>")
    with gr.Column(elem_id="reward-plots"):
        section.panel.add_charts([(t, REWARD_TITLES.get(t, t)) for t in PLOTS], per_row=2, height=270)


def _preflight() -> gr.Markdown:
    with gr.Group():
        gr.Markdown("### Pre-flight")
        return gr.Markdown(elem_id="reward-preflight")


def build(studio: Studio):
    section = JobSection.start(studio, KIND)
    watched = gr.State(None)  # run id clicked in the runs list (None: follow the newest run)
    with gr.Row():
        with gr.Column(scale=2, min_width=420):
            section.form(LAYOUT, "demo-cpu", info="Fills the form; GPU presets follow the Qwen3 (Thinking) seed "
                                                    "recipe.", min_width=140)
            summary = _preflight()  # what Check settings answers, beside the settings it reads
        with gr.Column(scale=3):  # the live run, in view while it trains
            _panel(section)
    log = gr.Textbox(label="Log (last lines)", lines=8, max_lines=8, interactive=False, elem_id="reward-log",
                     elem_classes=run_panel.live(KIND))
    section.runs_list("Reward-model runs", RUN_WIDTHS)
    section.launch_files()

    actions = job_section.wire(section, watched)
    check = partial(on_preflight, studio)
    section.buttons[0].click(check, section.inputs, summary)  # Check settings: the data pre-flight too, refreshed
    for key in PREFLIGHT_FIELDS:
        section.widgets[key].change(check, section.inputs, summary, show_progress="hidden")
    job_section.clear_messages(section, actions, [])
    follow = section.panel.follow(partial(on_tick, Live(section, log)), 1.0, Shown, {"watched": watched},
                                  [log, section.runs, section.config, section.cli], also=(watched,),
                                  after=(section.resumed,))

    def hooks(demo: gr.Blocks, tab: gr.Tab) -> None:
        tab.select(check, section.inputs, summary)  # the pre-flight of the form, with the labels as they are now
        follow(demo, tab)  # the run panel, drawn afresh: charts drawn while the tab was hidden have no size

    return hooks
