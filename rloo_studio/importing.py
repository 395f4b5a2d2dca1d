"""Import files into the store: preference pairs, prompt sets, or prompts with candidate responses.

Accepted: JSONL, CSV, Parquet, or a `datasets` folder (save_to_disk). Shapes, by columns:
  prompt?, chosen, rejected     TRL preference data, standard (strings) or conversational
                                (lists of {role, content}); without `prompt` the prompt is the
                                shared prefix of chosen and rejected (HH-RLHF style)
  prompt, responses             a list of 2+ candidate responses per prompt (to be labeled)
  prompt, response_1..N         the same, one column per candidate
  prompt (+ other columns)      a prompt set for RLOO; other columns (answer, ...) are kept
Every problem is a DataError naming the file, the row (line for JSONL) and the field; an import
is all or nothing: nothing is written unless every row is valid.
"""
from __future__ import annotations

import csv
import json
import os
import time
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Callable

from .errors import DataError
from .labels import IMPORT_ANNOTATOR
from .prompts import add_prompt, get_or_create_set
from .workspace import Workspace

MAX_TEXT_CHARS = 1_000_000  # one prompt or response; longer is almost surely a broken file
MAX_ROWS = 1_000_000
ROLES = ("system", "user", "assistant", "tool")

Progress = Callable[[float, str], None]


@dataclass
class ImportResult:
    kind: str  # 'preference', 'candidates' or 'prompts'
    name: str  # the prompt set / source name
    rows: int
    pairs: int
    prompts: int
    columns: tuple[str, ...] = ()  # extra columns kept with the prompts (e.g. answer), for the rewards

    def summary(self) -> str:
        if self.kind == "prompts":
            return f"Imported {self.prompts} prompts into prompt set '{self.name}'."
        what = "labeled pairs (annotator 'import')" if self.kind == "preference" else "pairs to label"
        return f"Imported {self.rows} rows from {self.name}: {self.pairs} {what}, {self.prompts} prompts."


# -- reading ------------------------------------------------------------------------------

def read_rows(path: str | Path, progress: Progress | None = None) -> tuple[list[dict], str, list[int]]:
    """Rows as dicts, the unit that numbers them ('line' for JSONL, 'row' otherwise), and their numbers."""
    p = Path(path)
    if not p.exists():
        raise DataError(f"{p.name}: no such file or folder")
    if p.is_dir():
        rows = _read_datasets(p)
        return rows, "row", list(range(1, len(rows) + 1))
    if p.stat().st_size == 0:
        raise DataError(f"{p.name}: the file is empty")
    suffix = p.suffix.lower()
    if suffix in (".jsonl", ".json", ".ndjson"):
        rows, numbers = _read_jsonl(p, progress)
        return rows, "line", numbers
    if suffix == ".csv":
        rows = _read_csv(p)
        return rows, "row", list(range(2, len(rows) + 2))  # row 1 is the header
    if suffix in (".parquet", ".pq"):
        rows = _read_parquet(p)
        return rows, "row", list(range(1, len(rows) + 1))
    raise DataError(f"{p.name}: unknown file type {suffix or '(none)'}; use .jsonl, .csv, .parquet or a datasets folder")


def _decode(p: Path, raw: bytes, line_no: int | None = None) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        where = f"line {line_no}" if line_no else f"byte {e.start}"
        raise DataError(f"{p.name} {where}: not UTF-8 text (byte 0x{raw[e.start]:02x} at position {e.start}); "
                        "save the file as UTF-8") from None


def _read_jsonl(p: Path, progress: Progress | None) -> tuple[list[dict], list[int]]:
    size, rows, numbers = p.stat().st_size, [], []
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
            return [_object(p, "item", i + 1, r) for i, r in enumerate(data)], list(range(1, len(data) + 1))
        for i, raw in enumerate(f, start=1):
            if not raw.strip():
                continue
            text = _decode(p, raw, i)
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as e:
                cut = " (the line looks cut off)" if "Unterminated" in e.msg or "Expecting" in e.msg else ""
                raise DataError(f"{p.name} line {i}: not valid JSON: {e.msg} at column {e.colno}{cut}") from None
            rows.append(_object(p, "line", i, obj))
            numbers.append(i)
            if progress and i % 2000 == 0:
                progress(0.5 * f.tell() / size, f"reading {p.name}: {i:,} lines")
            if len(rows) > MAX_ROWS:
                raise DataError(f"{p.name}: more than {MAX_ROWS:,} rows; split the file")
    if not rows:
        raise DataError(f"{p.name}: the file has no rows")
    return rows, numbers


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


# -- validating -----------------------------------------------------------------------------

def _text(name: str, unit: str, n: int, field: str, v, allow_empty: bool = False) -> str:
    where = f"{name} {unit} {n}, field '{field}'"
    if v is None or (isinstance(v, float) and v != v):  # None / NaN from CSV or Parquet
        raise DataError(f"{where}: missing value")
    if not isinstance(v, str):
        raise DataError(f"{where}: expected text, got {type(v).__name__}")
    if not allow_empty and not v.strip():
        raise DataError(f"{where}: empty text")
    if len(v) > MAX_TEXT_CHARS:
        raise DataError(f"{where}: {len(v):,} characters, over the {MAX_TEXT_CHARS:,} limit")
    return v


def _messages(name: str, unit: str, n: int, field: str, v) -> list[dict]:
    where = f"{name} {unit} {n}, field '{field}'"
    if isinstance(v, str):
        try:
            v = json.loads(v)  # CSV cells may hold JSON lists
        except ValueError:
            raise DataError(f"{where}: expected a list of {{role, content}} messages") from None
    if not isinstance(v, list) or not v:
        raise DataError(f"{where}: expected a non-empty list of {{role, content}} messages")
    for k, m in enumerate(v):
        if not isinstance(m, dict) or "role" not in m or "content" not in m:
            raise DataError(f"{where}, message {k + 1}: each message needs 'role' and 'content'")
        if m["role"] not in ROLES:
            raise DataError(f"{where}, message {k + 1}: unknown role {m['role']!r} (use {', '.join(ROLES)})")
        _text(name, unit, n, f"{field}[{k}].content", m["content"], allow_empty=m["role"] != "assistant")
    return [{"role": m["role"], "content": m["content"]} for m in v]


def _conversational(v) -> bool:
    if isinstance(v, list):
        return True
    return isinstance(v, str) and v.lstrip().startswith("[{")


def _split_implicit(chosen: str, rejected: str) -> tuple[str, str, str]:
    """Shared prefix -> prompt. Cut back to the last 'Assistant:' turn marker (HH-RLHF), else a line end."""
    k = len(os.path.commonprefix([chosen, rejected]))
    prefix = chosen[:k]
    for marker in ("\n\nAssistant:", "Assistant:"):
        j = prefix.rfind(marker)
        if j >= 0:
            k = j + len(marker)
            break
    else:
        j = prefix.rfind("\n")
        k = j + 1 if j >= 0 else 0
    return chosen[:k], chosen[k:], rejected[k:]


def _last_user(messages: list[dict]) -> str:
    users = [m["content"] for m in messages if m["role"] == "user"]
    return users[-1] if users else messages[-1]["content"]


@dataclass
class _Record:
    prompt: str
    responses: list[str]
    extra: dict
    preferred: bool  # True: responses = [chosen, rejected], already labeled


def _normalize(rows: list[dict], name: str, unit: str, numbers: list[int]) -> tuple[str, list[_Record]]:
    cols = set().union(*(r.keys() for r in rows[:100]))
    resp_cols = sorted((c for c in cols if c.startswith("response_") and c[9:].isdigit()), key=lambda c: int(c[9:]))
    if {"chosen", "rejected"} <= cols:
        kind = "preference"
    elif "prompt" in cols and ("responses" in cols or len(resp_cols) >= 2):
        kind = "candidates"
    elif "prompt" in cols:
        kind = "prompts"
    else:
        raise DataError(
            f"{name}: no usable columns. Found: {', '.join(sorted(map(str, cols))) or 'none'}. Expected 'chosen' and "
            "'rejected' (preference pairs, optional 'prompt'), 'prompt' with 'responses' or response_1..N "
            "(candidates to label), or 'prompt' alone (a prompt set)"
        )
    out = []
    for r, n in zip(rows, numbers):
        if kind == "preference":
            for f in ("chosen", "rejected"):
                if f not in r:
                    raise DataError(f"{name} {unit} {n}: missing field '{f}'")
            conv = _conversational(r["chosen"])
            extra = {k: v for k, v in r.items() if k not in ("prompt", "chosen", "rejected") and _jsonable(v)}
            if conv:
                ch = _messages(name, unit, n, "chosen", r["chosen"])
                rj = _messages(name, unit, n, "rejected", r["rejected"])
                if "prompt" in r and r["prompt"] is not None:
                    pm = _messages(name, unit, n, "prompt", r["prompt"])
                else:  # implicit: the shared leading messages
                    k = 0
                    while k < min(len(ch), len(rj)) - 1 and ch[k] == rj[k]:
                        k += 1
                    pm, ch, rj = ch[:k], ch[k:], rj[k:]
                    if not pm:
                        raise DataError(f"{name} {unit} {n}: chosen and rejected share no prompt messages; add a 'prompt' field")
                prompt = _last_user(pm)
                if len(pm) > 1 or pm[-1]["role"] != "user":
                    extra["messages"] = pm
                chosen = "".join(m["content"] for m in ch if m["role"] == "assistant")
                rejected = "".join(m["content"] for m in rj if m["role"] == "assistant")
                _text(name, unit, n, "chosen", chosen)
                _text(name, unit, n, "rejected", rejected)
            else:
                chosen = _text(name, unit, n, "chosen", r["chosen"])
                rejected = _text(name, unit, n, "rejected", r["rejected"])
                if "prompt" in r and r["prompt"] is not None:
                    prompt = _text(name, unit, n, "prompt", r["prompt"])
                else:
                    prompt, chosen, rejected = _split_implicit(chosen, rejected)
                    if not prompt.strip():
                        raise DataError(f"{name} {unit} {n}: chosen and rejected share no prompt; add a 'prompt' field")
                    _text(name, unit, n, "chosen", chosen)
                    _text(name, unit, n, "rejected", rejected)
            if chosen == rejected:
                raise DataError(f"{name} {unit} {n}: 'chosen' is identical to 'rejected'; nothing to prefer")
            out.append(_Record(prompt, [chosen, rejected], extra, True))
        else:
            if "prompt" not in r:
                raise DataError(f"{name} {unit} {n}: missing field 'prompt'")
            pv = r["prompt"]
            extra = {}
            if _conversational(pv):
                pm = _messages(name, unit, n, "prompt", pv)
                prompt = _last_user(pm)
                if len(pm) > 1:
                    extra["messages"] = pm
            else:
                prompt = _text(name, unit, n, "prompt", pv)
            if kind == "candidates":
                if "responses" in r:
                    rs = r["responses"]
                    if isinstance(rs, str):
                        try:
                            rs = json.loads(rs)
                        except ValueError:
                            raise DataError(f"{name} {unit} {n}, field 'responses': expected a list of texts") from None
                    if not isinstance(rs, list):
                        raise DataError(f"{name} {unit} {n}, field 'responses': expected a list of texts")
                    fields = [f"responses[{k}]" for k in range(len(rs))]
                else:
                    rs = [r.get(c) for c in resp_cols]
                    fields = resp_cols
                texts = [_text(name, unit, n, f, v) for f, v in zip(fields, rs) if v not in (None, "")]
                texts = list(dict.fromkeys(texts))
                if len(texts) < 2:
                    raise DataError(f"{name} {unit} {n}: needs at least 2 different responses to form a pair")
                skip = {"prompt", "responses", *resp_cols}
                extra.update({k: v for k, v in r.items() if k not in skip and _jsonable(v)})
                out.append(_Record(prompt, texts, extra, False))
            else:
                extra.update({k: v for k, v in r.items() if k != "prompt" and _jsonable(v)})
                out.append(_Record(prompt, [], extra, False))
    return kind, out


def _jsonable(v) -> bool:
    try:
        json.dumps(v)
        return not (isinstance(v, float) and v != v)
    except (TypeError, ValueError):
        return False


def candidate_pairs(n: int) -> list[tuple[int, int]]:
    """Which responses to compare: all pairs up to 4 responses, else neighbours (0-1, 1-2, ...)."""
    return list(combinations(range(n), 2)) if n <= 4 else [(i, i + 1) for i in range(n - 1)]


# -- writing ------------------------------------------------------------------------------

KIND_WORDS = {"preference": "preference pairs (chosen / rejected)", "candidates": "prompts with candidate responses",
              "prompts": "a prompt set (a 'prompt' column and no responses)"}


def import_file(ws: Workspace, path: str | Path, name: str | None = None,
                progress: Progress | None = None, expect: tuple[str, ...] | None = None) -> ImportResult:
    """Validate every row, then write all of them in one transaction (or nothing).

    expect: the kinds the caller can use (the RLOO tab wants a prompt set); another kind is refused."""
    p = Path(path)
    name = name or p.name
    rows, unit, numbers = read_rows(p, progress)
    kind, records = _normalize(rows, p.name, unit, numbers)
    if expect and kind not in expect:
        raise DataError(f"{p.name} holds {KIND_WORDS[kind]}; here it must be "
                        + " or ".join(KIND_WORDS[k] for k in expect) + ". Import it in the Label tab instead.")
    if progress:
        progress(0.6, f"checked {len(records):,} rows; writing")
    return write_records(ws, kind, records, name, progress)


def import_upload(ws: Workspace, uploaded: str | Path, progress: Progress | None = None,
                  expect: tuple[str, ...] | None = None) -> ImportResult:
    """Copy an uploaded file into the workspace's uploads/ (kept with the data it produced), then import it."""
    import shutil

    src = Path(uploaded)
    folder = ws.uploads_dir / time.strftime("%Y%m%d-%H%M%S")
    n = 1
    while (folder / src.name).exists():
        n += 1
        folder = ws.uploads_dir / f"{time.strftime('%Y%m%d-%H%M%S')}-{n}"
    folder.mkdir(parents=True, exist_ok=True)
    dst = folder / src.name  # the original name, so that messages name the user's file
    shutil.copyfile(src, dst)
    try:
        return import_file(ws, dst, name=src.name, progress=progress, expect=expect)
    except DataError:
        shutil.rmtree(folder, ignore_errors=True)  # a refused file leaves nothing behind
        raise


def write_records(ws: Workspace, kind: str, records: list[_Record], name: str,
                  progress: Progress | None = None) -> ImportResult:
    now = time.time()
    pairs = 0
    source = f"import:{name}"
    with ws.transaction() as con:
        sid = get_or_create_set(con, name, source)
        ann = None
        if kind == "preference":
            con.execute("INSERT OR IGNORE INTO annotators (name, created) VALUES (?, ?)", (IMPORT_ANNOTATOR, now))
            ann = con.execute("SELECT id FROM annotators WHERE name=?", (IMPORT_ANNOTATOR,)).fetchone()[0]
        prompt_ids = set()
        for i, rec in enumerate(records):
            pid = add_prompt(con, sid, rec.prompt, rec.extra)
            prompt_ids.add(pid)
            if rec.responses:
                rids = [con.execute("INSERT INTO responses (prompt_id, text, source, created) VALUES (?, ?, ?, ?)",
                                    (pid, t, source, now)).lastrowid for t in rec.responses]
                for a, b in ([(0, 1)] if rec.preferred else candidate_pairs(len(rids))):
                    pair = con.execute(
                        "INSERT INTO pairs (prompt_id, response_a, response_b, source, created) VALUES (?, ?, ?, ?, ?)",
                        (pid, rids[a], rids[b], name, now),
                    ).lastrowid
                    pairs += 1
                    if rec.preferred:
                        con.execute("INSERT INTO labels (pair_id, annotator_id, choice, created) VALUES (?, ?, 'a', ?)",
                                    (pair, ann, now))
            if progress and i % 2000 == 0:
                progress(0.6 + 0.4 * i / len(records), f"writing {i:,} / {len(records):,}")
    columns = tuple(sorted({k for rec in records for k in rec.extra}))
    return ImportResult(kind, name, len(records), pairs, len(prompt_ids), columns)
