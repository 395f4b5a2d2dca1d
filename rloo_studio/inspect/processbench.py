"""A process reward model measured on ProcessBench's terms (Zheng et al. 2024), on a labeled set: the workspace's step
labels, a run's own held-out rows, or a file of step labels (ProcessBench's problem / steps / label, the stepwise
shape, PRM800K's JSONL: label/checking.py reads them as the import does). prm/evaluate.py is `eval-prm`'s core.

ProcessBench's rule: the model names the index of the first step it flags (p_correct below the threshold), or -1 when
it flags none; a row is right when that is exactly the index of its first wrong step (-1: a correct row). The figures
are the accuracy on the erroneous rows, on the correct rows, and F1, their harmonic mean. They are computed by
inspect/process.py step_figures, the function the training's held-out figures (prm/job.py: eval_processbench_f1) use,
over the same reading of each step (process.judged), so a run's held-out F1 and this evaluation of its held-out rows
agree. A row is judged on its labeled steps up to the first wrong one (a workspace response labeled only in part,
without a wrong step, is a correct row judged on the steps labeled); neutral verdicts count right.
"""
from __future__ import annotations

from pathlib import Path

from rloo_studio.core.errors import DataError

KEYS = ("f1", "erroneous_accuracy", "correct_accuracy", "threshold", "n", "erroneous", "correct", "left_out")
"""What eval_prm returns (and `eval-prm --json` prints): F1; the share of erroneous rows whose first wrong step the
model names exactly; the share of correct rows where it flags no step; the threshold; the rows judged (n = erroneous
+ correct); the rows left out (steps the tokenizer merges, longer than the model reads)."""


def figures(step_figures: dict, threshold: float, left_out: int = 0) -> dict:
    """ProcessBench's figures (KEYS) from inspect.process.step_figures' output."""
    f = step_figures
    return {"f1": f["processbench_f1"], "erroneous_accuracy": f["first_wrong_found"],
            "correct_accuracy": f["correct_called_correct"], "threshold": threshold,
            "n": f["erroneous_responses"] + f["correct_responses"], "erroneous": f["erroneous_responses"],
            "correct": f["correct_responses"], "left_out": left_out}


def check_threshold(threshold) -> float:
    from rloo_studio.inspect.process import THRESHOLD

    if threshold is None:
        return THRESHOLD
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 < threshold < 1:
        raise DataError(f"The threshold is a probability between 0 and 1 (a step below it is flagged), not "
                        f"{threshold!r}.")
    return float(threshold)


def file_rows(path: str | Path) -> list[dict]:
    """A file's step-labeled rows ({prompt, response, steps, labels}), each checked as the import checks it (a
    DataError naming the line and the field otherwise); a file of another shape is refused."""
    from rloo_studio.label.checking import STEP_KINDS, records
    from rloo_studio.label.importing import KIND_WORDS
    from rloo_studio.label.steps import response_steps

    p = Path(path)
    kind, _, rows = records(p)
    if kind not in STEP_KINDS:
        raise DataError(f"{p.name} holds {KIND_WORDS[kind]}; eval-prm reads step labels: a ProcessBench file "
                        "(problem, steps, label), a stepwise file (prompt, completions, labels) or PRM800K's JSONL.")
    out = [{"prompt": r.prompt, "response": r.responses[0], "steps": response_steps(r.responses[0]),
            "labels": r.steps} for r in rows if r.steps]
    if not out:
        raise DataError(f"{p.name}: no row has a labeled step.")
    return out


def evaluate(scorer, rows: list[dict], threshold: float | None = None, progress=None,
             max_length: int | None = None) -> dict:
    """ProcessBench's figures (KEYS) of a process scorer on labeled responses ({prompt, response, steps, labels});
    rows longer than the model reads, or than `max_length` tokens, are left out (and counted)."""
    from rloo_studio.inspect.process import judged, step_figures

    th = check_threshold(threshold)
    truth, probs, left = judged(scorer, rows, progress, leave_long=True, max_length=max_length)
    return figures(step_figures(truth, probs, th), th, left)


def summary(out: dict, label: str) -> str:
    """A few lines in words for the CLI."""
    pct = lambda x: "—" if x is None else f"{x:.1%}"  # noqa: E731
    f1 = "undefined (it needs erroneous and correct rows)" if out["f1"] is None else f"{out['f1']:.3f}"
    lines = [f"ProcessBench F1 {f1} on {out['n']:,} rows ({label}, a step flagged below p = {out['threshold']:g})",
             f"  erroneous rows: {pct(out['erroneous_accuracy'])} with the first wrong step named exactly "
             f"({out['erroneous']:,} rows)",
             f"  correct rows:   {pct(out['correct_accuracy'])} with no step flagged ({out['correct']:,} rows)"]
    if out["left_out"]:
        lines.append(f"  left out: {out['left_out']:,} rows (steps the tokenizer merges, or longer than the model "
                     "reads)")
    return "\n".join(lines)
