"""Readers of the step labels (label/steps.py writes them): the labeled prefixes that training and export take, and
agreement between a person and the rollouts. Each reader says whose labels it reads; writes nothing.

A response's final answer is labeled as one more step, at index n (its number of <think> steps). The steps' readers
stop before it: training, export and the step figures see the <think> steps only (a process reward model reads a
step at its end inside the reasoning; the answer has no such place, so training ignores the answer's label rather
than misread it as a step). labeled_responses gives it apart, as `answer_label`.
"""
from __future__ import annotations

import json
from itertools import groupby

from rloo_studio.core.errors import DataError
from rloo_studio.core.thinking import parse
from rloo_studio.core.workspace import Workspace
from rloo_studio.label.store import IMPORT_ANNOTATOR, ROLLOUTS_ANNOTATOR


def response_steps(text: str) -> list[str]:
    """The texts of a response's <think> steps (blank-line split), in order."""
    return [s.text for s in parse(text, "blank").steps]


def _who_sql(who: str) -> tuple[str, tuple]:
    if who == "all":
        return "", ()
    if who == "people":
        return "AND an.name NOT IN (?, ?)", (IMPORT_ANNOTATOR, ROLLOUTS_ANNOTATOR)
    if who == "rollouts":
        return "AND an.name = ?", (ROLLOUTS_ANNOTATOR,)
    if not (who or "").strip():
        raise DataError("Say whose step labels: 'all', 'people', 'rollouts' or an annotator's name.")
    return "AND an.name = ?", (who.strip(),)


def any_labels(ws: Workspace) -> bool:
    """Whether the workspace holds any step label in force (by anyone)."""
    return bool(ws.query("SELECT 1 FROM step_labels WHERE superseded = 0 LIMIT 1"))


def labeled_responses(ws: Workspace, who: str = "all", accepted: bool = True) -> list[dict]:
    """One entry per (response, annotator) whose labels start at the first step: {response_id, prompt, prompt_extra,
    response, steps (all its <think> steps), labels (the labeled prefix: up to and including the first bad step, or
    as far as labeled without a gap), soft, accepted (per label: taken from a process reward model's verdict),
    answer_label (the final answer's verdict, None: not labeled), annotator}. who: 'all', 'people' (neither the
    import nor the rollouts), 'rollouts', or an annotator's name. accepted=False leaves the labels accepted from a
    model out (the prefix ends before the first): a model's figures are not measured on the labels it proposed."""
    cond, args = _who_sql(who)
    own = "" if accepted else "AND sl.accepted = 0"
    cur = ws.connect().execute(
        f"""SELECT sl.response_id, an.name, sl.step, sl.verdict, sl.soft, sl.accepted, r.text, p.text AS prompt,
                   p.extra
            FROM step_labels sl JOIN annotators an ON an.id = sl.annotator_id JOIN responses r ON r.id = sl.response_id
            JOIN prompts p ON p.id = r.prompt_id WHERE sl.superseded = 0 {own} {cond}
            ORDER BY sl.response_id, an.name, sl.step""", args)
    out = []
    for (rid, name), rows in groupby(cur, key=lambda r: (r["response_id"], r["name"])):
        rows = list(rows)
        steps = response_steps(rows[0]["text"])
        labels, soft, took = [], [], []
        for r in rows:
            if r["step"] != len(labels) or r["step"] >= len(steps):
                break  # a gap (or the answer, at index len(steps)): the prefix ends here
            labels.append(r["verdict"])
            soft.append(r["soft"])
            took.append(bool(r["accepted"]))
            if r["verdict"] == -1:
                break
        answer = next((r["verdict"] for r in rows if r["step"] == len(steps)), None)
        if labels:
            out.append({"response_id": rid, "prompt": rows[0]["prompt"],
                        "prompt_extra": json.loads(rows[0]["extra"] or "{}"), "response": rows[0]["text"],
                        "steps": steps, "labels": labels, "soft": soft, "accepted": took, "answer_label": answer,
                        "annotator": name})
    return out


def agreement(ws: Workspace) -> dict:
    """Where a person and the rollouts labeled the same step of a response: {steps (how many), share (of those, where
    both say right (good or neutral) or both say bad; None when none), people: [{name, steps, share}]}. A person's
    labels accepted from a model are left out: they are the model's judgement, not the person's."""
    rows = ws.query(
        """SELECT an.name, (p.verdict >= 0) = (r.verdict >= 0) AS same FROM step_labels p
           JOIN annotators an ON an.id = p.annotator_id
           JOIN step_labels r ON r.response_id = p.response_id AND r.step = p.step AND r.superseded = 0
                AND +r.annotator_id = (SELECT id FROM annotators WHERE name = :rollouts)
           WHERE p.superseded = 0 AND p.accepted = 0 AND an.name NOT IN (:rollouts, :imported) ORDER BY an.name""",
        {"rollouts": ROLLOUTS_ANNOTATOR, "imported": IMPORT_ANNOTATOR})
    people = []
    for name, rs in groupby(rows, key=lambda r: r["name"]):
        same = [r["same"] for r in rs]
        people.append({"name": name, "steps": len(same), "share": sum(same) / len(same)})
    n = sum(p["steps"] for p in people)
    return {"steps": n, "share": sum(p["share"] * p["steps"] for p in people) / n if n else None, "people": people}
