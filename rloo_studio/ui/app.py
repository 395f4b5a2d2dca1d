"""The app shell: header, tabs, launch."""
from __future__ import annotations

import html

import gradio as gr

from ..studio import Studio
from . import runs_tab

CSS = """
.studio-header {display:flex; gap:1.5em; align-items:baseline; flex-wrap:wrap; padding:.2em 0 .4em}
.studio-header h1 {margin:0; font-size:1.5em}
.studio-header .meta {color:var(--body-text-color-subdued); font-size:.9em}
.studio-header .meta b {color:var(--body-text-color)}
"""

PENDING = {
    "Label": "Labeling is not built yet (issue: Label tab).",
    "Reward model": "Reward-model training from this tab is not built yet (issue: Reward model tab).",
    "Inspect": "Per-step reward inspection is not built yet (issue: Inspect tab).",
    "RLOO": "Launching RLOO from this tab is not built yet (issue: RLOO tab).",
}


def header_html(studio: Studio) -> str:
    h = studio.header()
    return (
        "<div class='studio-header'><h1>RLOO Studio</h1>"
        f"<span class='meta'>device <b>{html.escape(h['device'])}</b></span>"
        f"<span class='meta'>backend <b>{html.escape(h['backend'])}</b></span>"
        f"<span class='meta'>workspace <b>{html.escape(h['workspace'])}</b></span></div>"
    )


def build_ui(studio: Studio) -> gr.Blocks:
    with gr.Blocks(title="RLOO Studio") as demo:
        gr.HTML(header_html(studio))
        with gr.Tabs():
            for name, line in PENDING.items():
                with gr.Tab(name):
                    gr.Markdown(line)
            with gr.Tab("Runs"):
                runs_tab.build(studio)
    return demo


def launch(studio: Studio, host: str = "127.0.0.1", port: int = 7860, auth: tuple[str, str] | None = None,
           block: bool = True):
    demo = build_ui(studio)
    demo.queue(default_concurrency_limit=4)
    demo.launch(
        server_name=host, server_port=port, auth=auth, css=CSS, prevent_thread_lock=not block,
        show_error=True, max_file_size="500mb", footer_links=[],
    )
    return demo
