"""Label tab."""
from __future__ import annotations

import gradio as gr

from ..studio import Studio


def build(studio: Studio) -> None:
    gr.Markdown("Label: not built yet (its issue is open).")
