"""The "several GPUs or machines" panel of the Reward model and RLOO tabs: writes the form's config
and an accelerate config (DDP, FSDP, DeepSpeed ZeRO-2 / ZeRO-3) and shows the launch command."""
from __future__ import annotations

import html
from typing import Callable

import gradio as gr

from ..errors import StudioError
from ..launch import STRATEGIES, launch_from_form, launch_text
from ..studio import Studio


def controls(prefix: str, button_text: str):
    """The accordion's widgets (strategy, GPUs, machines, button, output); the Runs tab uses them too."""
    with gr.Accordion("Run on several GPUs or machines (accelerate)", open=False):
        with gr.Row():
            strategy = gr.Dropdown(list(STRATEGIES), value="DDP", label="Strategy", elem_id=f"{prefix}-launch-strategy")
            gpus = gr.Number(2, label="GPUs per machine", precision=0, minimum=1, elem_id=f"{prefix}-launch-gpus")
            machines = gr.Number(1, label="Machines", precision=0, minimum=1, elem_id=f"{prefix}-launch-machines")
            button = gr.Button(button_text, elem_id=f"{prefix}-launch-write")
        out = gr.Markdown(elem_id=f"{prefix}-launch-out")
    return strategy, gpus, machines, button, out


def build(studio: Studio, kind: str, inputs: list, config_from_values: Callable, prefix: str) -> None:
    """config_from_values(list of widget values) -> the tab's config (raises ConfigError on a bad field)."""
    strategy, gpus, machines, button, out = controls(prefix, "Write config and command")

    def write(strat, n, m, *values):
        try:
            cfg = config_from_values(list(values))
            run_config, path, cmd = launch_from_form(kind, studio.ws.root, cfg, strat, int(n or 0), int(m or 0))
        except (StudioError, ValueError, TypeError) as exc:
            return f"**{html.escape(str(exc))}**"
        return launch_text(path, cmd, run_config)

    button.click(write, [strategy, gpus, machines, *inputs], out)
