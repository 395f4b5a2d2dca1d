"""The records view of the preference store: every pair with its current labels, searched (label.text_search),
filtered, sorted and paged; relabel a pair from its row.

Each pair is shown as one person, the viewer, sees it on the Label tab: response A and B in the A/B order
drawn for them (store.pair_order; the stored order for a pair they were never shown, or with no viewer),
and every label, their own and others', in those letters. So a pair the viewer marked "B is better" on the
Label tab reads "B is better" here, and a label given here is stored as the viewer's, in the same order.

Filters: text in the prompt (or either response), source, annotator (pairs that person labeled),
label (a current label of that kind by anyone, or by the chosen annotator, in the viewer's letters;
'unlabeled': none), flagged, and a list of pair ids (e.g. the pairs a trained reward model disagrees with:
inspect.dataset.disagreements, the same scores as the Inspect tab's dataset view).
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass

from rloo_studio.core.errors import DataError
from rloo_studio.core.workspace import Workspace
from rloo_studio.label import store as L
from rloo_studio.label.text_search import Search, text_search

LABELS = ("any", "unlabeled", "a", "b", "tie", "skip")
FLAGGED = ("any", "flagged", "not flagged")
SORTS = {
    "newest": "p.created DESC, p.id DESC",
    "oldest": "p.created, p.id",
    "prompt": "pr.text COLLATE NOCASE, p.id",
    "most labels": "p.n_human + p.n_import + p.n_skip DESC, p.id",  # counts kept by triggers; index pairs_n_labels
    "flagged first": "p.flag IS NULL, p.id DESC",
}
MAX_PER_PAGE = 200
WALK_ROWS = 200_000  # the 'prompt' order walks the prompt index when it expects to read at most this many pairs
SWAP = {"a": "b", "b": "a"}
PROMPT_JOIN = " JOIN prompts pr ON pr.id = p.prompt_id"
RESPONSE_JOINS = " JOIN responses ra ON ra.id = p.response_a JOIN responses rb ON rb.id = p.response_b"
PAGE_BY_IDS = 50_000  # matches up to which a page is found from the label filters' pair ids and sorted


# 1 when the pair's response_a is the viewer's A (their pair_order, else the stored order)
_A_FIRST = ("COALESCE((SELECT po.a_shown_left FROM pair_order po WHERE po.pair_id = p.id "
            "AND po.annotator_id = :viewer), 1)")
# the pairs the viewer was shown with response_a as B (one list, where a look-up per label cost 0.5 s at 1M labels)
_SWAPPED = "(SELECT po.pair_id FROM pair_order po WHERE po.annotator_id = :viewer AND po.a_shown_left = 0)"


@dataclass
class Page:
    """rows: one record per pair, as the viewer sees it (as_seen): pair_id, prompt, a, b (the texts shown as A
    and B), a_first (response_a is shown as A), source, flag, created, votes [{name, choice, comment}],
    yours (the viewer's label), chosen (what the labels decide), labels ('name: choice; ...' or None), comments
    ('name: comment; ...' or None). Choices are in the viewer's letters: 'a' means the text shown as A."""
    rows: list[dict]
    total: int  # pairs that match
    page: int
    pages: int


def _choice(value: str, allowed, what: str) -> str:
    v = (value or "").strip() or allowed[0]
    if v not in allowed:
        raise DataError(f"Unknown {what} {v!r}: choose one of {', '.join(allowed)}.")
    return v


def _paging(page, per_page) -> tuple[int, int]:
    try:
        page, per_page = max(1, int(page or 1)), int(20 if per_page in (None, "") else per_page)
    except (TypeError, ValueError):
        raise DataError("The page must be a whole number.") from None
    if not 1 <= per_page <= MAX_PER_PAGE:
        raise DataError(f"Rows per page must be between 1 and {MAX_PER_PAGE}.")
    return page, per_page


def _labeled(walk: bool, cond: str) -> str:
    """Pairs with a current label meeting `cond` (on l): looked up per pair where the pairs are walked in an
    order's index (walk), else the labels' pair ids, found by their own indexes and then their pairs."""
    if walk:
        return f"EXISTS (SELECT 1 FROM labels l WHERE l.pair_id = p.id AND l.superseded = 0{cond})"
    return f"p.id IN (SELECT l.pair_id FROM labels l WHERE l.superseded = 0{cond})"


def _where(ws: Workspace, search, source, annotator, label, flagged, pair_ids,
           viewer: int = -1) -> tuple[dict[bool, list[str]], dict, Search | None]:
    """The filters as SQL conditions on p (pairs), {walk: conditions} (the label filters in each of _labeled's
    forms), their arguments, and the search."""
    where, args, labeled = ["1"], {}, []
    found = text_search(ws, search.strip()) if (search or "").strip() else None
    if found:
        where.append(found.sql)
        args.update(found.args)
    if (source or "").strip():
        where.append("p.source = :source")
        args["source"] = source.strip()
    who = (annotator or "").strip()
    by = " AND l.annotator_id = (SELECT id FROM annotators WHERE name = :who)" if who else ""
    if who:
        labeled.append(by)
        args["who"] = who
    if label == "unlabeled":  # the pair's label counts (kept by triggers), read from the pairs_counts index
        where.append("p.n_human = 0 AND p.n_import = 0 AND p.n_skip = 0")
    elif label != "any" and who:  # in the viewer's letters: 'a' is a label for the text shown to them as A
        # (no viewer, or one who never labeled: the stored order, with no look-up of their order per pair)
        swap = label in SWAP and viewer != -1
        mine = (f"((l.choice = :label AND l.pair_id NOT IN {_SWAPPED}) OR (l.choice = '{SWAP[label]}' AND l.pair_id "
                f"IN {_SWAPPED}))") if swap else "l.choice = :label"
        labeled.append(f"{by} AND {mine}")
        args["label"] = label
    elif label != "any":  # anyone's: the pair's own count of its current labels of that kind (kept by triggers)
        swap = label in SWAP and viewer != -1
        where.append(f"IIF(p.id IN {_SWAPPED}, p.n_{SWAP[label]}, p.n_{label}) > 0" if swap else f"p.n_{label} > 0")
    if pair_ids is not None:
        where.append("p.id IN (SELECT value FROM json_each(:ids))")
        args["ids"] = json.dumps([int(i) for i in pair_ids])
    if flagged != "any":
        where.append("p.flag IS NOT NULL" if flagged == "flagged" else "p.flag IS NULL")
    return {walk: where + [_labeled(walk, c) for c in labeled] for walk in (True, False)}, args, found


def query(ws: Workspace, search: str = "", source: str = "", annotator: str = "", label: str = "any",
          flagged: str = "any", sort: str = "newest", page: int = 1, per_page: int = 20,
          pair_ids: list[int] | None = None, viewer: str = "") -> Page:
    """One page of pairs that match every filter (empty filters match all), in the chosen order, each as
    `viewer` sees it on the Label tab ('' or a name that never labeled: the stored order).
    pair_ids: only these pairs (e.g. inspect.dataset.disagreements(ws, reward_run))."""
    label = _choice(label, LABELS, "label filter")
    flagged = _choice(flagged, FLAGGED, "flagged filter")
    sort = (sort or "").strip() or "newest"
    if sort not in SORTS:
        raise DataError(f"Unknown order {sort!r}: choose one of {', '.join(SORTS)}.")
    page, per_page = _paging(page, per_page)
    viewer_id = _annotator_id(ws, viewer)
    where, args, found = _where(ws, search, source, annotator, label, flagged, pair_ids, viewer_id)
    args["viewer"] = viewer_id
    cond = {walk: " WHERE " + " AND ".join(w) for walk, w in where.items()}
    if found and not found.most:  # few matches, found by the pairs' indexes: counted in the pass finding the page
        by_prompt = PROMPT_JOIN if sort == "prompt" else ""
        ids, total, page = _searched(ws, " FROM pairs p" + by_prompt + cond[True], args, sort, page, per_page)
    else:
        ids, total, page = _filtered(ws, cond, args, sort, page, per_page)
    at = {pid: k for k, pid in enumerate(ids)}
    rows = sorted(ws.query(
        "SELECT p.id AS pair_id, pr.text AS prompt, ra.text AS a, rb.text AS b, p.source, p.flag, p.created, "
        f"{_A_FIRST} AS a_first FROM pairs p{PROMPT_JOIN}{RESPONSE_JOINS} "
        "WHERE p.id IN (SELECT value FROM json_each(:ids_page))",
        {"viewer": args["viewer"], "ids_page": json.dumps(ids)}), key=lambda r: at[r["pair_id"]])
    votes = _votes(ws, [r["pair_id"] for r in rows])
    return Page([as_seen(dict(r), votes.get(r["pair_id"], []), bool(r["a_first"]), viewer) for r in rows],
                total, page, max(1, -(-total // per_page)))


def _filtered(ws: Workspace, cond: dict[bool, str], args: dict, sort: str, page: int,
              per_page: int) -> tuple[list[int], int, int]:
    """The page's pair ids (reading the prompts only where the order needs them: a deep page's skipped rows carry
    no texts through the sort), the number of matches (counted from the label filters' pair ids) and the page
    shown. Past PAGE_BY_IDS matches, or walking the prompts, the page walks the order's index and looks up each
    pair's labels (it stops after the page), where sorting every match took longer."""
    total = ws.query("SELECT COUNT(*) FROM pairs p" + cond[False], args)[0][0]
    page = min(page, max(1, -(-total // per_page)))
    source = " FROM pairs p" + (PROMPT_JOIN if sort == "prompt" else "")
    walk = total > PAGE_BY_IDS
    if sort == "prompt" and (page * per_page) * ws.query("SELECT COUNT(*) FROM pairs")[0][0] <= WALK_ROWS * total:
        # Walk the prompts in their index order and stop after this page, where SQLite would sort every match,
        # when that walk reads few rows (about page * per_page * all pairs / matches); else sort the matches.
        source, walk = " FROM prompts pr CROSS JOIN pairs p INDEXED BY pairs_prompt ON p.prompt_id = pr.id", True
    return _page_ids(ws, source + cond[walk], args, sort, page, per_page), total, page


def _searched(ws: Workspace, source: str, args: dict, sort: str, page: int,
              per_page: int) -> tuple[list[int], int, int]:
    """The same for a text search with few matches (found by the pairs' indexes): the count and the page's ids
    come from one pass; a page past the last counts, then asks for the last."""
    rows = ws.query(f"SELECT p.id, COUNT(*) OVER (){source} ORDER BY {SORTS[sort]} LIMIT :lim OFFSET :off",
                    {**args, "lim": per_page, "off": (page - 1) * per_page})
    if rows or page == 1:  # (no match at all: nothing to count again)
        return [r[0] for r in rows], rows[0][1] if rows else 0, page
    total = ws.query(f"SELECT COUNT(*){source}", args)[0][0]
    last = max(1, -(-total // per_page))
    return (_page_ids(ws, source, args, sort, last, per_page) if total else []), total, last


def _page_ids(ws: Workspace, source: str, args: dict, sort: str, page: int, per_page: int) -> list[int]:
    return [r[0] for r in ws.query(f"SELECT p.id{source} ORDER BY {SORTS[sort]} LIMIT :lim OFFSET :off",
                                   {**args, "lim": per_page, "off": (page - 1) * per_page})]


def _annotator_id(ws: Workspace, name: str) -> int:
    row = ws.query("SELECT id FROM annotators WHERE name = ?", ((name or "").strip(),)) if (name or "").strip() else []
    return row[0][0] if row else -1


def _votes(ws: Workspace, pair_ids: list[int]) -> dict[int, list[dict]]:
    """{pair id: its current labels, oldest first, as stored: {name, choice, comment}}."""
    out: dict[int, list[dict]] = {}
    for r in ws.query("SELECT l.pair_id, an.name, l.choice, l.comment FROM labels l JOIN annotators an "
                      "ON an.id = l.annotator_id WHERE l.superseded = 0 AND l.pair_id IN "
                      "(SELECT value FROM json_each(?)) ORDER BY l.created, l.id", (json.dumps(pair_ids),)):
        vote = {"name": r["name"], "choice": r["choice"], "comment": r["comment"] or ""}
        out.setdefault(r["pair_id"], []).append(vote)
    return out


def as_seen(row: dict, votes: list[dict], a_first: bool, viewer: str = "") -> dict:
    """One pair as the viewer sees it: row (pair_id, prompt, a, b = response_a / response_b, …) with a and b
    put in the viewer's order (a_first: response_a is their A), and its current labels (votes: {name, choice,
    comment}, choices as stored) in the same letters: yours (the viewer's label or None), chosen (what the
    labels decide, store.decide: people's labels over imported ones; None without labels), labels and
    comments as one line each (None when there are none)."""
    def seen(choice: str) -> str:
        return choice if a_first else SWAP.get(choice, choice)

    votes = [{**v, "choice": seen(v["choice"])} for v in votes]
    human = Counter(v["choice"] for v in votes if v["name"] != L.IMPORT_ANNOTATOR)
    imported = Counter(v["choice"] for v in votes if v["name"] == L.IMPORT_ANNOTATOR)
    who = (viewer or "").strip()
    a, b = (row["a"], row["b"]) if a_first else (row["b"], row["a"])
    comments = "; ".join(f"{v['name']}: {v['comment']}" for v in votes if v["comment"].strip())
    return {**row, "a": a, "b": b, "a_first": bool(a_first), "votes": votes,
            "yours": next((v["choice"] for v in votes if who and v["name"] == who), None),
            "chosen": L.decide(human, imported)[0] if votes else None,
            "labels": "; ".join(f"{v['name']}: {v['choice']}" for v in votes) or None, "comments": comments or None}


def annotators(ws: Workspace) -> list[str]:
    return [r[0] for r in ws.query("SELECT name FROM annotators ORDER BY name")]


def relabel(ws: Workspace, pair_id, annotator: str, choice: str, comment: str = "") -> int:
    """Give (or change) this annotator's label of a pair from its row: 'a', 'b', 'tie' or 'skip'.

    'a' and 'b' are as the records view shows the pair to this annotator (query(viewer=annotator)): their
    A/B order of the Label tab. An earlier label by the same annotator is superseded, as on the Label tab.
    Returns the label id once committed."""
    if choice not in L.CHOICES:
        raise DataError(f"Unknown label {choice!r}: choose one of {', '.join(L.CHOICES)}.")
    try:
        pid = int(str(pair_id).strip())
    except (TypeError, ValueError):
        raise DataError("Pick a pair from the table first.") from None
    r = pair(ws, pid, viewer=annotator)
    if r is None:
        raise DataError(f"There is no pair {pid} in this workspace: pick one from the table.")
    shown = L.Shown(pid, r["prompt"], r["a"], r["b"], r["a_first"], r["source"], r["flag"], None)
    side = {"a": "left", "b": "right"}.get(choice, choice)
    try:
        return L.save_label(ws, shown, annotator, "records-view", side, comment)
    except ValueError as exc:  # no name, or the reserved one
        raise DataError(str(exc)) from None


def pair(ws: Workspace, pair_id: int, viewer: str = "") -> dict | None:
    """One pair whole, as the viewer sees it (a query row), or None when there is no such pair."""
    rows = query(ws, pair_ids=[int(pair_id)], per_page=1, viewer=viewer).rows
    return rows[0] if rows else None


def current_labels(ws: Workspace, pair_id: int) -> dict[str, str]:
    """{annotator: choice} of a pair's current labels."""
    return {r[0]: r[1] for r in ws.query(
        "SELECT an.name, l.choice FROM labels l JOIN annotators an ON an.id = l.annotator_id "
        "WHERE l.pair_id = ? AND l.superseded = 0", (int(pair_id),))}
