"""A process reward model's training data: the workspace's step labels as token-classification examples.

Each step-labeled response becomes the chat prompt + the response as it follows it (inspect/process.py `encode`,
the text scoring reads), labeled at each step's read position: 1 right (good or neutral), 0 wrong, -100 (not
trained on) everywhere else, as TRL's old stepwise `tokenize_row` did. The split is by prompt, seeded, and kept
in the run folder (steps.jsonl) so that a resumed run trains on exactly the same rows.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

from rloo_studio.core.errors import DataError
from rloo_studio.prm.config import MIN_RESPONSES, PrmJobConfig

IGNORE = -100
SPLIT_FILE = "steps.jsonl"


def step_targets(steps: int, verdicts: list[int], after_first_bad: str) -> list[int | None]:
    """Per step: 1 right, 0 wrong, None not trained on. Labels stop at the first bad step; the steps after it are
    wrong (after_first_bad='wrong') or left out ('ignore'); steps never labeled are left out."""
    out: list[int | None] = [None] * steps
    for k, v in enumerate(verdicts[:steps]):
        out[k] = 0 if v < 0 else 1
        if v < 0:
            if after_first_bad == "wrong":
                out[k + 1:] = [0] * (steps - k - 1)
            break
    return out


def labeled_rows(ws, cfg: PrmJobConfig) -> list[dict]:
    """{prompt, response, targets, response_id, annotator} per step-labeled response (and annotator)."""
    from rloo_studio.label.steps import labeled_responses

    rows = []
    for r in labeled_responses(ws, cfg.labels_from):
        targets = step_targets(len(r["steps"]), r["labels"], cfg.after_first_bad)
        if any(t is not None for t in targets):
            rows.append({"prompt": r["prompt"], "response": r["response"], "targets": targets,
                         "response_id": r["response_id"], "annotator": r["annotator"]})
    return rows


def split(rows: list[dict], fraction: float, seed: int) -> tuple[list[dict], list[dict]]:
    """(held_out, train): a seeded share of the prompts, with all their responses, held out."""
    prompts = sorted({r["prompt"] for r in rows})
    random.Random(seed).shuffle(prompts)
    held = set(prompts[:int(len(prompts) * fraction)])
    return [r for r in rows if r["prompt"] in held], [r for r in rows if r["prompt"] not in held]


def run_rows(ws, run_dir: Path, cfg: PrmJobConfig) -> tuple[list[dict], list[dict]]:
    """(train, held_out) of a run: made and saved at its start, read back on resume."""
    saved = Path(run_dir) / SPLIT_FILE
    if saved.exists():
        rows = [json.loads(x) for x in saved.read_text().splitlines() if x.strip()]
        return [r for r in rows if r["split"] == "train"], [r for r in rows if r["split"] == "held_out"]
    rows = labeled_rows(ws, cfg)
    if len(rows) < MIN_RESPONSES:
        raise DataError(f"Only {len(rows)} step-labeled responses ({cfg.labels_from}); label the steps of at least "
                        f"{MIN_RESPONSES} (better: hundreds) in the Label tab's step mode, import a stepwise file, "
                        "or make step labels from rollouts.")
    held, train = split(rows, cfg.eval_fraction, cfg.seed)
    with open(saved, "w") as f:
        for name, part in (("held_out", held), ("train", train)):
            for r in part:
                f.write(json.dumps({**r, "split": name}) + "\n")
    return train, held


def examples(tok, rows: list[dict], cfg: PrmJobConfig) -> tuple[list[dict], dict]:
    """Token-classification examples ({input_ids, labels, and each step's first token and read position: starts,
    positions}) and what was left out: responses longer than
    max_length, and those whose steps the tokenizer does not give back one by one (a step with no token)."""
    from rloo_studio.inspect.process import encode

    out, left = [], {"too_long": 0, "steps_differ": 0}
    for r in rows:
        enc = encode(tok, r["prompt"], r["response"], cfg.enable_thinking, cfg.read_at)
        if len(enc.ids) > cfg.max_length:
            left["too_long"] += 1
            continue
        if len(enc.positions) != len(r["targets"]):
            left["steps_differ"] += 1
            continue
        labels = [IGNORE] * len(enc.ids)
        for pos, t in zip(enc.positions, r["targets"]):
            if t is not None:
                labels[pos] = t
        out.append({"input_ids": enc.ids, "labels": labels, "starts": list(enc.starts), "positions": enc.positions})
    return out, left


def truth(rows: list[dict]) -> list[list[int]]:
    """The held-out responses' labeled steps in order (1 right / 0 wrong), for inspect.process.step_figures: the
    prefix up to the first wrong step, whatever after_first_bad trained on."""
    out = []
    for r in rows:
        ts = [t for t in r["targets"] if t is not None]
        first = next((k for k, t in enumerate(ts) if t == 0), None)
        out.append(ts if first is None else ts[:first + 1])
    return out
