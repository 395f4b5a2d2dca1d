"""Held-out accuracy of a reward run per kind of pair and per source (blind.py says what a kind is).

Scores each held-out pair the reward run evaluated (the ones that fit max_length: TRL drops the
others) with the trained model through scoring.final_scores, tokenized exactly as TRL's
RewardTrainer tokenizes an explicit-prompt pair (core.reward_input.reward_ids), and writes
held_out_breakdown.json into the run folder.
"""
from __future__ import annotations

import json
from pathlib import Path

from rloo_studio.core.reward_input import reward_ids
from rloo_studio.core.thinking import pair_kind
from rloo_studio.reward import blind

FILE = "held_out_breakdown.json"


def _sources(ws, pair_ids: list) -> dict:
    ids = sorted({int(p) for p in pair_ids if p is not None})
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    return {r["id"]: r["source"] for r in ws.query(f"SELECT id, source FROM pairs WHERE id IN ({marks})", ids)}


def held_out_breakdown(ws, model, tok, held: list[dict], max_length: int, batch_size: int = 16,
                       start: str = "answer") -> dict:
    """blind.breakdown of the held-out rows (pairs.jsonl shape: prompt already chat-formatted). `start`:
    where the chat template's generation prompt leaves a response (thinking.Template.start), so that a
    response the template opened <think> for counts as reasoning even without a tag."""
    from rloo_studio.inspect.scoring import Scorer, final_scores

    rows, ids = [], []
    for r in held:
        c, j = reward_ids(tok, r["prompt"], r["chosen"]), reward_ids(tok, r["prompt"], r["rejected"])
        if max(len(c), len(j)) > max_length:
            continue  # TRL dropped it: not part of the held-out accuracy either
        rows.append(r)
        ids += [c, j]
    was_training = model.training
    model.eval()
    try:
        scores = final_scores(Scorer(model, tok, "", True), ids, batch_size)
    finally:
        model.train(was_training)
    src = _sources(ws, [r.get("pair_id") for r in rows])
    return blind.breakdown([
        {"pair_id": r.get("pair_id"), "kind": pair_kind(r["chosen"], r["rejected"], start),
         "source": src.get(r.get("pair_id"), "unknown"), "chosen_score": scores[2 * i],
         "rejected_score": scores[2 * i + 1]}
        for i, r in enumerate(rows)
    ])


def write(run_dir: Path, b: dict) -> None:
    (Path(run_dir) / FILE).write_text(json.dumps(b, indent=1))


def read(run_dir: Path) -> dict | None:
    """The run's breakdown, or None (a run from before it existed, or one that failed early)."""
    try:
        return json.loads((Path(run_dir) / FILE).read_text())
    except (OSError, ValueError):
        return None
