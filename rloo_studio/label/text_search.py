"""The Records tab's text search: the pairs whose prompt or either response contains a text (LIKE: case-blind for
ASCII, as lower() is), as a condition on the pairs (alias p) for label.records to combine with its filters."""
from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from rloo_studio.core.workspace import Workspace

# A search reads each prompt and response once, in parts of each table, two at once, where joining the texts to
# every pair read 3M texts by id at 1M pairs. A part is one statement that gives the ids that match as one string
# (group_concat): SQLite leaves Python's lock for the whole read, where fetching them row by row took the lock back
# at every row and two threads queued for it. A side with at most FEW matches is then found by the pairs' indexes;
# past that every pair is tested against a mask of the side's ids, one byte an id, bound as a blob (substr of a blob
# reads one byte in place). docs/BENCHMARKS.md has the figures.
_READERS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="records-search")
PARTS = {"prompts": 2, "responses": 4}  # each table read in this many id ranges: the two threads share them out
FEW = 50_000  # matches up to which a side is a list of ids


def _matches(ws: Workspace, table: str, lo: int, hi: int, like: str) -> np.ndarray:
    """The ids in [lo, hi) whose text is LIKE the pattern."""
    got = ws.connect().execute(f"SELECT group_concat(id) FROM {table} WHERE id >= ? AND id < ? AND text LIKE ? "
                               "ESCAPE '\\'", (lo, hi, like)).fetchone()[0]
    return np.fromstring(got, dtype=np.int64, sep=",") if got else np.zeros(0, np.int64)


def _side(ids: np.ndarray, end: int, cols: tuple[str, ...], key: str, args: dict) -> tuple[list[str], bool]:
    """A table's conditions on the pairs' columns that point into it, and whether they test every pair (a mask)."""
    if len(ids) <= FEW:
        args[key] = json.dumps(ids.tolist())  # (no match on this side adds no test)
        return ([f"p.{c} IN (SELECT value FROM json_each(:{key}))" for c in cols] if len(ids) else []), False
    mask = np.zeros(end, np.uint8)
    mask[ids] = 1
    args[key] = mask.tobytes()
    return [f"substr(:{key}, p.{c} + 1, 1) = x'01'" for c in cols], True


@dataclass
class Search:
    """A text search as a condition on p, and its arguments."""
    sql: str
    args: dict
    most: bool  # every pair is tested against a mask (many match): counted alone, the page found in the order's index


def text_search(ws: Workspace, text: str) -> Search:
    """Pairs whose prompt or either response contains `text` (LIKE: case-blind for ASCII, as lower() is)."""
    like = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    reads, ends = {}, {}
    for table, n in PARTS.items():
        ends[table] = end = ws.query(f"SELECT COALESCE(MAX(id), 0) + 1 FROM {table}")[0][0]
        cuts = [end * k // n for k in range(n + 1)]
        reads[table] = [_READERS.submit(_matches, ws, table, lo, hi, like) for lo, hi in zip(cuts, cuts[1:])]
    sides, args, most = [], {}, False
    for table, cols in (("prompts", ("prompt_id",)), ("responses", ("response_a", "response_b"))):
        ids = np.concatenate([f.result() for f in reads[table]])
        conds, masked = _side(ids, ends[table], cols, f"text_{table}", args)
        sides += conds
        most = most or masked
    return Search(f"({' OR '.join(sides)})" if sides else "0", args, most)
