"""Who labeled what: each person's counts, and agreement between annotators (Cohen's kappa, raw).

Reads the labels the store wrote; writes nothing.
"""
from __future__ import annotations

from collections import Counter
from itertools import combinations

from rloo_studio.core.workspace import Workspace
from rloo_studio.label.store import IMPORT_ANNOTATOR, day_start


def annotator_stats(ws: Workspace, today: bool = False) -> list[dict]:
    """Each person's current labels and skips (imported labels left out), most labels first; `today` adds
    each person's current labels given since local midnight."""
    since = "SUM(l.choice != 'skip' AND l.created >= ?) AS today, " if today else ""
    rows = ws.query(
        f"SELECT a.name, SUM(l.choice != 'skip') AS labels, {since}SUM(l.choice = 'skip') AS skips FROM labels l "
        "JOIN annotators a ON a.id = l.annotator_id WHERE l.superseded = 0 AND a.name != ? "
        "GROUP BY l.annotator_id ORDER BY labels DESC, a.name", ((day_start(),) if today else ()) + (IMPORT_ANNOTATOR,))
    return [dict(r) for r in rows]


def cohen_kappa(x: list[str], y: list[str]) -> float:
    n = len(x)
    if n == 0:
        return float("nan")
    po = sum(a == b for a, b in zip(x, y)) / n
    cx, cy = Counter(x), Counter(y)
    pe = sum(cx[k] * cy[k] for k in set(cx) | set(cy)) / (n * n)
    return 1.0 if pe == 1 else (po - pe) / (1 - pe)


def agreement(ws: Workspace, include_import: bool = False) -> dict:
    """Agreement over pairs labeled by 2+ annotators (skips left out).

    Two annotators: Cohen's kappa and raw agreement. More: raw agreement averaged over all
    annotator pairs that share pairs.
    """
    rows = ws.query(
        "SELECT l.pair_id, a.name, l.choice FROM labels l JOIN annotators a ON a.id = l.annotator_id "
        "WHERE l.superseded = 0 AND l.choice != 'skip'" + ("" if include_import else " AND a.name != ?"),
        () if include_import else (IMPORT_ANNOTATOR,))
    by_pair: dict[int, dict[str, str]] = {}
    for r in rows:
        by_pair.setdefault(r["pair_id"], {})[r["name"]] = r["choice"]
    names = sorted({n for d in by_pair.values() for n in d})
    pairs_of = {}
    for a, b in combinations(names, 2):
        shared = [(d[a], d[b]) for d in by_pair.values() if a in d and b in d]
        if shared:
            pairs_of[(a, b)] = shared
    out = {"annotators": names, "pairs": [], "kappa": None, "raw": None, "shared_pairs": 0}
    for (a, b), shared in pairs_of.items():
        x, y = [s[0] for s in shared], [s[1] for s in shared]
        raw = sum(i == j for i, j in shared) / len(shared)
        out["pairs"].append({"a": a, "b": b, "shared": len(shared), "raw": raw, "kappa": cohen_kappa(x, y)})
    if out["pairs"]:
        tot = sum(p["shared"] for p in out["pairs"])
        out["shared_pairs"] = tot
        out["raw"] = sum(p["raw"] * p["shared"] for p in out["pairs"]) / tot
        if len(names) == 2:
            out["kappa"] = out["pairs"][0]["kappa"]
    return out
