"""RLOO tab."""
from __future__ import annotations

import gradio as gr

from ..studio import Studio


def build(studio: Studio) -> None:
    gr.Markdown("RLOO: not built yet (its issue is open).")
