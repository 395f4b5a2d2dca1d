"""What `runs show` adds for a process-reward run: its held-out figures at the last evaluation and what was left
out of training."""
from __future__ import annotations

import json
from pathlib import Path

FIGURES = ("step_accuracy", "right_called_right", "wrong_called_wrong", "first_wrong_found", "correct_called_correct",
           "processbench_f1")


def last_figures(records: list[dict]) -> dict:
    """The held-out figures of the last evaluation ({} before the first)."""
    for r in reversed(records):
        if any(f"eval_{k}" in r for k in FIGURES):
            return {k: r[f"eval_{k}"] for k in FIGURES if f"eval_{k}" in r} | {"step": r.get("step")}
    return {}


def run_show(run_dir) -> dict:
    from rloo_studio.runs.runner import read_metrics

    d = Path(run_dir)
    out = {"held_out": last_figures(read_metrics(d))}
    try:
        out["data"] = json.loads((d / "left_out.json").read_text())
    except (OSError, ValueError):
        pass
    return out
