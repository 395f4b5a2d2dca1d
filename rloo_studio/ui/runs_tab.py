"""Runs tab: every training run in the workspace with its state, refreshed live."""
from __future__ import annotations

import gradio as gr

from ..studio import Studio

HEADERS = ["run", "kind", "status", "started", "duration", "message"]


def build(studio: Studio) -> None:
    table = gr.Dataframe(headers=HEADERS, value=studio.runs_table(), interactive=False, wrap=True)
    gr.Timer(2.0).tick(studio.runs_table, outputs=table, show_progress="hidden")
