"""`eval-prm` and `rs.eval_prm`: a process reward run measured by ProcessBench's rule (inspect/processbench.py) on the
workspace's step labels, on the run's own held-out rows (the rows its held-out figures were computed on), or on a file
of step labels (ProcessBench, stepwise, PRM800K)."""
from __future__ import annotations

import json
from pathlib import Path

from rloo_studio.core.errors import DataError
from rloo_studio.inspect import processbench
from rloo_studio.prm.data import SPLIT_FILE, truth


def held_out_rows(ws, run_id: str) -> list[dict]:
    """The rows a process reward run held out (its steps.jsonl), as labeled responses ({prompt, response, steps,
    labels}), each up to its first wrong step as the run's held-out figures judge it."""
    from rloo_studio.label.steps import response_steps

    path = ws.run_dir(run_id) / SPLIT_FILE
    if not path.exists():
        raise DataError(f"Run {run_id} kept no record of its held-out rows ({SPLIT_FILE}).")
    rows = [r for r in map(json.loads, path.read_text().splitlines()) if r.get("split") == "held_out"]
    if not rows:
        raise DataError(f"Run {run_id} held out no rows (its eval_fraction held out no prompt).")
    return [{"prompt": r["prompt"], "response": r["response"], "steps": response_steps(r["response"]),
             "labels": [1 if t else -1 for t in ts]} for r, ts in zip(rows, truth(rows))]


def eval_prm(ws, run_id: str, file: str | Path | None = None, threshold: float | None = None,
             held_out: bool = False, who: str = "all", progress=None) -> dict:
    """ProcessBench's figures (processbench.KEYS) of a process reward run on the workspace's step labels (whose:
    `who`, as label.steps.labeled_responses), on its own held-out rows (`held_out`; the rows longer than the run's
    max_length are left out, as training left them out), or on a file of step labels (`file`). A run that is not a
    process reward run, a missing file or a file of another shape: a DataError, before any model is loaded."""
    from rloo_studio.runs.catalog import adapter_dir, scorer_run

    threshold = processbench.check_threshold(threshold)
    rid = scorer_run(ws, run_id, ("process",))["id"]
    if file is not None and held_out:
        raise DataError("Evaluate on a file or on the run's held-out rows, not both.")
    max_length = None
    if file is not None:
        rows = processbench.file_rows(file)
    elif held_out:
        from rloo_studio.core.models import run_setting

        rows, max_length = held_out_rows(ws, rid), run_setting(adapter_dir(ws, rid), "max_length", None)
    else:
        from rloo_studio.label.steps import labeled_responses

        rows = labeled_responses(ws, who)
        if not rows:
            raise DataError("No step labels yet: label steps in the Label tab's step mode, import a stepwise, "
                            "ProcessBench or PRM800K file, or make step labels from rollouts on the Process reward "
                            "tab.")
    from rloo_studio.inspect.process import load_process_scorer

    return processbench.evaluate(load_process_scorer(ws, rid), rows, threshold, progress, max_length)
