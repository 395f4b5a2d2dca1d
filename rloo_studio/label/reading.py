"""Read an import file into rows (dicts): JSONL (or a JSON array), CSV, Parquet, or a `datasets` folder.

Every problem is a DataError naming the file and the line (JSONL) or row; what the rows mean is
importing.py's and shapes.py's."""
from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Callable, Iterator

from rloo_studio.core.errors import DataError
from rloo_studio.label.shapes import MAX_TEXT_CHARS

MAX_ROWS = 1_000_000

Progress = Callable[[float, str], None]


def iter_rows(path: str | Path, progress: Progress | None = None) -> tuple[str, Iterator[tuple[int, dict]]]:
    """The unit that numbers the rows ('line' for JSONL, 'row' otherwise) and the rows as (number, dict), one at a
    time: a JSONL file (one object a line) is read as it goes, so its size does not bound memory; the other
    formats are read whole first. progress(fraction of the file, text) as it reads."""
    p = Path(path)
    if not p.exists():
        raise DataError(f"{p.name}: no such file or folder")
    if p.is_dir():
        rows = _read_datasets(p)
        return "row", enumerate(rows, start=1)
    if p.stat().st_size == 0:
        raise DataError(f"{p.name}: the file is empty")
    suffix = p.suffix.lower()
    if suffix in (".jsonl", ".json", ".ndjson"):
        return "line", _iter_jsonl(p, progress)
    return "row", _numbered(p, suffix)


def _numbered(p: Path, suffix: str) -> Iterator[tuple[int, dict]]:
    if suffix == ".csv":
        return enumerate(_read_csv(p), start=2)  # row 1 is the header
    if suffix in (".parquet", ".pq"):
        return enumerate(_read_parquet(p), start=1)
    raise DataError(f"{p.name}: unknown file type {suffix or '(none)'}; use .jsonl, .csv, .parquet or a datasets "
                    "folder")


def _decode(p: Path, raw: bytes, line_no: int | None = None) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        where = f"line {line_no}" if line_no else f"byte {e.start}"
        raise DataError(f"{p.name} {where}: not UTF-8 text (byte 0x{raw[e.start]:02x} at position {e.start}); "
                        "save the file as UTF-8") from None


def _iter_jsonl(p: Path, progress: Progress | None) -> Iterator[tuple[int, dict]]:
    """(line number, object) of each non-empty line, read as it goes (a whole-file JSON array: read whole)."""
    size, n = p.stat().st_size, 0
    with open(p, "rb") as f:
        head = f.read(1)
        f.seek(0)
        if head == b"[":  # a whole-file JSON array
            text = _decode(p, f.read())
            try:
                data = json.loads(text)
            except json.JSONDecodeError as e:
                raise DataError(f"{p.name} line {e.lineno}: not valid JSON ({e.msg})") from None
            if not isinstance(data, list) or not data:
                raise DataError(f"{p.name}: expected a JSON array of objects with rows")
            if len(data) > MAX_ROWS:
                raise DataError(f"{p.name}: more than {MAX_ROWS:,} rows; split the file")
            for i, r in enumerate(data):
                yield i + 1, _object(p, "item", i + 1, r)
            return
        for i, obj in jsonl_lines(p, f):
            n += 1
            if n > MAX_ROWS:
                raise DataError(f"{p.name}: more than {MAX_ROWS:,} rows; split the file")
            yield i, obj
            if progress and i % 2000 == 0:
                progress(f.tell() / size, f"reading {p.name}: {i:,} lines")
    if not n:
        raise DataError(f"{p.name}: the file has no rows")


def jsonl_lines(p: Path, f, first_line: int = 1, end: int | None = None) -> Iterator[tuple[int, dict]]:
    """(line number, object) of each non-empty line of the open file f from where it stands (line first_line)
    up to byte `end`."""
    i, pos = first_line - 1, f.tell()
    for raw in f:
        if end is not None and pos >= end:
            return
        i, pos = i + 1, pos + len(raw)
        if not raw.strip():
            continue
        text = _decode(p, raw, i)
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            cut = " (the line looks cut off)" if "Unterminated" in e.msg or "Expecting" in e.msg else ""
            at = "" if e.msg.endswith(" at") else " at"  # "Unterminated string starting at" + " column 38"
            raise DataError(f"{p.name} line {i}: not valid JSON: {e.msg}{at} column {e.colno}{cut}") from None
        yield i, _object(p, "line", i, obj)


def _object(p: Path, unit: str, n: int, obj) -> dict:
    if not isinstance(obj, dict):
        raise DataError(f"{p.name} {unit} {n}: expected a JSON object with named fields, got {type(obj).__name__}")
    return obj


def _read_csv(p: Path) -> list[dict]:
    text = _decode(p, p.read_bytes())
    csv.field_size_limit(max(MAX_TEXT_CHARS * 4, 1 << 24))
    try:
        rows = list(csv.DictReader(text.splitlines(keepends=True)))
    except csv.Error as e:
        raise DataError(f"{p.name}: not valid CSV ({e})") from None
    if not rows:
        raise DataError(f"{p.name}: the file has a header but no rows")
    for i, r in enumerate(rows, start=2):  # row 1 is the header
        if None in r:
            raise DataError(f"{p.name} row {i}: more values than header columns")
    return rows


def _read_parquet(p: Path) -> list[dict]:
    import pandas as pd

    try:
        df = pd.read_parquet(p)
    except Exception as e:
        raise DataError(f"{p.name}: not a readable Parquet file ({type(e).__name__}: {str(e)[:200]})") from None
    if df.empty:
        raise DataError(f"{p.name}: the file has no rows")
    return [_plain(r) for r in df.to_dict("records")]


def _plain(v):
    """numpy arrays / scalars from pandas -> plain lists and Python values."""
    if hasattr(v, "tolist"):
        v = v.tolist()
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v


def _read_datasets(p: Path) -> list[dict]:
    from datasets import Dataset, DatasetDict, load_from_disk

    try:
        d = load_from_disk(str(p))
    except Exception as e:
        raise DataError(f"{p.name}: not a datasets folder saved with save_to_disk ({str(e)[:200]})") from None
    parts = list(d.values()) if isinstance(d, DatasetDict) else [d] if isinstance(d, Dataset) else []
    rows = [r for part in parts for r in part]
    if not rows:
        raise DataError(f"{p.name}: the dataset has no rows")
    return rows
