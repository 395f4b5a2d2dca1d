"""A response scored by a run, whichever scorer its kind gives (runs.jobs.JobKind.scorer): an outcome reward model's
total and per-step prefix scores (inspect/scoring.py), or a process reward model's p(right) per step
(inspect/process.py). The one place that chooses between them; both load torch, only when asked."""
from __future__ import annotations

from rloo_studio.runs import catalog


def score_json(ws, run_id: str, prompt: str, response: str, split: str = "blank", **outcome) -> dict:
    """What `score --json` prints, the /score API returns and rs.score gives. `outcome`: the outcome scorer's own
    options (trust_remote_code, enable_thinking)."""
    run = catalog.scorer_run(ws, run_id)
    if catalog.scorer_of(ws, run["id"]) == "process":
        from rloo_studio.inspect.process import score_json as process_json

        return process_json(ws, run["id"], prompt, response, split)
    from rloo_studio.inspect.scoring import score_json as outcome_json

    return outcome_json(ws, run["id"], None, prompt, response, split, **outcome)
