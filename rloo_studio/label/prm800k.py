"""PRM800K's own JSONL (https://github.com/openai/prm800k) -> a stepwise row: the problem, one response of the steps
the labeler followed, and their ratings.

A line: {question: {problem, ground_truth_answer, pre_generated_steps?, ...}, label: {steps: [{completions: [{text,
rating, flagged}], chosen_completion, human_completion}], finish_reason}, labeler, timestamp, generation, ...}.

The response follows the solution's path as the dataset's README rebuilds it: at each step the chosen completion, or
the labeler's own step (human_completion) where none was chosen. The path ends where a step has neither: in phase 2
that is the step where the labeler found the first error (finish_reason found_error: its completions are rated, none
chosen), and the completion rated -1 there is the response's last step, labeled wrong (the pre-generated step when
one of the -1 completions is it, else the first of them). The path also ends at its first step rated -1.

Ratings become the store's verdicts (label/steps.py, PRM800K's own): 1 good, 0 neutral (kept as neutral, 0: training
and the figures count it right), -1 bad; a human completion without a rating is good (+1: labelers wrote their own
step only as a right one). The labels stop before a step with no rating (null) or one the labeler flagged as
unsure: the steps before it stay labeled, the rest of the response unlabeled. A line whose path has no labeled step
(no steps: the labeler gave up or reported a bad problem at once) is checked and then not stored: the import counts
it. The prompt keeps the ground-truth answer as its `answer` column (what the answer-key reward reads); the per-labeling
columns (labeler, timestamp, generation, ...) are not kept.
"""
from __future__ import annotations

import json

from rloo_studio.core.errors import DataError
from rloo_studio.label.shapes import Row, step_text, steps_row, text

PRM800K = ("question", "label")
RATINGS = (-1, 0, 1, None)


def _object(loc: str, field: str, v) -> dict:
    if isinstance(v, str):
        try:
            v = json.loads(v)  # a CSV cell
        except ValueError:
            pass
    if not isinstance(v, dict):
        raise DataError(f"{loc}, field '{field}': expected an object, got {type(v).__name__}")
    return v


def _list(loc: str, field: str, v, what: str) -> list:
    if v is None:
        return []
    if not isinstance(v, (list, tuple)):
        raise DataError(f"{loc}, field '{field}': expected a list of {what}, got {type(v).__name__}")
    return list(v)


def _completion(loc: str, field: str, c) -> tuple[object, int | None, bool]:
    """(text as given, rating, flagged) of a completion; the text is checked when the path takes it."""
    c = _object(loc, field, c)
    rating = c.get("rating")
    if isinstance(rating, float) and rating.is_integer():
        rating = int(rating)
    if isinstance(rating, bool) or rating not in RATINGS:
        raise DataError(f"{loc}, field '{field}.rating': expected -1, 0, 1 or null, got {rating!r}")
    flagged = c.get("flagged")
    if flagged not in (None, True, False):
        raise DataError(f"{loc}, field '{field}.flagged': expected true, false or null, got {flagged!r}")
    return c.get("text"), rating, bool(flagged)


def _human(loc: str, field: str, v) -> tuple[object, int | None, bool]:
    if isinstance(v, str):
        return v, 1, False
    t, rating, flagged = _completion(loc, field, v)
    return t, 1 if rating is None else rating, flagged


def _taken(loc: str, k: int, step, pre: list) -> tuple[str, tuple[object, int | None, bool]] | None:
    """(field, completion) the path takes at step k, or None where it ends before the step."""
    where = f"label.steps[{k}]"
    step = _object(loc, where, step)
    completions = [_completion(loc, f"{where}.completions[{i}]", c)
                   for i, c in enumerate(_list(loc, f"{where}.completions", step.get("completions"), "completions"))]
    chosen = step.get("chosen_completion")
    if isinstance(chosen, float) and chosen.is_integer():
        chosen = int(chosen)
    if chosen is not None:
        if isinstance(chosen, bool) or not isinstance(chosen, int) or not 0 <= chosen < len(completions):
            raise DataError(f"{loc}, field '{where}.chosen_completion': {chosen!r} is not one of the step's "
                            f"{len(completions)} completions (indexes 0 to {len(completions) - 1}, or null)")
        return f"{where}.completions[{chosen}].text", completions[chosen]
    if step.get("human_completion") is not None:
        return f"{where}.human_completion", _human(loc, f"{where}.human_completion", step["human_completion"])
    bad = [i for i, c in enumerate(completions) if c[1] == -1]  # the error the labeler found here
    if not bad:
        return None
    mine = [i for i in bad if k < len(pre) and completions[i][0] == pre[k]]
    i = (mine or bad)[0]
    return f"{where}.completions[{i}].text", completions[i]


def prm800k_row(loc: str, r: dict) -> Row:
    """One line of PRM800K: the problem (its ground-truth answer as the prompt's `answer`), the response of the path
    the labeler followed, and the verdicts of its first steps (this module's docstring)."""
    for f in PRM800K:
        if f not in r:
            raise DataError(f"{loc}: missing field '{f}'")
    q, lab = _object(loc, "question", r["question"]), _object(loc, "label", r["label"])
    prompt = text(loc, "question.problem", q.get("problem"))
    if "steps" not in lab:
        raise DataError(f"{loc}: missing field 'label.steps'")
    steps = _list(loc, "label.steps", lab["steps"], "steps")
    pre = q.get("pre_generated_steps")
    pre = pre if isinstance(pre, list) else []
    texts, verdicts, labeling = [], [], True
    for k, step in enumerate(steps):
        taken = _taken(loc, k, step, pre)
        if taken is None:
            break
        field, (t, rating, flagged) = taken
        texts.append(step_text(loc, field, t))
        labeling = labeling and rating is not None and not flagged
        if labeling:
            verdicts.append(rating)
        if rating == -1:
            break
    answer = q.get("ground_truth_answer")
    extra = {"answer": answer} if isinstance(answer, str) and answer.strip() else {}
    if not verdicts:  # nothing labeled: checked, not stored (importing.py counts it)
        return Row(prompt, [""], extra, False, [], 0)
    return steps_row(prompt, texts, verdicts, extra)
