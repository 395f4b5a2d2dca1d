"""Who labeled what: each person's counts, and agreement between annotators (Cohen's kappa, raw); for step labels,
each person's counts (own verdicts apart from those accepted from a model) and their agreement with the process
reward model whose verdicts the page showed (the model's p is stored with each label, label/steps.py).

Reads the labels the stores wrote; writes nothing.
"""
from __future__ import annotations

from collections import Counter
from itertools import combinations, groupby

from rloo_studio.core.workspace import Workspace
from rloo_studio.label.steps import count_steps
from rloo_studio.label.store import IMPORT_ANNOTATOR, ROLLOUTS_ANNOTATOR, day_start


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


# -- step labels ---------------------------------------------------------------------------------------------------

_PEOPLE_STEPS = """SELECT an.name, sl.response_id, sl.step, sl.verdict, sl.accepted, sl.model_p, IFNULL(rs.n, 0) AS n
    FROM step_labels sl JOIN annotators an ON an.id = sl.annotator_id
    LEFT JOIN response_steps rs ON rs.response_id = sl.response_id
    WHERE sl.superseded = 0 AND an.name NOT IN (?, ?) ORDER BY an.name, sl.response_id, sl.step"""


def _people_steps(ws: Workspace):
    """People's current step labels with their response's number of steps (n: the answer's index), by person."""
    count_steps(ws)  # responses written since the last count (an import, a rollout) get their number of steps
    return groupby(ws.query(_PEOPLE_STEPS, (IMPORT_ANNOTATOR, ROLLOUTS_ANNOTATOR)), key=lambda r: r["name"])


def step_stats(ws: Workspace) -> list[dict]:
    """Each person's current step labels, most first: {name, steps (their own verdicts on <think> steps), answers
    (final answers they judged), accepted (step verdicts taken from a process reward model with one key: theirs, not
    their own judgement), responses (responses they labeled)}."""
    out = []
    for name, rows in _people_steps(ws):
        rows = list(rows)
        out.append({"name": name, "steps": sum(not r["accepted"] and r["step"] < r["n"] for r in rows),
                    "answers": sum(r["step"] >= r["n"] for r in rows), "accepted": sum(r["accepted"] for r in rows),
                    "responses": len({r["response_id"] for r in rows})})
    return sorted(out, key=lambda s: (-(s["steps"] + s["accepted"] + s["answers"]), s["name"]))


def model_agreement(ws: Workspace, threshold: float = 0.5) -> list[dict]:
    """Person vs process reward model, on each person's own step verdicts given while the model's were on the page
    (accepted ones left out): {name, steps, agree (share where the model, right at p >= threshold, says the same:
    good or neutral = right), responses (those labeled by themselves from the first step to their first bad one or
    the last step, every step with the model's p), first_agree (share of those where the model's first doubted step
    is the person's first bad one, or both none)}. Only people with such labels."""
    out = []
    for name, rows in _people_steps(ws):
        seen = [r for r in rows if r["step"] < r["n"] and not r["accepted"] and r["model_p"] is not None]
        if not seen:
            continue
        same = [(r["verdict"] >= 0) == (r["model_p"] >= threshold) for r in seen]
        firsts = []
        for _, resp in groupby(seen, key=lambda r: r["response_id"]):
            resp = list(resp)
            person = next((k for k, r in enumerate(resp) if r["verdict"] < 0), None)
            whole = [r["step"] for r in resp] == list(range(len(resp))) and (person is not None or
                                                                             len(resp) == resp[0]["n"])
            if whole:
                model = next((k for k, r in enumerate(resp) if r["model_p"] < threshold), None)
                firsts.append(model == person)
        out.append({"name": name, "steps": len(same), "agree": sum(same) / len(same), "responses": len(firsts),
                    "first_agree": sum(firsts) / len(firsts) if firsts else None})
    return out
