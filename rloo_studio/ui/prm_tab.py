"""Process reward tab: step labels made from rollouts (kind 'rollouts'), and the process reward model trained on
the step labels (kind 'prm'), each a job section (ui/job_section.py); above them, the step labels the workspace
holds and how people and rollouts agree where both labeled a step.

A process reward model scores each <think> step (is it right?), where the Reward model tab's outcome model scores
a whole response: Inspect shows both lenses, and RLOO takes it as the process_reward reward.
"""
from __future__ import annotations

import html
from functools import partial

import gradio as gr

from rloo_studio.label import steps
from rloo_studio.studio import Studio
from rloo_studio.ui import job_tab

KIND, ROLLOUTS = "prm", "rollouts"
INTRO = ("A **process reward model** reads each `<think>` step and gives the probability that it is right; the "
         "outcome model of the Reward model tab scores whole responses. It learns from step labels: yours (the Label "
         "tab's step mode, or a stepwise file imported there), or made here from rollouts, where a step is right when "
         "endings written from it reach the known answer (Math-Shepherd).")
PRM_LAYOUT = [  # rows of at most three: the form is the narrower column, beside the live run
    (None, (("model",), ("finetune", "extra_layers"), ("learning_rate", "max_steps"), ("labels_from",)), True),
    ("Loading and LoRA: 4-bit, thinking, remote code, adapter", (("load_in_4bit", "enable_thinking"),
                                                                 ("trust_remote_code",),
                                                                 ("lora.r", "lora.alpha", "lora.dropout"),
                                                                 ("lora.target_modules",)), False),
    ("Training: batch, optimizer, where steps are read, held-out split",
     (("per_device_train_batch_size", "gradient_accumulation_steps"), ("optim", "max_length"),
      ("after_first_bad", "read_at"), ("step_score", "eval_fraction"), ("length_batches",),
      ("gradient_checkpointing", "memory_guard")), False),
    ("The teacher's token labels", (("token_labels",), ("teacher",), ("corrupt", "copies")), False),
    ("Schedule, logging and checkpoints", (("warmup_steps", "weight_decay", "seed"),
                                           ("logging_steps", "eval_steps", "save_steps")), False),
    ("Other trainer settings (transformers TrainingArguments, YAML, passed as they are)", (("trl",),), False),
]
ROLLOUT_LAYOUT = [
    (None, (("policy",), ("policy_run",), ("prompt_set", "prompts"), ("samples", "continuations")), True),
    ("The completer: the model that writes the endings", (("completer",), ("trust_remote_code",)), False),
    ("Labels and sampling", (("rule", "soft_threshold"), ("answer_format",), ("max_new_tokens", "temperature"),
                             ("batch_prompts", "seed"), ("enable_thinking",)), False),
]


def labels_md(studio: Studio) -> str:
    """What step labels the workspace holds, by who made them, and where people and rollouts agree."""
    counts: dict[str, list[int]] = {}
    for r in steps.labeled_responses(studio.ws, "all"):
        who = "rollouts" if r["annotator"] == steps.ROLLOUTS else "imported" if r["annotator"] == steps.IMPORTED \
            else "people"
        c = counts.setdefault(who, [0, 0, 0])
        c[0] += 1
        c[1] += len(r["labels"])
        c[2] += sum(v < 0 for v in r["labels"])
    if not counts:
        return "No step labels yet: make them from rollouts below, or label steps in the Label tab's step mode."
    rows = "".join(f"\n| {who} | {n:,} | {s:,} | {bad:,} |" for who, (n, s, bad) in sorted(counts.items()))
    text = "| step labels by | responses | steps | wrong steps |\n|---|---|---|---|" + rows
    ag = steps.agreement(studio.ws)
    if ag.get("steps"):
        text += (f"\n\nWhere a person and the rollouts labeled the same step ({ag['steps']:,} steps), they agree on "
                 f"**{ag['share']:.0%}** of them.")
    return text


def on_load_demo(studio: Studio):
    """(message, the labels' counts, the rollouts section): the demo's step labels added once
    (label/demo_data.seed_demo_steps); with labels to train on, the rollouts section folds and Train comes into view."""
    from rloo_studio.label.demo_data import seed_demo_steps

    try:
        added = seed_demo_steps(studio.ws)
    except Exception as exc:  # noqa: BLE001 — a plain message, never a traceback
        return f"⚠ Could not load the demo's step labels: {html.escape(str(exc))}", on_labels(studio), gr.update()
    said = ("The demo's step labels are already in this workspace; nothing was added." if added is None else
            f"Added {added:,} responses of the demo's slipping policy with their step labels from rollouts "
            "(prompt set demo-steps).")
    return said, on_labels(studio), gr.Accordion(open=False)


def on_labels(studio: Studio) -> str:
    try:
        return labels_md(studio)
    except Exception as exc:  # noqa: BLE001 — the counts are a courtesy: never a traceback in their place
        return f"⚠ {html.escape(str(exc))}"


def build(studio: Studio):
    gr.Markdown(INTRO)
    labels = gr.Markdown(elem_id="prm-labels")
    with gr.Row():
        load = gr.Button("Load the demo's step labels", size="sm", scale=0, min_width=260, elem_id="prm-load-demo")
        loaded = gr.Markdown(elem_id="prm-load-demo-msg")
    # Folded when there are step labels to train on already (at the app's start, or once the demo's are loaded)
    with gr.Accordion("1. Step labels from rollouts", open=not steps.any_labels(studio.ws)) as rollouts_box:
        _, follow_rollouts = job_tab.section(studio, ROLLOUTS, ROLLOUT_LAYOUT, "demo-cpu",
                                      "No rollouts run yet: label the steps of the policy's responses here.",
                                      "Label steps", "Rollouts runs: config and command")
    load.click(partial(on_load_demo, studio), None, [loaded, labels, rollouts_box])
    gr.Markdown("### 2. Process reward model")
    _, follow_prm = job_tab.section(studio, KIND, PRM_LAYOUT, "demo-cpu",
                             "No process reward model yet. Check the settings, then press <b>Train</b>.",
                             "Train", "Process-reward runs: config and command")

    def hooks(demo: gr.Blocks, tab: gr.Tab) -> None:
        tab.select(partial(on_labels, studio), None, labels)
        follow_rollouts(demo, tab)
        follow_prm(demo, tab)

    return hooks
