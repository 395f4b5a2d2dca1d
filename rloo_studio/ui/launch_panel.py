"""The "several GPUs or machines" panel of the Reward model and RLOO tabs: writes the form's config
and an accelerate config (DDP, FSDP, DeepSpeed ZeRO-2 / ZeRO-3) and shows the launch command."""
from __future__ import annotations

import html
from functools import partial
from typing import Callable

import gradio as gr

from rloo_studio.core.errors import StudioError
from rloo_studio.runs.accelerate_launch import STRATEGIES, launch_from_form, launch_text
from rloo_studio.studio import Studio

MAX_GPUS, MAX_MACHINES = 1024, 10000  # more is a typo, not a cluster


def counts(n, m) -> tuple[int, int]:
    """GPUs per machine and machines as typed -> whole numbers, or a ValueError in plain words."""
    out = []
    for value, what, top in ((n, "GPUs per machine", MAX_GPUS), (m, "Machines", MAX_MACHINES)):
        if value is None or value == "":
            raise ValueError(f"{what}: give a whole number (at least 1).")
        if float(value) != int(value) or not 1 <= int(value) <= top:
            raise ValueError(f"{what}: give a whole number from 1 to {top}, not {value}.")
        out.append(int(value))
    return out[0], out[1]


def controls(prefix: str, button_text: str):
    """The accordion's widgets (strategy, GPUs, machines, button, output); the Runs tab uses them too."""
    with gr.Accordion("Run on several GPUs or machines (accelerate)", open=False):
        with gr.Row():
            strategy = gr.Dropdown(list(STRATEGIES), value="DDP", label="Strategy", elem_id=f"{prefix}-launch-strategy")
            # no `minimum`: gradio would answer a 0 with a red "Error" toast; counts() says it in words
            gpus = gr.Number(2, label="GPUs per machine", precision=0, elem_id=f"{prefix}-launch-gpus")
            machines = gr.Number(1, label="Machines", precision=0, elem_id=f"{prefix}-launch-machines")
            button = gr.Button(button_text, elem_id=f"{prefix}-launch-write")
        out = gr.Markdown(elem_id=f"{prefix}-launch-out")
    return strategy, gpus, machines, button, out


def write(studio: Studio, kind: str, config_from_values: Callable, strat, n, m, *values) -> str:
    """The form's config and an accelerate config written to launch/; the command to run on each machine."""
    try:
        n, m = counts(n, m)
        cfg = config_from_values(list(values))
        run_config, path, cmd = launch_from_form(kind, studio.ws.root, cfg, strat, n, m)
    except (StudioError, ValueError, TypeError) as exc:
        return f"**{html.escape(str(exc))}**"
    return launch_text(path, cmd, run_config)


def build(studio: Studio, kind: str, inputs: list, config_from_values: Callable, prefix: str):
    """config_from_values(list of widget values) -> the tab's config (raises ConfigError on a bad field).
    Returns (button, output) so the tab can clear the output when another action answers."""
    strategy, gpus, machines, button, out = controls(prefix, "Write config and command")
    button.click(partial(write, studio, kind, config_from_values), [strategy, gpus, machines, *inputs], out)
    return button, out
