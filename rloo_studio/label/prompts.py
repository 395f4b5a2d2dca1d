"""Prompt sets: a `prompt` column plus optional columns (answer, ...) that reach reward functions; and the rows
every writer of the store shares (a prompt's responses, a pair of them, an imported label), inside the
caller's transaction: importing, the demo data, generated candidates and RLOO completions sent to labeling."""
from __future__ import annotations

import json
import time

from rloo_studio.core.errors import ConfigError
from rloo_studio.core.workspace import Workspace

LABELED_PAIRS = "labeled-pairs"  # a prompt-set name: the prompts of the labeled preference pairs


def get_or_create_set(con, name: str, source: str) -> int:
    row = con.execute("SELECT id FROM prompt_sets WHERE name=?", (name,)).fetchone()
    if row:
        return row[0]
    return con.execute(
        "INSERT INTO prompt_sets (name, source, created) VALUES (?, ?, ?)", (name, source, time.time())
    ).lastrowid


def add_prompt(con, set_id: int, text: str, extra: dict | None = None, replace: bool = False) -> int:
    """Insert (or find) a prompt in a set; returns its id. Runs inside the caller's transaction.

    A set holds each prompt text once: a prompt already there keeps its id (and its pairs); `replace`
    gives it these columns instead of the ones it has (a prompt set imported again on purpose)."""
    row = con.execute("SELECT id FROM prompts WHERE set_id=? AND text=?", (set_id, text)).fetchone()
    if row:
        if replace:
            con.execute("UPDATE prompts SET extra=? WHERE id=?", (json.dumps(extra or {}), row[0]))
        return row[0]
    return con.execute(
        "INSERT INTO prompts (set_id, text, extra) VALUES (?, ?, ?)", (set_id, text, json.dumps(extra or {}))
    ).lastrowid


def add_response(con, prompt_id: int, text: str, source: str, now: float | None = None) -> int:
    return con.execute("INSERT INTO responses (prompt_id, text, source, created) VALUES (?, ?, ?, ?)",
                       (prompt_id, text, source, now or time.time())).lastrowid


def add_pair(con, prompt_id: int, response_a: int, response_b: int, source: str, now: float | None = None,
             dedup_key: str | None = None) -> int:
    """A pair of two responses to one prompt (unlabeled); `dedup_key` lets a later import find it again (pairs
    written without one get theirs from import_store.fill_keys when an import first needs them)."""
    cols, vals = "prompt_id, response_a, response_b, source, created", [prompt_id, response_a, response_b, source,
                                                                       now or time.time()]
    if dedup_key is not None:
        cols, vals = cols + ", dedup_key", vals + [dedup_key]
    return con.execute(f"INSERT INTO pairs ({cols}) VALUES ({', '.join('?' * len(vals))})", vals).lastrowid


def add_imported_label(con, pair_id: int, annotator_id: int, comment: str = "",
                       now: float | None = None, choice: str = "a") -> None:
    """An imported preference: response A (the chosen one) is better, or ('b') response B, when the file's
    chosen response is the pair's B (a row that matched a pair already in the store, the other way round)."""
    if choice not in ("a", "b"):
        raise ValueError(f"an imported label is 'a' or 'b', not {choice!r}")
    con.execute("INSERT INTO labels (pair_id, annotator_id, choice, comment, created) VALUES (?, ?, ?, ?, ?)",
                (pair_id, annotator_id, choice, comment, now or time.time()))


def add_prompt_set(ws: Workspace, name: str, rows: list[dict], source: str) -> int:
    """All rows or none. Each row needs a non-empty string `prompt`; other keys are kept as columns."""
    with ws.transaction() as con:
        sid = get_or_create_set(con, name, source)
        for row in rows:
            extra = {k: v for k, v in row.items() if k != "prompt"}
            add_prompt(con, sid, row["prompt"], extra)
    return sid


def prompt_sets(ws: Workspace) -> list[dict]:
    return [
        dict(r)
        for r in ws.query(
            "SELECT s.id, s.name, s.source, COUNT(p.id) AS prompts FROM prompt_sets s "
            "LEFT JOIN prompts p ON p.set_id = s.id GROUP BY s.id ORDER BY s.id"
        )
    ]


def load_prompt_set(ws: Workspace, name: str) -> list[dict]:
    """Rows as dicts: {'prompt': ..., **extra}, in insertion order."""
    rows = ws.query(
        "SELECT p.text, p.extra FROM prompts p JOIN prompt_sets s ON s.id = p.set_id WHERE s.name=? ORDER BY p.id",
        (name,),
    )
    if not rows:
        raise KeyError(f"no prompt set named {name!r} in this workspace")
    return [{"prompt": r["text"], **json.loads(r["extra"])} for r in rows]


def load_prompts(ws, name: str) -> list[dict]:
    """The rows of a prompt set, or (LABELED_PAIRS) the distinct prompts of the labeled pairs; a ConfigError
    that names what is missing."""
    if name == LABELED_PAIRS:
        from rloo_studio.label.store import preference_pairs

        seen, rows = set(), []
        for p in preference_pairs(ws):
            if p["prompt"] not in seen:
                seen.add(p["prompt"])
                rows.append({"prompt": p["prompt"]})
        if not rows:
            raise ConfigError("there are no labeled pairs yet; label some or choose another prompt set")
        return rows
    try:
        return load_prompt_set(ws, name)
    except KeyError as exc:
        raise ConfigError(str(exc.args[0])) from None
