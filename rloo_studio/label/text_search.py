"""The Records tab's text search: the pairs whose prompt or either response contains a text (LIKE: case-blind for
ASCII, as lower() is), as a condition on the pairs (alias p) for label.records to combine with its filters."""
from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from rloo_studio.core.workspace import Workspace

# A search reads each prompt and response once, in parts of each table, two at once (SQLite leaves
# Python's lock while it reads; each thread has its own connection), where joining the texts to every pair read 3M
# texts by id at 1M pairs. Each part keeps the ids that match, or for a text found almost everywhere those that do
# not, up to FEW of them; past FEW both ways the search joins the texts as before (docs/BENCHMARKS.md).
_READERS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="records-search")
PARTS = {"prompts": 2, "responses": 4}  # each table read in this many id ranges: the two threads share them out
FEW = 50_000  # ids kept per part
PROMPT_JOIN = " JOIN prompts pr ON pr.id = p.prompt_id"
RESPONSE_JOINS = " JOIN responses ra ON ra.id = p.response_a JOIN responses rb ON rb.id = p.response_b"


def _ids(ws: Workspace, table: str, lo: int, hi: int, like: str, negate: bool) -> tuple[list[int], bool]:
    """(the ids in [lo, hi) whose text is (negate: is not) LIKE the pattern, in order, all of them?): reading stops
    past FEW."""
    cur = ws.connect().execute(f"SELECT id FROM {table} WHERE id >= ? AND id < ? AND {'NOT' if negate else ''} "
                               "text LIKE ? ESCAPE '\\'", (lo, hi, like))
    ids: list[int] = []
    try:
        while len(ids) <= FEW:
            rows = cur.fetchmany(10_000)
            if not rows:
                return ids, True
            ids += [r[0] for r in rows]
        return ids, False
    finally:
        cur.close()  # a statement left open would hold its read of the workspace


def _part(ws: Workspace, table: str, lo: int, hi: int, like: str) -> tuple[bool, list[int]] | None:
    """(True, the ids that match) or (False, the ids that do not), whichever are at most FEW; None if neither."""
    ids, done = _ids(ws, table, lo, hi, like, False)
    if done:
        return True, ids
    read = ids[-1] - lo + 1  # the matches so far came from this many rows: the rest holds about as many misses
    if (read - len(ids)) + (hi - 1 - ids[-1]) * (1 - len(ids) / read) > 2 * FEW:
        return None  # (then reading it all again for the misses would be time lost)
    ids, done = _ids(ws, table, lo, hi, like, True)
    return (False, ids) if done else None


@dataclass
class Search:
    """A text search as a condition on p: by the ids the parts read where they could keep them, else by the texts."""
    sql: str
    args: dict
    joins: str  # the texts the condition reads ('' when it reads ids only)
    most: bool  # a side matches almost every text: counted alone, the page found in the order's index


def _by_ids(found: tuple[bool, list[int]], cols: tuple[str, ...], key: str, args: dict) -> list[str]:
    match, ids = found
    args[key] = json.dumps(ids)
    if match:  # (no match on this side: it adds nothing)
        return [f"p.{c} IN (SELECT value FROM json_each(:{key}))" for c in cols] if ids else []
    return [f"p.{c} NOT IN (SELECT value FROM json_each(:{key}))" for c in cols] if ids else ["1"]


def _joined(parts: list[tuple[bool, list[int]] | None]) -> tuple[bool, list[int]] | None:
    """A table's parts as one: the ids that match, or those that do not; None unless every part kept the same."""
    if None in parts or len({match for match, _ in parts}) != 1:
        return None
    return parts[0][0], [i for _, ids in parts for i in ids]


def text_search(ws: Workspace, text: str) -> Search:
    """Pairs whose prompt or either response contains `text` (LIKE: case-blind for ASCII, as lower() is)."""
    like = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    reads = {}
    for table, n in PARTS.items():
        end = ws.query(f"SELECT COALESCE(MAX(id), 0) + 1 FROM {table}")[0][0]
        cuts = [end * k // n for k in range(n + 1)]
        reads[table] = [_READERS.submit(_part, ws, table, lo, hi, like) for lo, hi in zip(cuts, cuts[1:])]
    prompts, responses = (_joined([f.result() for f in reads[t]]) for t in PARTS)
    sides, args, joins = [], {"q": like}, ""  # the sides read by ids first: a pair they match reads no text
    if prompts:
        sides += _by_ids(prompts, ("prompt_id",), "text_p", args)
    if responses:
        sides += _by_ids(responses, ("response_a", "response_b"), "text_r", args)
    if not prompts:
        sides.append("pr.text LIKE :q ESCAPE '\\'")
        joins += PROMPT_JOIN
    if not responses:
        sides += ["ra.text LIKE :q ESCAPE '\\'", "rb.text LIKE :q ESCAPE '\\'"]
        joins += RESPONSE_JOINS
    most = any(side and not side[0] for side in (prompts, responses))
    return Search(f"({' OR '.join(sides)})" if sides else "0", args, joins, most)
