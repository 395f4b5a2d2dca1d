"""Import files into the store: preference pairs, prompt sets, or prompts with candidate responses.

Accepted: JSONL, CSV, Parquet, or a `datasets` folder (save_to_disk). Shapes, by columns:
  prompt?, chosen, rejected     TRL preference data, standard (strings) or conversational
                                (lists of {role, content}), explicit or implicit prompt; also the
                                UltraFeedback-binarized and Anthropic HH shapes (see shapes.py)
  prompt, responses             a list of 2+ candidate responses per prompt (to be labeled)
  prompt, response_1..N         the same, one column per candidate
  prompt (+ other columns)      a prompt set for RLOO; other columns (answer, ...) are kept
Every problem is a DataError naming the file, the row (line for JSONL) and the field; an import
is all or nothing: nothing is written unless every row is valid.

Imports are idempotent: a row already in the workspace (the same prompt and the same two responses,
in either order, for a pair; the same prompt and candidates for a candidates row; the same prompt
text in that prompt set) is skipped and counted, unless the caller asks to keep duplicates. Pairs
carry a `dedup_key` (pair_key()), indexed, so the check is one indexed query per import.
"""
from __future__ import annotations

import csv
import hashlib
import json
import time
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Callable

from rloo_studio.label import shapes as S
from rloo_studio.core.errors import DataError
from rloo_studio.label.store import IMPORT_ANNOTATOR
from rloo_studio.label.prompts import add_imported_label, add_pair, add_prompt, add_response, get_or_create_set
from rloo_studio.label.shapes import MAX_TEXT_CHARS, Row
from rloo_studio.core.workspace import Workspace

MAX_ROWS = 1_000_000

Progress = Callable[[float, str], None]


@dataclass
class ImportResult:
    kind: str  # 'preference', 'candidates' or 'prompts'
    name: str  # the prompt set / source name
    rows: int  # rows in the file
    pairs: int  # pairs written
    prompts: int  # prompts the written rows use (for a prompt set: prompts added)
    columns: tuple[str, ...] = ()  # extra columns kept with the prompts (e.g. answer), for the rewards
    skipped: int = 0  # rows not written because they are already in the workspace (or repeat an earlier row)
    repeated: int = 0  # of those, rows that repeat an earlier row of the same file

    def summary(self) -> str:
        if self.kind == "prompts":
            msg = f"Imported {self.prompts} prompts into prompt set '{self.name}'."
            return msg + (f" {self._skipped('prompts', 'already in that prompt set').capitalize()}." if self.skipped else "")
        what = "labeled pairs (annotator 'import')" if self.kind == "preference" else "pairs to label"
        if not self.skipped:
            return f"Imported {self.rows} rows from {self.name}: {self.pairs} {what}, {self.prompts} prompts."
        return (f"Imported {self.rows - self.skipped} of {self.rows} rows from {self.name}: {self.pairs} {what}, "
                f"{self.prompts} prompts; {self._skipped('rows', 'already in the workspace')} "
                "(keep duplicates to import them as new).")

    def _skipped(self, what: str, where: str) -> str:
        old = self.skipped - self.repeated
        parts = [f"{old} {what} {where}"] if old else []
        if self.repeated:
            parts.append(f"{self.repeated} repeated in the file")
        return "skipped " + " and ".join(parts)


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
                at = "" if e.msg.endswith(" at") else " at"  # "Unterminated string starting at" + " column 38"
                raise DataError(f"{p.name} line {i}: not valid JSON: {e.msg}{at} column {e.colno}{cut}") from None
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

def _normalize(rows: list[dict], name: str, unit: str, numbers: list[int]) -> tuple[str, list[Row]]:
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
        loc = f"{name} {unit} {n}"
        if kind == "preference":
            out.append(S.preference_row(loc, r))
            continue
        if "prompt" not in r:
            raise DataError(f"{loc}: missing field 'prompt'")
        prompt, turns = S.prompt_field(loc, r["prompt"])
        if kind == "prompts":
            out.append(Row(prompt, [], {**S.extra_columns(r, ("prompt",)), **turns}, False))
            continue
        if "responses" in r:
            rs = r["responses"]
            if isinstance(rs, str):
                try:
                    rs = json.loads(rs)
                except ValueError:
                    raise DataError(f"{loc}, field 'responses': expected a list of texts") from None
            if not isinstance(rs, list):
                raise DataError(f"{loc}, field 'responses': expected a list of texts")
            fields = [f"responses[{k}]" for k in range(len(rs))]
        else:
            rs = [r.get(c) for c in resp_cols]
            fields = resp_cols
        texts = [S.text(loc, f, v) for f, v in zip(fields, rs) if v not in (None, "")]
        texts = list(dict.fromkeys(texts))
        if len(texts) < 2:
            raise DataError(f"{loc}: needs at least 2 different responses to form a pair")
        extra = {**S.extra_columns(r, ("prompt", "responses", *resp_cols)), **turns}
        out.append(Row(prompt, texts, extra, False))
    return kind, out


def candidate_pairs(n: int) -> list[tuple[int, int]]:
    """Which responses to compare: all pairs up to 4 responses, else neighbours (0-1, 1-2, ...)."""
    return list(combinations(range(n), 2)) if n <= 4 else [(i, i + 1) for i in range(n - 1)]


# -- writing ------------------------------------------------------------------------------

KIND_WORDS = {"preference": "preference pairs (chosen / rejected)", "candidates": "prompts with candidate responses",
              "prompts": "a prompt set (a 'prompt' column and no responses)"}


def import_file(ws: Workspace, path: str | Path, name: str | None = None, progress: Progress | None = None,
                expect: tuple[str, ...] | None = None, keep_duplicates: bool = False) -> ImportResult:
    """Validate every row, then write all of them in one transaction (or nothing).

    expect: the kinds the caller can use (the RLOO tab wants a prompt set); another kind is refused.
    keep_duplicates: also write rows already in the workspace, as new pairs (a prompt set never holds
    the same prompt twice, so there it changes nothing)."""
    p = Path(path)
    name = name or p.name
    rows, unit, numbers = read_rows(p, progress)
    kind, records = _normalize(rows, p.name, unit, numbers)
    if expect and kind not in expect:
        raise DataError(f"{p.name} holds {KIND_WORDS[kind]}; here it must be "
                        + " or ".join(KIND_WORDS[k] for k in expect) + ". Import it in the Label tab instead.")
    if progress:
        progress(0.6, f"checked {len(records):,} rows; writing")
    return write_records(ws, kind, records, name, progress, keep_duplicates=keep_duplicates)


def import_upload(ws: Workspace, uploaded: str | Path, progress: Progress | None = None,
                  expect: tuple[str, ...] | None = None, keep_duplicates: bool = False) -> ImportResult:
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
        return import_file(ws, dst, name=src.name, progress=progress, expect=expect, keep_duplicates=keep_duplicates)
    except DataError:
        shutil.rmtree(folder, ignore_errors=True)  # a refused file leaves nothing behind
        raise


def pair_key(prompt: str, turns, a: str, b: str) -> str:
    """What makes two pairs the same comparison: the prompt (text and turns) and the two responses, either order."""
    x, y = sorted((a, b))
    blob = json.dumps([prompt, turns if isinstance(turns, list) and turns else None, x, y],
                      ensure_ascii=False, separators=(",", ":"))
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


def _existing_keys(con, keys) -> set[str]:
    """Which of these keys some pair of the workspace already has: one indexed join."""
    con.execute("CREATE TEMP TABLE IF NOT EXISTS import_keys (k TEXT PRIMARY KEY)")
    con.execute("DELETE FROM temp.import_keys")
    con.executemany("INSERT OR IGNORE INTO temp.import_keys (k) VALUES (?)", ((k,) for k in keys))
    found = {r[0] for r in con.execute(
        "SELECT k FROM temp.import_keys t WHERE EXISTS (SELECT 1 FROM pairs p WHERE p.dedup_key = t.k)")}
    con.execute("DELETE FROM temp.import_keys")
    return found


def _write_prompts(con, sid: int, records: list[Row], progress: Progress | None) -> tuple[int, int, int]:
    """A prompt set: rows whose prompt is already in the set are skipped. (added, skipped, repeated)"""
    existing = {r[0] for r in con.execute("SELECT text FROM prompts WHERE set_id=?", (sid,))}
    seen: set[str] = set()
    added = skipped = repeated = 0
    for i, rec in enumerate(records):
        if rec.prompt in existing or rec.prompt in seen:
            skipped += 1
            repeated += rec.prompt in seen
        else:
            add_prompt(con, sid, rec.prompt, rec.extra)
            seen.add(rec.prompt)
            added += 1
        if progress and i % 2000 == 0:
            progress(0.6 + 0.4 * i / len(records), f"writing {i:,} / {len(records):,}")
    return added, skipped, repeated


def write_records(ws: Workspace, kind: str, records: list[Row], name: str,
                  progress: Progress | None = None, keep_duplicates: bool = False) -> ImportResult:
    now = time.time()
    source = f"import:{name}"
    columns = tuple(sorted({k for rec in records for k in rec.extra}))
    plans = [[(a, b, pair_key(rec.prompt, rec.turns, rec.responses[a], rec.responses[b]))
              for a, b in ([(0, 1)] if rec.preferred else candidate_pairs(len(rec.responses)))]
             for rec in records]
    with ws.transaction() as con:
        sid = get_or_create_set(con, name, source)
        if kind == "prompts":
            added, skipped, repeated = _write_prompts(con, sid, records, progress)
            return ImportResult(kind, name, len(records), 0, added, columns, skipped, repeated)
        if keep_duplicates:
            existing: set[str] = set()
        else:
            fill_keys(con)
            existing = _existing_keys(con, (k for plan in plans for _, _, k in plan))
        ann = None
        if kind == "preference":
            con.execute("INSERT OR IGNORE INTO annotators (name, created) VALUES (?, ?)", (IMPORT_ANNOTATOR, now))
            ann = con.execute("SELECT id FROM annotators WHERE name=?", (IMPORT_ANNOTATOR,)).fetchone()[0]
        seen: set[str] = set()
        prompt_ids, pairs, skipped, repeated = set(), 0, 0, 0
        for i, (rec, plan) in enumerate(zip(records, plans)):
            if progress and i % 2000 == 0:
                progress(0.6 + 0.4 * i / len(records), f"writing {i:,} / {len(records):,}")
            new = plan if keep_duplicates else [x for x in plan if x[2] not in existing and x[2] not in seen]
            if not new:  # every pair of the row is already there
                skipped += 1
                repeated += not all(k in existing for _, _, k in plan)
                continue
            seen.update(k for _, _, k in new)
            pid = add_prompt(con, sid, rec.prompt, rec.extra)
            prompt_ids.add(pid)
            rids: dict[int, int] = {}
            for a, b, key in new:
                for j in (a, b):
                    if j not in rids:
                        rids[j] = add_response(con, pid, rec.responses[j], source, now)
                pair = add_pair(con, pid, rids[a], rids[b], name, now, key)
                pairs += 1
                if rec.preferred:
                    add_imported_label(con, pair, ann, now=now)
    return ImportResult(kind, name, len(records), pairs, len(prompt_ids), columns, skipped, repeated)
