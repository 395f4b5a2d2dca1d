"""A run's warnings, kept with the run (warnings.json): each with the step it was first and last seen.

The RLOO job records what the tab's warnings say after every logged step, so they outlive the steps
that raised them: the page, `runs show` and the Runs tab show them after the run ended ("⚠ the reward
model scores correct and wrong answers alike …, seen at steps 3–12"). A warning's figures change from
step to step; its words do not, so it is one warning with its latest figures.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

FILE = "warnings.json"


def _key(text: str) -> str:
    return re.sub(r"[-+]?\d[\d.,]*%?", "#", text)  # the same warning with other figures


def read(run_dir: Path) -> list[dict]:
    """[{text, first_step, last_step}] in the order first seen ([] for a run that recorded none)."""
    try:
        data = json.loads((Path(run_dir) / FILE).read_text())
    except (OSError, ValueError):
        return []
    return [w for w in data if isinstance(w, dict) and "text" in w] if isinstance(data, list) else []


def record(run_dir: Path, step: int, texts: list[str]) -> list[dict]:
    """Add what the warnings say at `step` to the run's list (written atomically); returns the list."""
    kept = read(run_dir)
    by_key = {_key(w["text"]): w for w in kept}
    changed = False
    for text in texts:
        w = by_key.get(_key(text))
        if w is None:
            w = {"text": text, "first_step": step, "last_step": step}
            kept.append(w)
            by_key[_key(text)] = w
            changed = True
        elif (w["text"], w["last_step"]) != (text, max(w["last_step"], step)):
            w.update(text=text, last_step=max(w["last_step"], step))
            changed = True
    if changed:
        tmp = Path(run_dir) / (FILE + ".tmp")
        tmp.write_text(json.dumps(kept, indent=1))
        os.replace(tmp, Path(run_dir) / FILE)
    return kept


def seen(w: dict) -> str:
    """'step 4' or 'steps 3–12'."""
    a, b = w.get("first_step"), w.get("last_step")
    return f"step {a}" if a == b else f"steps {a}–{b}"
