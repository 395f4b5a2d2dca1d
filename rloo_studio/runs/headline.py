"""The figure that says whether a run did its job, in words, for the Runs tab's rows: an RLOO run's held-out accuracy
before and after training (its eval.json), a reward model's held-out pair accuracy, a process reward model's step
accuracy and first wrong step found. The registry's key_metrics sum a run up with training figures too (an RLOO
run's loss is near zero by design), so the held-out ones are chosen here; a kind not named here keeps them."""
from __future__ import annotations

import json

from rloo_studio.core.workspace import Workspace
from rloo_studio.runs.catalog import last_values
from rloo_studio.runs.chart_data import fmt
from rloo_studio.runs.runner import read_metrics

# Written by rloo.evaluate (EVAL_FILE), which sits above this package: the name is repeated here, and
# tests/test_run_links.py holds the two equal.
EVAL_FILE = "eval.json"

# kind -> (words, metric key, a share shown in percent): the last logged value of each.
HEADLINES = {
    "reward": (("held-out pair accuracy", "eval_accuracy", True),),
    "prm": (("held-out step accuracy", "eval_step_accuracy", True),
            ("first wrong step found", "eval_first_wrong_found", True)),
    "rloo": (("reward", "reward", False), ("KL", "kl", False)),  # a run without eval.json (eval_prompts 0)
}


def held_out(ev: dict) -> str:
    """An RLOO run's eval.json in words: 'held-out accuracy 50.5% → 90.0% (+39.5 points)'; before training only
    while it has no after; '' without a before."""
    b, a = ev.get("before") or {}, ev.get("after") or {}
    if not isinstance(b.get("accuracy"), (int, float)):
        return ""
    if not isinstance(a.get("accuracy"), (int, float)):
        return f"held-out accuracy {b['accuracy']:.1%} before training"
    gain = round((a["accuracy"] - b["accuracy"]) * 100, 1) + 0.0  # + 0.0: no '-0.0'
    return f"held-out accuracy {b['accuracy']:.1%} → {a['accuracy']:.1%} ({gain:+.1f} points)"


def read_eval(run_dir) -> dict:
    try:
        data = json.loads((run_dir / EVAL_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def figures(kind: str, last: dict) -> str:
    """The kind's HEADLINES figures among a run's last logged values ('' when it logged none of them)."""
    out = []
    for words, key, share in HEADLINES.get(kind, ()):
        v = last.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out.append(f"{words} {v:.1%}" if share else f"{words} {fmt(v)}")
    return " · ".join(out)


def headline(ws: Workspace, summary: dict) -> str:
    """A run's headline figure from its row of catalog.summaries: eval.json for an RLOO run that has one, else its
    kind's HEADLINES, else the row's key figures (the registry's key_metrics)."""
    d = ws.run_dir(summary["id"])
    if summary["kind"] == "rloo":
        words = held_out(read_eval(d))
        if words:
            return words
    if summary["kind"] in HEADLINES:
        return figures(summary["kind"], last_values(read_metrics(d))) or summary.get("figures", "")
    return summary.get("figures", "")
