"""A process reward model beside a person labeling steps (the Label tab's step mode): each step's probability of
being right, the verdicts the model proposes, and the queue in the order the model is least certain about.

The model proposes, from the step to label on: good while it trusts a step (p >= THRESHOLD), bad at the first step
it doubts, nothing after that. It judges no final answer (it reads each <think> step at its end; the answer has no
such place), so the person always judges the answer. Scores come from inspect/process.py (one pass per batch) and are
kept per run and response while the run's saved model is unchanged: a key press re-reads them, it does not re-score.
"""
from __future__ import annotations

import threading

from rloo_studio.core.errors import DataError
from rloo_studio.core.workspace import Workspace
from rloo_studio.inspect.process import THRESHOLD, _mtime, load_process_scorer, score_steps
from rloo_studio.label import steps as S
from rloo_studio.runs.catalog import adapter_dir, scorer_runs

NONE = "none"  # the run choice that shows no model
POOL = 256
"""How many unlabeled responses (the next ones in the queue's own order) the least-certain order ranks: the model
scores each once; a workspace of a million responses is not scored for one key press."""
UNCERTAIN = "uncertain"  # the queue order that asks the model (beside label.steps.ORDERS)
ORDERS = {**S.ORDERS, UNCERTAIN: "the model's least certain first"}

_SCORES: dict[tuple, dict[int, list[float] | None]] = {}  # (run, its saved model's time) -> {response: p per step}
_LOCK = threading.Lock()


def runs(ws: Workspace) -> list[tuple[str, str]]:
    """The choices of model: (none), then the trained process reward runs, newest first."""
    return [("(none)", NONE)] + scorer_runs(ws, ("process",))


def newest(ws: Workspace) -> str:
    """The newest process reward run, or NONE."""
    c = runs(ws)
    return c[1][1] if len(c) > 1 else NONE


def scores(ws: Workspace, run_id: str, response_ids: list[int]) -> dict[int, list[float] | None]:
    """{response: P(right) of each <think> step} under the run's model (None: the model reads its steps otherwise,
    a step without a token of its own, so no step-by-step verdict). Scored once per run and response."""
    key = (run_id, _mtime(adapter_dir(ws, run_id)))
    with _LOCK:
        kept = _SCORES.setdefault(key, {})
        for k in [k for k in _SCORES if k != key and k[0] == run_id]:
            del _SCORES[k]  # the run saved a new model: its old scores go
        todo = [int(i) for i in dict.fromkeys(response_ids) if int(i) not in kept]
    if todo:
        rows = {r[0]: (r[1], r[2]) for r in ws.query(
            f"SELECT r.id, p.text, r.text FROM responses r JOIN prompts p ON p.id = r.prompt_id "
            f"WHERE r.id IN ({','.join('?' * len(todo))})", todo)}
        todo = [i for i in todo if i in rows]
        got = score_steps(load_process_scorer(ws, run_id), [rows[i] for i in todo]) if todo else []
        with _LOCK:
            for i, g in zip(todo, got):
                ps = [s["p_correct"] for s in g["steps"]]
                kept[i] = ps if len(ps) == len(S.response_steps(rows[i][1])) else None
    return {int(i): kept.get(int(i)) for i in response_ids}


def proposal(view: dict, probs: list[float] | None) -> list[tuple[int, int, float]]:
    """The model's verdicts from the step to label on: [(step, verdict, p)], good while it trusts a step, then bad at
    the first it doubts; [] when the next to label is the answer (or nothing), or the model has no step verdicts."""
    step = view["step"]
    if probs is None or step is None or step >= view["total_steps"]:
        return []
    out = []
    for k in range(step, view["total_steps"]):
        bad = probs[k] < THRESHOLD
        out.append((k, S.VERDICTS["bad" if bad else "good"], float(probs[k])))
        if bad:
            break
    return out


def uncertainty(probs: list[float] | None) -> float:
    """How sure the model is of a response: the distance from THRESHOLD of its least sure step, up to and including
    the first one it doubts (the steps a person labels). Smaller is less certain; 1.0 when it has no verdict."""
    if not probs:
        return 1.0
    doubt = next((k for k, p in enumerate(probs) if p < THRESHOLD), len(probs) - 1)
    return min(abs(p - THRESHOLD) for p in probs[:doubt + 1])


def least_certain(ws: Workspace, run_id: str, annotator: str, source: str = "", order: str = "sources") -> list[int]:
    """The next POOL responses the annotator has not labeled (in the queue's `order`), the model's least certain
    first (uncertainty; ties keep the queue's order)."""
    ids = S.unlabeled(ws, annotator, source, order, POOL)
    got = scores(ws, run_id, ids)
    return sorted(ids, key=lambda i: uncertainty(got[i]))


def check_run(ws: Workspace, run_id: str) -> str | None:
    """The run to show (None: no model): a trained process reward run of this workspace, in words if not."""
    if not run_id or run_id == NONE:
        return None
    if run_id not in [v for _, v in runs(ws)]:
        raise DataError(f"Process reward run {run_id} is not in this workspace (deleted?). Choose another, or "
                        "(none).")
    return run_id
