"""The Reward model tab's runs without gradio: the runs table, a run's final held-out figures, its log's
last lines and its breakdown by kind."""
from __future__ import annotations

import json
import time

from rloo_studio.core.workspace import Workspace
from rloo_studio.reward.blind import breakdown_cell, breakdown_text
from rloo_studio.reward.breakdown import read as read_breakdown
from rloo_studio.runs.catalog import without_traceback
from rloo_studio.runs.runner import read_metrics


def final_eval(records: list[dict]) -> dict:
    """The last held-out accuracy and margin a run logged ({} before its first evaluation)."""
    for r in reversed(records):
        if "eval_accuracy" in r:
            return {"accuracy": r["eval_accuracy"], "margin": r.get("eval_margin"), "step": r.get("step")}
    return {}


def log_tail(ws: Workspace, run_id: str, lines: int = 12) -> str:
    """The log's last lines, tracebacks left out (a failed run's page shows its traceback folded)."""
    try:
        text = (ws.run_dir(run_id) / "log.txt").read_text(errors="replace")
    except (OSError, ValueError):
        return ""
    return "\n".join(without_traceback(text.splitlines())[-lines:])


def _duration(r: dict) -> str:
    start = r["started"] or r["created"]
    end = r["ended"] or (time.time() if r["status"] == "running" else start)
    s = max(0.0, end - start)
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.1f} min"


RUN_HEADERS = ["run", "status", "pairs (train / held-out)", "held-out accuracy", "held-out right, by kind of pair",
               "duration", "message"]


def runs_rows(ws: Workspace) -> list[list]:
    """The reward-model runs, newest first, for the runs list."""
    rows = []
    for r in ws.runs("reward"):
        d = ws.run_dir(r["id"])
        try:
            pf = json.loads((d / "preflight.json").read_text()).get("trained_on", {})
            pairs = f"{pf['train']} / {pf['held_out']}"
        except (OSError, ValueError, KeyError):
            pairs = ""
        acc = final_eval(read_metrics(d)).get("accuracy")
        rows.append([r["id"], r["status"], pairs, "" if acc is None else f"{acc:.1%}",
                     breakdown_cell(read_breakdown(d)), _duration(r), r["message"]])
    return rows


def runs_table(ws: Workspace) -> tuple[list[str], list[list]]:
    """(headers, rows) of the Reward model tab's runs list."""
    return RUN_HEADERS, runs_rows(ws)


def breakdown(ws: Workspace, run_id: str) -> str:
    """The run's held-out accuracy by kind of pair and by source, one line each ('' before it finished):
    a format-only reward model shows 100% on 'only chosen reasons' and chance on 'both reason'."""
    return breakdown_text(read_breakdown(ws.run_dir(run_id)))
