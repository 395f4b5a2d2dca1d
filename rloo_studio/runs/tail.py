"""A run's JSON-lines files (metrics.jsonl, samples.jsonl) read from where the last read stopped.

A page that follows a live run asks for its records every second or two; re-parsing the whole file each
time grows with the run. A Tail keeps the records and the byte offset it has read to, and reads only
what was appended since. A resume rewinds a run (runner.rewind replaces the file atomically with a
shorter one): a file with another inode, a smaller size, or other bytes just before the offset is read
again from the start. One Tail per file is shared by every page (`tail(path)`).
"""
from __future__ import annotations

import itertools
import json
import os
import threading
from collections import OrderedDict
from pathlib import Path

MARK = 64  # bytes before the offset that must still be there for an append-only read to be right
KEPT = 32  # tails kept (the least recently asked for goes first)

_versions = itertools.count(1)  # one counter for all tails: a version is never reused, even by a new Tail


class Tail:
    """The records of one JSON-lines file. `read()` catches up and returns (records, version): all the
    records (a line still being written waits for its newline; a line a crash cut short is skipped, as
    runner.read_jsonl does) and a number that changes whenever they do. With `last_steps`, only the
    records of the latest N distinct "step" values are kept (samples.jsonl: the completions table and the
    warnings look at a few steps)."""

    def __init__(self, path: Path | str, last_steps: int | None = None):
        self.path, self.last_steps = Path(path), last_steps
        self.records: list[dict] = []
        self.version = 0
        self._offset, self._inode, self._mark = 0, None, b""
        self._lock = threading.Lock()

    def read(self) -> tuple[list[dict], int]:
        with self._lock:
            try:
                with open(self.path, "rb") as f:
                    self._catch_up(f)
            except FileNotFoundError:
                if self._offset or self.records:
                    self._reset([])
            return self.records, self.version

    def _catch_up(self, f) -> None:
        st = os.fstat(f.fileno())
        if st.st_ino != self._inode or st.st_size < self._offset:
            self._reset([], st.st_ino)  # rewritten (a resume's rewind) or another file: read it all
        if st.st_size == self._offset:
            return
        f.seek(self._offset - len(self._mark))
        data = f.read(st.st_size - f.tell())
        if not data.startswith(self._mark):  # rewritten in place: read it all
            self._reset([], st.st_ino)
            f.seek(0)
            data = f.read(st.st_size)
        else:
            data = data[len(self._mark):]
        end = data.rfind(b"\n") + 1  # up to the last whole line
        if not end:
            return
        new = [r for r in map(_parse, data[:end].splitlines()) if r is not None]
        self._offset += end
        self._mark = (self._mark + data[:end])[-MARK:]
        if new:
            self._set(self.records + new)

    def _reset(self, records: list[dict], inode=None) -> None:
        self._offset, self._inode, self._mark = 0, inode, b""
        self._set(records)

    def _set(self, records: list[dict]) -> None:
        # a new list each time: a caller still holding the old one never sees it change under it
        self.records = _last_steps(records, self.last_steps) if self.last_steps else records
        self.version = next(_versions)


def _parse(line: bytes) -> dict | None:
    try:
        r = json.loads(line)
    except ValueError:
        return None
    return r if isinstance(r, dict) else None


def _last_steps(records: list[dict], n: int) -> list[dict]:
    """The records of the latest n distinct steps (records come in step order)."""
    seen: set = set()
    for i in range(len(records) - 1, -1, -1):
        seen.add(records[i].get("step"))
        if len(seen) > n:
            return records[i + 1:]
    return records


_tails: OrderedDict[tuple[str, int | None], Tail] = OrderedDict()
_tails_lock = threading.Lock()


def tail(path: Path | str, last_steps: int | None = None) -> Tail:
    """The shared Tail of a file (made on first use; the KEPT most recently used are kept)."""
    key = (os.path.abspath(path), last_steps)
    with _tails_lock:
        t = _tails.pop(key, None) or Tail(path, last_steps)
        _tails[key] = t
        while len(_tails) > KEPT:
            _tails.popitem(last=False)
    return t


def records(run_dir: Path, name: str = "metrics.jsonl", last_steps: int | None = None) -> tuple[list[dict], int]:
    """(records, version) of a run's JSON-lines file, read from where the last read stopped."""
    return tail(Path(run_dir) / name, last_steps).read()
