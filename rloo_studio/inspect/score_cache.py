"""Scores a reward run's model gave, kept in the run's folder (scores.sqlite), so that a second look at the
labeled set (Inspect's Dataset view, the Records tab's "the model disagrees" filter) is read, not computed.

Keyed by the text scored (prompt + response): a pair's two responses are two keys, so a label that changes
sides, a pair labeled later, or the same response in another pair all find their score. The cache belongs to
one state of the model: its stamp is the adapter file's size and modification time and the chat-template
switch the scores were read with. Each row carries its stamp and is read only under it, so a scoring that still
writes under an older stamp (the run saved its adapter again meanwhile) is never read as the new model's; opening
under a new stamp drops the rows of the others. Rows are written batch by batch, so what a stopped scoring did is
kept. Standard library only.
"""
from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

FILE = "scores.sqlite"
VERSION = "2"  # the table's layout (1: one stamp for the whole table)


def text_key(prompt, response: str) -> bytes:
    """16 bytes naming one scored text: the prompt (a str, or a list of messages) and the response."""
    return hashlib.blake2b(f"{prompt!r}\0{response}".encode(), digest_size=16).digest()


class ScoreCache:
    def __init__(self, run_dir: Path, adapter: Path, enable_thinking: bool):
        st = adapter.stat()
        self.stamp = f"{st.st_size}:{st.st_mtime_ns}:{int(bool(enable_thinking))}"
        self.con = sqlite3.connect(run_dir / FILE, timeout=30, check_same_thread=False)
        try:
            with self.con:
                self.con.execute("CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT)")
                row = self.con.execute("SELECT v FROM meta WHERE k = 'version'").fetchone()
                if row is None or row[0] != VERSION:
                    self.con.execute("DROP TABLE IF EXISTS scores")
                    self.con.execute("INSERT OR REPLACE INTO meta VALUES ('version', ?)", (VERSION,))
                self.con.execute("CREATE TABLE IF NOT EXISTS scores (key BLOB, stamp TEXT, score REAL, "
                                 "PRIMARY KEY (key, stamp)) WITHOUT ROWID")
                self.con.execute("DELETE FROM scores WHERE stamp != ?", (self.stamp,))  # other states: no longer read
        except BaseException:
            self.con.close()
            raise

    def get(self, keys: list[bytes]) -> dict[bytes, float]:
        """The scores kept for `keys` (those not kept are absent)."""
        out: dict[bytes, float] = {}
        for k in range(0, len(keys), 500):  # SQLite's limit on bound parameters
            part = keys[k:k + 500]
            q = f"SELECT key, score FROM scores WHERE stamp = ? AND key IN ({','.join('?' * len(part))})"
            out.update(self.con.execute(q, [self.stamp, *part]).fetchall())
        return out

    def put(self, items: list[tuple[bytes, float]]) -> None:
        with self.con:
            self.con.executemany("INSERT OR REPLACE INTO scores VALUES (?, ?, ?)",
                                 [(k, self.stamp, v) for k, v in items])

    def __len__(self) -> int:
        return self.con.execute("SELECT COUNT(*) FROM scores WHERE stamp = ?", (self.stamp,)).fetchone()[0]

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> "ScoreCache":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
