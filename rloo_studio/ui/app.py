"""The app shell: header, tabs, launch."""
from __future__ import annotations

import html

import gradio as gr

from ..studio import Studio
from . import inspect_tab, label_tab, reward_tab, rloo_tab, runs_tab

CSS = """
.studio-header {display:flex; gap:1.5em; align-items:baseline; flex-wrap:wrap; padding:.2em 0 .4em}
.studio-header h1 {margin:0; font-size:1.5em}
.studio-header .meta {color:var(--body-text-color-subdued); font-size:.9em}
.studio-header .meta b {color:var(--body-text-color)}
"""

TABS = [("Label", label_tab), ("Reward model", reward_tab), ("Inspect", inspect_tab), ("RLOO", rloo_tab),
        ("Runs", runs_tab)]


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
            for name, module in TABS:
                with gr.Tab(name, id=name.lower().replace(" ", "-")) as tab:
                    hooks = module.build(studio)  # a tab may return hooks(demo, tab) for load / select events
                if callable(hooks):
                    hooks(demo, tab)
    return demo


def launch(studio: Studio, host: str = "127.0.0.1", port: int = 7860, auth: tuple[str, str] | None = None,
           block: bool = True, max_upload_mb: int = 500):
    demo = build_ui(studio)
    demo.queue(default_concurrency_limit=4)
    demo.launch(
        server_name=host, server_port=port, auth=auth, prevent_thread_lock=not block,
        css=CSS + "".join(getattr(m, "CSS", "") for _, m in TABS),  # each tab may add its own CSS
        head="".join(getattr(m, "HEAD", "") for _, m in TABS),  # ... and scripts (keyboard shortcuts)
        show_error=True, max_file_size=f"{max_upload_mb}mb", footer_links=[],
        allowed_paths=[str(studio.ws.exports_dir)],  # downloads of exported files; nothing else on disk
    )
    return demo
