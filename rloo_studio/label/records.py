"""The records view of the preference store: every pair with its current labels, searched, filtered,
sorted and paged in one query; relabel a pair from its row.

Filters: text in the prompt (or either response), source, annotator (pairs that person labeled),
label (a current label of that kind by anyone, or by the chosen annotator; 'unlabeled': none), flagged,
and a list of pair ids (e.g. the pairs a trained reward model disagrees with: inspect.dataset.disagreements,
the same scores as the Inspect tab's dataset view).
"""
from __future__ import annotations

from dataclasses import dataclass

from rloo_studio.label import store as L
from rloo_studio.core.errors import DataError
from rloo_studio.core.workspace import Workspace

LABELS = ("any", "unlabeled", "a", "b", "tie", "skip")
FLAGGED = ("any", "flagged", "not flagged")
SORTS = {
    "newest": "p.created DESC, p.id DESC",
    "oldest": "p.created, p.id",
    "prompt": "pr.text COLLATE NOCASE, p.id",
    "most labels": "n_labels DESC, p.id",
    "flagged first": "p.flag IS NULL, p.id DESC",
}
MAX_PER_PAGE = 200


@dataclass
class Page:
    rows: list[dict]  # pair_id, prompt, a, b, source, flag, labels ('name: choice; ...'), created
    total: int  # pairs that match
    page: int
    pages: int


def _choice(value: str, allowed, what: str) -> str:
    v = (value or "").strip() or allowed[0]
    if v not in allowed:
        raise DataError(f"Unknown {what} {v!r}: choose one of {', '.join(allowed)}.")
    return v


def query(ws: Workspace, search: str = "", source: str = "", annotator: str = "", label: str = "any",
          flagged: str = "any", sort: str = "newest", page: int = 1, per_page: int = 20,
          pair_ids: list[int] | None = None) -> Page:
    """One page of pairs that match every filter (empty filters match all), in the chosen order.
    pair_ids: only these pairs (e.g. inspect.dataset.disagreements(ws, reward_run))."""
    label = _choice(label, LABELS, "label filter")
    flagged = _choice(flagged, FLAGGED, "flagged filter")
    sort = (sort or "").strip() or "newest"
    if sort not in SORTS:
        raise DataError(f"Unknown order {sort!r}: choose one of {', '.join(SORTS)}.")
    try:
        page, per_page = max(1, int(page or 1)), int(20 if per_page in (None, "") else per_page)
    except (TypeError, ValueError):
        raise DataError("The page must be a whole number.") from None
    if not 1 <= per_page <= MAX_PER_PAGE:
        raise DataError(f"Rows per page must be between 1 and {MAX_PER_PAGE}.")
    where, args = ["1"], {}
    text = (search or "").strip()
    if text:
        where.append("(instr(lower(pr.text), lower(:q)) OR instr(lower(ra.text), lower(:q)) "
                     "OR instr(lower(rb.text), lower(:q)))")
        args["q"] = text
    if (source or "").strip():
        where.append("p.source = :source")
        args["source"] = source.strip()
    who = (annotator or "").strip()
    cur = "SELECT 1 FROM labels l JOIN annotators an ON an.id = l.annotator_id WHERE l.pair_id = p.id AND l.superseded = 0"
    if who:
        where.append(f"EXISTS ({cur} AND an.name = :who)")
        args["who"] = who
    if label == "unlabeled":
        where.append(f"NOT EXISTS ({cur}{' AND an.name = :who' if who else ''})")
    elif label != "any":
        where.append(f"EXISTS ({cur} AND l.choice = :label{' AND an.name = :who' if who else ''})")
        args["label"] = label
    if pair_ids is not None:
        import json

        where.append("p.id IN (SELECT value FROM json_each(:ids))")
        args["ids"] = json.dumps([int(i) for i in pair_ids])
    if flagged != "any":
        where.append("p.flag IS NOT NULL" if flagged == "flagged" else "p.flag IS NULL")
    base = (" FROM pairs p JOIN prompts pr ON pr.id = p.prompt_id JOIN responses ra ON ra.id = p.response_a "
            "JOIN responses rb ON rb.id = p.response_b WHERE " + " AND ".join(where))
    total = ws.query("SELECT COUNT(*)" + base, args)[0][0]
    pages = max(1, -(-total // per_page))
    page = min(page, pages)
    rows = ws.query(
        "SELECT p.id AS pair_id, pr.text AS prompt, ra.text AS a, rb.text AS b, p.source, p.flag, p.created, "
        "(SELECT COUNT(*) FROM labels l WHERE l.pair_id = p.id AND l.superseded = 0) AS n_labels, "
        "(SELECT group_concat(an.name || ': ' || l.choice, '; ') FROM labels l JOIN annotators an "
        " ON an.id = l.annotator_id WHERE l.pair_id = p.id AND l.superseded = 0) AS labels"
        + base + f" ORDER BY {SORTS[sort]} LIMIT :lim OFFSET :off",
        {**args, "lim": per_page, "off": (page - 1) * per_page})
    return Page([dict(r) for r in rows], total, page, pages)


def annotators(ws: Workspace) -> list[str]:
    return [r[0] for r in ws.query("SELECT name FROM annotators ORDER BY name")]


def relabel(ws: Workspace, pair_id, annotator: str, choice: str, comment: str = "") -> int:
    """Give (or change) this annotator's label of a pair from its row: 'a', 'b', 'tie' or 'skip'.

    The records view shows response A on the left, so the label records A shown left. An earlier label by
    the same annotator is superseded, as on the Label tab. Returns the label id once committed."""
    if choice not in L.CHOICES:
        raise DataError(f"Unknown label {choice!r}: choose one of {', '.join(L.CHOICES)}.")
    try:
        pid = int(str(pair_id).strip())
    except (TypeError, ValueError):
        raise DataError("Pick a pair from the table first.") from None
    r = pair(ws, pid)
    if r is None:
        raise DataError(f"There is no pair {pid} in this workspace: pick one from the table.")
    shown = L.Shown(pid, r["prompt"], r["a"], r["b"], True, r["source"], r["flag"], None)
    side = {"a": "left", "b": "right"}.get(choice, choice)
    try:
        return L.save_label(ws, shown, annotator, "records-view", side, comment)
    except ValueError as exc:  # no name, or the reserved one
        raise DataError(str(exc)) from None


def pair(ws: Workspace, pair_id: int) -> dict | None:
    """One pair whole: id, prompt, a, b, source, flag (None when there is no such pair)."""
    r = ws.query("SELECT p.id, pr.text AS prompt, ra.text AS a, rb.text AS b, p.source, p.flag FROM pairs p "
                 "JOIN prompts pr ON pr.id = p.prompt_id JOIN responses ra ON ra.id = p.response_a "
                 "JOIN responses rb ON rb.id = p.response_b WHERE p.id = ?", (int(pair_id),))
    return dict(r[0]) if r else None


def current_labels(ws: Workspace, pair_id: int) -> dict[str, str]:
    """{annotator: choice} of a pair's current labels."""
    return {r[0]: r[1] for r in ws.query(
        "SELECT an.name, l.choice FROM labels l JOIN annotators an ON an.id = l.annotator_id "
        "WHERE l.pair_id = ? AND l.superseded = 0", (int(pair_id),))}
