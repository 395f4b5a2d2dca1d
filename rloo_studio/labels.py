"""The preference store: labeled pairs as TRL-ready rows.

(The Label tab's import / queue / undo / export build on this module.)
"""
from __future__ import annotations

from collections import Counter

from .workspace import Workspace


def preference_pairs(ws: Workspace) -> list[dict]:
    """One {prompt, chosen, rejected} row per pair whose current labels prefer one side.

    Each annotator's latest label counts once; the majority of 'a' vs 'b' decides; pairs with
    only ties/skips, or an even split, are left out.
    """
    rows = ws.query(
        """SELECT l.pair_id, l.choice, p.text AS prompt, ra.text AS a, rb.text AS b, pr.source
           FROM labels l JOIN pairs pr ON pr.id = l.pair_id JOIN prompts p ON p.id = pr.prompt_id
           JOIN responses ra ON ra.id = pr.response_a JOIN responses rb ON rb.id = pr.response_b
           WHERE l.superseded = 0 ORDER BY l.pair_id"""
    )
    votes: dict[int, Counter] = {}
    info: dict[int, dict] = {}
    for r in rows:
        votes.setdefault(r["pair_id"], Counter())[r["choice"]] += 1
        info[r["pair_id"]] = {"prompt": r["prompt"], "a": r["a"], "b": r["b"], "source": r["source"]}
    out = []
    for pid, v in votes.items():
        if v["a"] == v["b"]:
            continue
        d = info[pid]
        win, lose = (d["a"], d["b"]) if v["a"] > v["b"] else (d["b"], d["a"])
        out.append({"pair_id": pid, "prompt": d["prompt"], "chosen": win, "rejected": lose})
    return out


def counts(ws: Workspace) -> dict:
    r = ws.query(
        """SELECT COUNT(*) AS pairs,
                  SUM(EXISTS (SELECT 1 FROM labels l WHERE l.pair_id = pairs.id AND l.superseded = 0)) AS labeled
           FROM pairs"""
    )[0]
    return {"pairs": r["pairs"] or 0, "labeled": r["labeled"] or 0}


def flag_for_relabel(ws: Workspace, pair_id: int, reason: str) -> None:
    """Send a pair back to the Label tab (shown first under the 'flagged' filter)."""
    with ws.transaction() as con:
        if con.execute("UPDATE pairs SET flag=? WHERE id=?", (reason or "re-label", pair_id)).rowcount != 1:
            raise KeyError(f"no pair {pair_id}")
