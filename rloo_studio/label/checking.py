"""Checking an import file before anything is written: what kind of rows it holds, each row checked as the store
will keep it (a DataError naming the file, the line or row and the field otherwise), and the checked rows kept
in a temporary file (the spool), a chunk at a time, for the writing pass (importing.py) to read back without
parsing and checking the file again. check_parts.py does the same for a big JSONL file on every core."""
from __future__ import annotations

import json
import pickle
from itertools import chain, islice
from pathlib import Path
from typing import Iterator

from rloo_studio.core.errors import DataError
from rloo_studio.label import shapes as S
from rloo_studio.label.prm800k import PRM800K, prm800k_row
from rloo_studio.label.reading import Progress, iter_rows
from rloo_studio.label.shapes import Row

SPOOL_ROWS = 20_000  # checked rows a record of the spool holds
STEP_KINDS = ("steps", "processbench", "prm800k")  # files of step-labeled responses, all stored as stepwise rows


def kind_of(rows: list[dict], name: str) -> tuple[str, list[str]]:
    """What the file holds, from the columns of its first rows, and its response_1..N columns in order."""
    cols = set().union(*(r.keys() for r in rows[:100]))
    resp_cols = sorted((c for c in cols if c.startswith("response_") and c[9:].isdigit()), key=lambda c: int(c[9:]))
    if {"chosen", "rejected"} <= cols:
        return "preference", resp_cols
    if set(S.STEPWISE) <= cols:
        return "steps", resp_cols
    if set(S.PROCESSBENCH) <= cols:
        return "processbench", resp_cols
    if set(PRM800K) <= cols:
        return "prm800k", resp_cols
    if "prompt" in cols and ("responses" in cols or len(resp_cols) >= 2):
        return "candidates", resp_cols
    if "prompt" in cols:
        return "prompts", resp_cols
    raise DataError(
        f"{name}: no usable columns. Found: {', '.join(sorted(map(str, cols))) or 'none'}. Expected 'chosen' and "
        "'rejected' (preference pairs, optional 'prompt'), 'prompt' with 'completions' and 'labels' (stepwise: "
        "steps with true / false labels), 'problem' with 'steps' and 'label' (ProcessBench), 'question' and 'label' "
        "(PRM800K's own JSONL), 'prompt' with 'responses' or response_1..N (candidates to label), or "
        "'prompt' alone (a prompt set)"
    )


def record(kind: str, resp_cols: list[str], r: dict, loc: str) -> Row:
    """One file row, checked, as the store keeps it; a DataError at `loc` (file, line or row) otherwise."""
    if kind == "preference":
        return S.preference_row(loc, r)
    if kind == "steps":
        return S.stepwise_row(loc, r)
    if kind == "processbench":
        return S.processbench_row(loc, r)
    if kind == "prm800k":
        return prm800k_row(loc, r)
    if "prompt" not in r:
        raise DataError(f"{loc}: missing field 'prompt'")
    prompt, turns = S.prompt_field(loc, r["prompt"])
    if kind == "prompts":
        return Row(prompt, [], {**S.extra_columns(r, ("prompt",)), **turns}, False)
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
    return Row(prompt, texts, extra, False)


def records(p: Path, progress: Progress | None = None) -> tuple[str, list[str], Iterator[Row]]:
    """The file's kind, its response_1..N columns, and its rows checked one at a time, as they are read."""
    unit, rows = iter_rows(p, progress)
    head = list(islice(rows, 100))
    kind, resp_cols = kind_of([r for _, r in head], p.name)
    return kind, resp_cols, (record(kind, resp_cols, r, f"{p.name} {unit} {n}") for n, r in chain(head, rows))


def check_all(records: Iterator[Row], spool) -> tuple[int, set]:
    """Check every row before anything is written, keeping the checked rows in `spool` (a file: pickle, a chunk
    to a record), so that memory holds one chunk and the writing pass reads them back without parsing and
    checking the file again. The rows' number and their extra columns."""
    n, columns, chunk = 0, set(), []
    for rec in records:
        n += 1
        columns.update(rec.extra)
        chunk.append((rec.prompt, rec.responses, rec.extra, rec.preferred) if rec.steps is None
                     else (rec.prompt, rec.responses, rec.extra, rec.preferred, rec.steps, rec.folded))
        if len(chunk) == SPOOL_ROWS:
            _spool(spool, chunk)
            chunk = []
    if chunk:
        _spool(spool, chunk)
    spool.seek(0)
    return n, columns


def _spool(spool, chunk: list) -> None:
    # pickle keeps every value's type as checked (marshal wrote a numpy str from a datasets folder as its bytes);
    # with its length first: load from a file reads it 3x slower than loads
    data = pickle.dumps(chunk, protocol=pickle.HIGHEST_PROTOCOL)
    spool.write(len(data).to_bytes(8, "little") + data)


def unspooled(spools) -> Iterator[Row]:
    for spool in spools:
        while head := spool.read(8):
            yield from (Row(*r) for r in pickle.loads(spool.read(int.from_bytes(head, "little"))))
