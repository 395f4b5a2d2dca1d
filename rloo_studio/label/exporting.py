"""Export labeled pairs as TRL-ready preference datasets (for other tools; training reads the store).

Format by the output name: `.jsonl` JSONL, `.parquet` Parquet, anything else a `datasets`
folder (save_to_disk). `standard` rows are {prompt, chosen, rejected} strings; `conversational`
rows hold lists of {role, content} messages. Ties and skips are left out, or written apart.

Step labels (export_steps) go out in the stepwise-supervision shape: {prompt, completions: the labeled steps,
labels: true / false per step, and the prompt's other columns}, the shape the stepwise import reads.
"""
from __future__ import annotations

import json
import random
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from rloo_studio.core.errors import DataError
from rloo_studio.core.paths import typed_path
from rloo_studio.core.workspace import Workspace
from rloo_studio.label.shapes import STEPWISE, TURNS
from rloo_studio.label.steps import labeled_responses
from rloo_studio.label.store import decided_pairs

FORMATS = ("standard", "conversational")


@dataclass
class ExportResult:
    paths: list[Path]
    rows: int
    ties: int
    skipped: int
    cut_turns: int = 0  # standard format: pairs whose multi-turn prompt was written as its last user message

    def summary(self) -> str:
        names = ", ".join(p.name for p in self.paths)
        msg = f"Exported {self.rows} pairs to {names} (left out: {self.ties} ties, {self.skipped} skipped)."
        if self.cut_turns:
            msg += (f" {self.cut_turns} pairs have a prompt of several messages (turns, a system message): the "
                    "standard format holds only the last user message; export as conversational to keep them all.")
        return msg


def _row(d: dict, fmt: str, win: str, lose: str) -> dict:
    extra = json.loads(d["extra"]) if d.get("extra") else {}
    if fmt == "standard":
        return {"prompt": d["prompt"], "chosen": win, "rejected": lose}
    prompt = extra.get(TURNS) or [{"role": "user", "content": d["prompt"]}]  # the turns, as imported
    return {
        "prompt": prompt,
        "chosen": [{"role": "assistant", "content": win}],
        "rejected": [{"role": "assistant", "content": lose}],
    }


def _spool(ws: Workspace, fmt: str, rows_out: Path, ties_out: Path) -> tuple[int, int, int, int]:
    """One streaming pass over the decided pairs: preference rows to `rows_out`, tie rows (both responses kept)
    to `ties_out`, as JSON lines. Returns (rows, ties, skip-only pairs, preference rows whose prompt has turns
    that the standard format cannot hold)."""
    n = n_ties = skipped = cut = 0
    with open(rows_out, "w", encoding="utf-8") as rows, open(ties_out, "w", encoding="utf-8") as ties:
        for d in decided_pairs(ws):
            if d["outcome"] in ("a", "b"):
                if fmt == "standard" and d.get("extra") and TURNS in json.loads(d["extra"]):
                    cut += 1
                win, lose = (d["a"], d["b"]) if d["outcome"] == "a" else (d["b"], d["a"])
                rows.write(json.dumps(_row(d, fmt, win, lose), ensure_ascii=False) + "\n")
                n += 1
            elif d["outcome"] == "tie":
                ties.write(json.dumps({**_row(d, fmt, d["a"], d["b"]), "label": "tie"}, ensure_ascii=False) + "\n")
                n_ties += 1
            else:
                skipped += 1
    return n, n_ties, skipped, cut


def _lines(src: Path, keep: Callable[[int], bool] = lambda i: True) -> Iterator[str]:
    with open(src, encoding="utf-8") as f:
        yield from (line for i, line in enumerate(f) if keep(i))


def _write(src: Path, out: Path, tmp: Path, keep: Callable[[int], bool] = lambda i: True) -> Path:
    """The JSON lines of `src` that `keep` takes (by line number), written as `out` in its format, a batch at a
    time; `out` appears whole or not at all."""
    out.parent.mkdir(parents=True, exist_ok=True)
    suffix = out.suffix.lower()
    part = tmp / ("part" + suffix)
    if suffix == ".jsonl":
        with open(part, "w", encoding="utf-8") as f:
            f.writelines(_lines(src, keep))
    elif suffix == ".parquet":
        _write_parquet(_lines(src, keep), part)
    else:
        return _write_dataset({"": _lines(src, keep)}, out, tmp)
    shutil.move(str(part), str(out))
    return out


def _write_parquet(lines: Iterator[str], out: Path, batch: int = 20_000) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    writer = None
    try:
        while chunk := [json.loads(line) for line in islice(lines, batch)]:
            table = pa.Table.from_pylist(chunk, schema=writer.schema if writer else None)
            writer = writer or pq.ParquetWriter(out, table.schema)
            writer.write_table(table)
    finally:
        if writer:
            writer.close()


def _write_dataset(splits: dict[str, Iterator[str]], out: Path, tmp: Path) -> Path:
    """A `datasets` folder (save_to_disk): one Dataset ('' as the only split) or a DatasetDict, each read by
    datasets from a JSON-lines file in blocks (Arrow on disk, not a list in memory)."""
    from datasets import Dataset, DatasetDict

    parts = {}
    for name, lines in splits.items():  # a new file each call: datasets caches a file by its path and mtime
        path = Path(tempfile.mkstemp(prefix=f"split-{name or 'all'}-", suffix=".jsonl", dir=tmp)[1])
        with open(path, "w", encoding="utf-8") as f:
            f.writelines(lines)
        parts[name] = Dataset.from_json(str(path), cache_dir=str(tmp / "cache"))
    (parts[""] if "" in parts else DatasetDict(parts)).save_to_disk(str(out))
    return out


def _with_tag(out: Path, tag: str) -> Path:
    if out.suffix.lower() in (".jsonl", ".parquet"):
        return out.with_name(f"{out.stem}.{tag}{out.suffix}")
    return out.with_name(f"{out.name}-{tag}")


def export(ws: Workspace, out: str | Path, fmt: str = "standard", ties_apart: bool = False,
           test_fraction: float = 0.0, seed: int = 0) -> ExportResult:
    """Write every labeled, non-tie pair to `out`, in pair order; optionally a train/test split and a ties file.

    With a split, `out` gets `.train` / `.test` tags (JSONL, Parquet) or becomes a DatasetDict folder with
    train and test splits; the test rows are a seeded random sample of int(rows x test_fraction) (at least
    one). A stream: rows go through a temporary JSON-lines file in the workspace, never all in memory.
    """
    out = typed_path(out, "export file")
    if fmt not in FORMATS:
        raise DataError(f"unknown format {fmt!r}; choose standard or conversational")
    if not 0 <= test_fraction < 1:
        raise DataError(f"test fraction must be in [0, 1), got {test_fraction}")
    tmp = Path(tempfile.mkdtemp(prefix=".export-", dir=ws.root))
    try:
        rows, ties = tmp / "rows.jsonl", tmp / "ties.jsonl"
        n, n_ties, skipped, cut = _spool(ws, fmt, rows, ties)
        if not n:
            raise DataError("no labeled pairs with a preference to export yet")
        paths = []
        if test_fraction > 0:
            if n < 2:
                raise DataError(f"A train/test split needs at least 2 labeled pairs; there is {n}.")
            test = set(random.Random(seed).sample(range(n), max(1, int(n * test_fraction))))
            if out.suffix.lower() in (".jsonl", ".parquet"):
                paths += [_write(rows, _with_tag(out, "train"), tmp, lambda i: i not in test),
                          _write(rows, _with_tag(out, "test"), tmp, test.__contains__)]
            else:
                paths.append(_write_dataset({"train": _lines(rows, lambda i: i not in test),
                                             "test": _lines(rows, test.__contains__)}, out, tmp))
        else:
            paths.append(_write(rows, out, tmp))
        if ties_apart and n_ties:
            paths.append(_write(ties, _with_tag(out, "ties"), tmp))
        return ExportResult(paths, n, n_ties, skipped, cut)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@dataclass
class StepExportResult:
    paths: list[Path]
    rows: int  # labeled responses written (one row per response and annotator)
    steps: int  # step labels in them
    who: str

    def summary(self) -> str:
        names = ", ".join(p.name for p in self.paths)
        whose = "" if self.who == "all" else f" by {self.who}"
        return (f"Exported {self.rows:,} labeled responses ({self.steps:,} step labels{whose}) to {names} as prompt / "
                "completions / labels; a neutral step counts as right (true).")


def export_steps(ws: Workspace, out: str | Path, who: str = "all") -> StepExportResult:
    """Write the step labels of `who` ('all', 'people', 'rollouts' or an annotator's name; steps.labeled_responses)
    to `out` (.jsonl, .parquet, else a `datasets` folder): one row per labeled response and annotator, its
    completions the labeled steps (up to and including the first bad one), labels verdict >= 0. Every row has the
    same columns: the prompts' other columns (e.g. answer), empty where a prompt has none."""
    out = typed_path(out, "export file")
    entries = labeled_responses(ws, who)
    if not entries:
        raise DataError("No step labels to export yet" + ("" if who == "all" else f" by {who}")
                        + ": label the steps of some responses (Label tab, Steps) or import a stepwise file.")
    columns = sorted({k for e in entries for k in e["prompt_extra"]} - {TURNS, *STEPWISE})
    tmp = Path(tempfile.mkdtemp(prefix=".export-", dir=ws.root))
    try:
        rows, steps = tmp / "rows.jsonl", 0
        with open(rows, "w", encoding="utf-8") as f:
            for e in entries:
                n = len(e["labels"])
                steps += n
                row = {"prompt": e["prompt"], "completions": e["steps"][:n], "labels": [v >= 0 for v in e["labels"]],
                       **{c: e["prompt_extra"].get(c) for c in columns}}
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
        try:
            path = _write(rows, out, tmp)
        except (TypeError, ValueError) as exc:  # pyarrow: a column whose values differ in type from set to set
            raise DataError(f"The prompts' columns ({', '.join(columns)}) hold values of different types, which "
                            f"{out.suffix or 'a datasets folder'} cannot store in one column; export as .jsonl "
                            f"({str(exc)[:200]})") from None
        return StepExportResult([path], len(entries), steps, who)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
