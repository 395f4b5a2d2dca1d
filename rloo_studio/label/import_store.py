"""What an import finds and writes in the store: each pair's dedup key, the pairs already there with a row's key,
and a chunk's new prompts, responses, pairs and imported labels written set by set; the indexes a big import sets
aside while it writes (importing.py decides what a row becomes; this module keeps the store's tables, indexes and
counts right).

Why set by set: a row written statement by statement cost six statements and a trigger (pairs counting their
labels, which moved each new pair's entries in three indexes once more), about 100 s at 1,000,000 rows. Here a
chunk's rows of each table go in one executemany with ids given in order (the chunk's transaction holds the write
lock, so MAX(id) + 1 ... are the ids SQLite would give), each new pair is written with its imported label already
counted, and the counting trigger is off while that chunk's labels go in."""
from __future__ import annotations

import hashlib
import json
from contextlib import contextmanager
from dataclasses import dataclass, field

from rloo_studio.core.workspace import SET_ASIDE_INDEXES, Workspace
from rloo_studio.label import shapes as S
from rloo_studio.label.reading import Progress
from rloo_studio.label.store import IMPORT_ANNOTATOR

COUNT_TRIGGER = "label_counts_add"  # core/workspace.py: a new current label adds itself to its pair's counts
SET_ASIDE_ROWS = 100_000  # an import this big writes without the indexes it never reads (indexes_set_aside)
_KEY_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode  # one encoder, not one per key


def pair_key(prompt: str, turns, a: str, b: str) -> str:
    """What makes two pairs the same comparison: the prompt (text and turns) and the two responses, either order."""
    x, y = (a, b) if a <= b else (b, a)
    blob = _KEY_JSON([prompt, turns if isinstance(turns, list) and turns else None, x, y])
    return hashlib.blake2b(blob.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def fill_keys(con) -> None:
    """Give a dedup_key to pairs written without one (the demo seed, generated candidates, older imports)."""
    rows = con.execute(
        """SELECT p.id, pr.text, pr.extra, ra.text, rb.text FROM pairs p JOIN prompts pr ON pr.id = p.prompt_id
           JOIN responses ra ON ra.id = p.response_a JOIN responses rb ON rb.id = p.response_b
           WHERE p.dedup_key IS NULL""")
    keys = []
    for pid, prompt, extra, a, b in rows:
        try:
            turns = json.loads(extra or "{}").get(S.TURNS)
        except (ValueError, AttributeError):
            turns = None
        keys.append((pair_key(prompt, turns, a, b), pid))
    con.executemany("UPDATE pairs SET dedup_key=? WHERE id=?", keys)


@dataclass
class Match:
    """A pair with a row's key: its id, its response A's text, and the choices imported for it so far
    (True: by this import)."""
    pair: int
    a_text: str
    imported: dict[str, bool]


class KeyMap:
    """Every pair's dedup_key -> its id (a list where several pairs share one: kept duplicates), in memory, for an
    import that writes with the key index set aside (indexes_set_aside, below): the pairs there when it
    starts, read once, and those it writes, added as it writes them (1M pairs: the import's peak RSS
    509 MB, 358 MB with the key index kept). Kept up by the index, each chunk's 20,000 keys in random order dirtied most
    of its pages, and looking them up was a join: the 1M import took 11-19% longer."""

    def __init__(self, con):
        self.ids: dict[str, int | list[int]] = {}
        for key, pid in con.execute("SELECT dedup_key, id FROM pairs WHERE dedup_key IS NOT NULL ORDER BY id"):
            self.add(key, pid)

    def add(self, key: str, pid: int) -> None:
        there = self.ids.setdefault(key, pid)
        if there != pid:
            self.ids[key] = (there if isinstance(there, list) else [there]) + [pid]

    def find(self, keys) -> list[tuple[int, str]]:
        """(pair id, key) of the pairs with these keys."""
        out = []
        for key in keys:
            there = self.ids.get(key)
            if there is not None:
                out += [(pid, key) for pid in (there if isinstance(there, list) else [there])]
        return out


def existing_pairs(con, keys, since_label: int, key_map: KeyMap | None = None) -> dict[str, list[Match]]:
    """The pairs of the workspace that have one of these keys, oldest first, with their imported labels (those
    with an id above since_label were written by this import). Two set-based reads: the keys' pairs from the key
    index (keys in order: neighbouring index pages; or from key_map, when the index is set aside), then those
    pairs' rows, texts and labels in id order (a chunk of a file imported before lies on neighbouring pages)."""
    keys = sorted(set(keys))
    ids = sorted(key_map.find(keys) if key_map else con.execute(
        "SELECT p.id, j.value FROM json_each(?) j CROSS JOIN pairs p ON p.dedup_key = j.value", (json.dumps(keys),)),
        key=lambda r: r[0])
    key_of = dict(ids)
    found: dict[str, list[Match]] = {}
    for pid, a_text, choices in sorted(con.execute(
            # `+l.annotator_id`: look the labels up by pair (labels_pair_who), never by annotator (labels_mine),
            # which would scan every imported label once per pair (minutes at 50,000 pairs)
            """SELECT p.id, ra.text, (SELECT group_concat(l.choice || (l.id > :since)) FROM labels l
                   WHERE l.pair_id = p.id AND l.superseded = 0
                   AND +l.annotator_id = (SELECT id FROM annotators WHERE name = :ann))
               FROM json_each(:ids) j CROSS JOIN pairs p ON p.id = j.value JOIN responses ra ON ra.id = p.response_a""",
            {"ann": IMPORT_ANNOTATOR, "since": since_label, "ids": json.dumps([i for i, _ in ids])}),
            key=lambda r: r[0]):
        found.setdefault(key_of[pid], []).append(Match(pid, a_text, {c[:-1]: c[-1] == "1"
                                                                     for c in (choices or "").split(",") if c}))
    return found


@dataclass
class Batch:
    """A chunk's new rows, each table's written together by flush(). Ids are given here, in order from the
    tables' highest ids when the batch starts (inside the chunk's transaction)."""
    con: object
    set_id: int
    source: str
    name: str
    annotator: int | None
    now: float
    prompt_ids: dict[str, int]  # prompt text -> id in the set, for the chunk's prompts already there
    next_id: dict[str, int] = field(default_factory=dict)
    rows: dict[str, list] = field(default_factory=lambda: {"prompts": [], "responses": [], "pairs": [], "labels": []})

    @classmethod
    def start(cls, con, set_id: int, texts, source: str, name: str, annotator: int | None, now: float) -> "Batch":
        """A batch for a chunk whose rows have these prompt texts: those already in the set are looked up at once."""
        plain = sorted(t for t in texts if "\x00" not in t)  # json_each never matches a text holding a NUL
        ids = dict(con.execute("SELECT p.text, p.id FROM json_each(?) j CROSS JOIN prompts p "
                               "ON p.set_id = ? AND p.text = j.value",
                               (json.dumps(plain, ensure_ascii=False), set_id)))
        for text in set(texts).difference(plain):
            row = con.execute("SELECT id FROM prompts WHERE set_id = ? AND text = ?", (set_id, text)).fetchone()
            if row:
                ids[text] = row[0]
        b = cls(con, set_id, source, name, annotator, now, ids)
        b._number()
        return b

    def _number(self) -> None:
        self.next_id = {t: self.con.execute(f"SELECT IFNULL(MAX(id), 0) + 1 FROM {t}").fetchone()[0]
                        for t in ("prompts", "responses", "pairs")}

    def _new(self, table: str) -> int:
        self.next_id[table] += 1
        return self.next_id[table] - 1

    def prompt(self, rec: S.Row) -> int:
        """The id of the row's prompt in the set: the one there (it keeps its columns), else a new one."""
        pid = self.prompt_ids.get(rec.prompt)
        if pid is None:
            pid = self.prompt_ids[rec.prompt] = self._new("prompts")
            self.rows["prompts"].append((pid, self.set_id, rec.prompt, json.dumps(rec.extra or {})))
        return pid

    def pairs(self, rec: S.Row, new: list[tuple[int, int, str]]) -> list[int]:
        """Write the row's responses that the new pairs (a, b, key) use, and those pairs (a preference row's
        labeled 'a' by the import annotator); their ids."""
        pid = self.prompt(rec)
        rids: dict[int, int] = {}
        out = []
        for a, b, key in new:
            for j in (a, b):
                if j not in rids:
                    rids[j] = self._new("responses")
                    self.rows["responses"].append((rids[j], pid, rec.responses[j], self.source, self.now))
            pair = self._new("pairs")
            counted = int(rec.preferred)  # its imported label, for response_a (n_import, n_a)
            self.rows["pairs"].append((pair, pid, rids[a], rids[b], self.name, self.now, key, counted, counted))
            if rec.preferred:
                self.rows["labels"].append((pair, self.annotator, "a", "", self.now))
            out.append(pair)
        return out

    def holds(self, pair: int) -> bool:
        """Is this pair one of the batch's, not yet written?"""
        return bool(self.rows["pairs"]) and pair >= self.rows["pairs"][0][0]

    def flush(self) -> None:
        """Write what the batch holds. A new pair is written with its imported label counted (n_import, n_a), so the
        counting trigger is off while its labels go in (nothing else writes meanwhile: the transaction holds
        the write lock, and the trigger is back before it commits)."""
        con, rows = self.con, self.rows
        con.executemany("INSERT INTO prompts (id, set_id, text, extra) VALUES (?, ?, ?, ?)", rows["prompts"])
        con.executemany("INSERT INTO responses (id, prompt_id, text, source, created) VALUES (?, ?, ?, ?, ?)",
                        rows["responses"])
        con.executemany("INSERT INTO pairs (id, prompt_id, response_a, response_b, source, created, dedup_key, "
                        "n_import, n_a) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows["pairs"])
        if rows["labels"]:
            with counted_by_hand(con):
                con.executemany("INSERT INTO labels (pair_id, annotator_id, choice, comment, created) "
                                "VALUES (?, ?, ?, ?, ?)", rows["labels"])
        for v in rows.values():
            v.clear()


@contextmanager
def counted_by_hand(con):
    """The labels written inside are already counted in their pairs: the counting trigger is dropped and made
    again from its own SQL, inside the caller's transaction (a rollback keeps it as it was)."""
    sql = con.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?",
                      (COUNT_TRIGGER,)).fetchone()[0]
    con.execute(f"DROP TRIGGER {COUNT_TRIGGER}")
    try:
        yield
    finally:
        if con.in_transaction:  # (SQLite ends a transaction itself on some errors, disk full: the drop is undone)
            con.execute(sql)


@contextmanager
def indexes_set_aside(ws: Workspace, total: int, progress: Progress | None = None):
    """For an import of at least SET_ASIDE_ROWS rows into a workspace with no more prompts and pairs than that
    (what bounds the memory of KeyMap), yields True: the indexes in workspace.SET_ASIDE_INDEXES are
    dropped while it writes (the import finds pairs by key in a KeyMap) and made again after, also when it fails
    or is stopped (a killed process: the next open of the workspace makes them). Kept up row by row, in random
    order, each chunk dirtied most of their pages; made once, they cost a sort (docs/BENCHMARKS.md)."""
    def _make(statements):
        with ws.transaction() as con:
            for sql in statements:
                con.execute(sql)

    big = total >= SET_ASIDE_ROWS and ws.query("SELECT MAX((SELECT IFNULL(MAX(id), 0) FROM prompts), "
                                               "(SELECT IFNULL(MAX(id), 0) FROM pairs))")[0][0] <= total
    if big:
        _make(f"DROP INDEX IF EXISTS {name}" for name in SET_ASIDE_INDEXES)
    try:
        yield big
    except BaseException:
        if big:
            try:
                _make(SET_ASIDE_INDEXES.values())
            except Exception:  # (a full disk) the error to see is the import's; the next open makes them
                pass
        raise
    if big:
        if progress:
            progress(1.0, "indexing the prompts")
        _make(SET_ASIDE_INDEXES.values())
