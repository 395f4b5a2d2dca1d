"""Runs tab: every run (reward, RLOO, generate) with status and key figures; overlay curves; delete."""
from __future__ import annotations

import html

import gradio as gr
import pandas as pd

from .. import runs as R
from ..launch import launch_files, launch_text
from ..studio import Studio
from . import launch_panel

HEADERS = ["run", "kind", "status", "started", "duration (s)", "key figures", "message"]


def _table(studio: Studio) -> list[list]:
    return [[s["id"], s["kind"], s["status"], s["started"], s["duration_s"], s["figures"], s["message"]]
            for s in R.summaries(studio.ws)]


def build(studio: Studio) -> None:
    ws = studio.ws
    table = gr.Dataframe(headers=HEADERS, value=_table(studio), interactive=False, wrap=True, elem_id="runs-table")
    with gr.Row():
        pick = gr.Dropdown([r["id"] for r in ws.runs()], multiselect=True, label="Runs to compare", scale=3)
        metric = gr.Dropdown([], label="Metric", scale=1)
    plot = gr.LinePlot(pd.DataFrame({"step": [], "value": [], "run": []}), x="step", y="value", color="run",
                       label="Overlay", height=320)
    folder = gr.Markdown()
    with gr.Row():
        confirm = gr.Checkbox(label="Yes, delete the selected run(s) and their files", value=False)
        delete = gr.Button("Delete", variant="stop")
    msg = gr.Markdown()
    strategy, gpus, machines, b_launch, launch_out = launch_panel.controls(
        "runs", "Write launch files for the first selected run")

    def refresh(selected):
        ids = [r["id"] for r in ws.runs()]
        return _table(studio), gr.update(choices=ids, value=[s for s in (selected or []) if s in ids])

    def choose(selected, current):
        keys = R.numeric_keys(ws, selected or [])
        value = current if current in keys else ("loss" if "loss" in keys else (keys[0] if keys else None))
        paths = "\n".join(f"- `{html.escape(str(ws.run_dir(r)))}`" for r in selected or [])
        return gr.update(choices=keys, value=value), (f"Run folders:\n{paths}" if paths else "")

    def draw(selected, m):
        rows = R.overlay(ws, selected or [], m) if m else []
        return pd.DataFrame(rows or {"step": [], "value": [], "run": []})

    def remove(selected, sure):
        if not selected:
            return "Select a run first."
        if not sure:
            return "Tick the box to confirm: deleting removes the run's folder, checkpoints and adapter."
        done, errors = [], []
        for rid in selected:
            try:
                R.delete_run(ws, rid)
                done.append(rid)
            except (KeyError, ValueError) as e:
                errors.append(str(e))
        return " ".join([f"Deleted {', '.join(done)}." if done else ""] + errors)

    def export_launch(selected, strat, n, m):
        if not selected:
            return "Select a reward or RLOO run first."
        rid = selected[0]
        r = ws.run(rid)
        try:
            path, cmd = launch_files(r["kind"], ws.root, ws.run_dir(rid) / "config.yaml", strat, int(n), int(m))
        except (ValueError, TypeError) as e:
            return f"**{e}**"
        return launch_text(path, cmd)

    b_launch.click(export_launch, [pick, strategy, gpus, machines], launch_out)
    gr.Timer(2.0).tick(refresh, pick, [table, pick], show_progress="hidden")
    pick.change(choose, [pick, metric], [metric, folder]).then(draw, [pick, metric], plot)
    metric.change(draw, [pick, metric], plot)
    delete.click(remove, [pick, confirm], msg).then(refresh, pick, [table, pick]).then(
        lambda: False, None, confirm)
