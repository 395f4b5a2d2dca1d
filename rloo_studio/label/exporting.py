"""Export labeled pairs as TRL-ready preference datasets (for other tools; training reads the store).

Format by the output name: `.jsonl` JSONL, `.parquet` Parquet, anything else a `datasets`
folder (save_to_disk). `standard` rows are {prompt, chosen, rejected} strings; `conversational`
rows hold lists of {role, content} messages. Ties and skips are left out, or written apart.
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from rloo_studio.core.errors import DataError
from rloo_studio.core.paths import typed_path
from rloo_studio.label.store import decided_pairs
from rloo_studio.label.shapes import TURNS
from rloo_studio.core.workspace import Workspace

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
            msg += (f" {self.cut_turns} pairs have a prompt of several messages (turns, a system message): the standard "
                    "format holds only the last user message; export as conversational to keep them all.")
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


def export_rows(ws: Workspace, fmt: str = "standard") -> tuple[list[dict], list[dict], int, int]:
    """(preference rows, tie rows, number of skip-only pairs, number of preference rows whose prompt has
    turns that the standard format cannot hold). Tie rows keep both responses."""
    if fmt not in FORMATS:
        raise DataError(f"unknown format {fmt!r}; choose standard or conversational")
    rows, ties, skipped, cut = [], [], 0, 0
    for d in decided_pairs(ws):
        if fmt == "standard" and d["outcome"] in ("a", "b") and d.get("extra") and TURNS in json.loads(d["extra"]):
            cut += 1
        if d["outcome"] == "a":
            rows.append(_row(d, fmt, d["a"], d["b"]))
        elif d["outcome"] == "b":
            rows.append(_row(d, fmt, d["b"], d["a"]))
        elif d["outcome"] == "tie":
            ties.append({**_row(d, fmt, d["a"], d["b"]), "label": "tie"})
        else:
            skipped += 1
    return rows, ties, skipped, cut


def _write(rows: list[dict], out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    suffix = out.suffix.lower()
    if suffix == ".jsonl":
        tmp = out.with_suffix(".jsonl.tmp")
        tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        tmp.replace(out)
    elif suffix == ".parquet":
        import pandas as pd

        pd.DataFrame(rows).to_parquet(out, index=False)
    else:
        from datasets import Dataset

        Dataset.from_list(rows).save_to_disk(str(out))
    return out


def _with_tag(out: Path, tag: str) -> Path:
    if out.suffix.lower() in (".jsonl", ".parquet"):
        return out.with_name(f"{out.stem}.{tag}{out.suffix}")
    return out.with_name(f"{out.name}-{tag}")




def export(ws: Workspace, out: str | Path, fmt: str = "standard", ties_apart: bool = False,
           test_fraction: float = 0.0, seed: int = 0) -> ExportResult:
    """Write every labeled, non-tie pair to `out`; optionally a train/test split and a ties file.

    With a split, `out` gets `.train` / `.test` tags (JSONL, Parquet) or becomes a DatasetDict
    folder with train and test splits.
    """
    out = typed_path(out, "export file")
    if not 0 <= test_fraction < 1:
        raise DataError(f"test fraction must be in [0, 1), got {test_fraction}")
    rows, ties, skipped, cut = export_rows(ws, fmt)
    if not rows:
        raise DataError("no labeled pairs with a preference to export yet")
    paths = []
    if test_fraction > 0:
        shuffled = rows[:]
        random.Random(seed).shuffle(shuffled)
        k = max(1, int(len(shuffled) * test_fraction))
        test, train = shuffled[:k], shuffled[k:]
        if out.suffix.lower() in (".jsonl", ".parquet"):
            paths += [_write(train, _with_tag(out, "train")), _write(test, _with_tag(out, "test"))]
        else:
            from datasets import Dataset, DatasetDict

            DatasetDict({"train": Dataset.from_list(train), "test": Dataset.from_list(test)}).save_to_disk(str(out))
            paths.append(out)
    else:
        paths.append(_write(rows, out))
    if ties_apart and ties:
        paths.append(_write(ties, _with_tag(out, "ties")))
    return ExportResult(paths, len(rows), len(ties), skipped, cut)
