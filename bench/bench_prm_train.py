"""A process reward model's training step with the base frozen: the base run at every step, or its states cached.

    .venv/bin/python bench/bench_prm_train.py [--rounds 20] [--batch 64]

The demo preset's model (the bundled demo model + 2 fresh layers, prm/job.py finetune=frozen) on the bundled step
labels with the teacher's token labels and changed copies (prm/teacher.py), as train-prm --demo builds them. Times
one optimizer step (forward, backward, AdamW) on the same batch both ways, interleaved, after an uncounted warm-up,
and prints the medians and the ratio; also the one-off costs before training: the teacher's labels and the base's
states (prm/cached.py). Then the training order: steps of the fresh layers on the batches of one epoch drawn at
random (padded to their longest response) against the batches of prm/batches.py (similar lengths), interleaved, the
median step time of each, the ratio, and each order's share of padding.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from rloo_studio.core import bootstrap  # noqa: F401,E402

# isort: split
import torch  # noqa: E402

from rloo_studio.core.models import load_token_cls  # noqa: E402
from rloo_studio.core.paths import DEMO_DATA, DEMO_MODEL  # noqa: E402
from rloo_studio.inspect.process import encode, padded  # noqa: E402
from rloo_studio.prm import cached  # noqa: E402
from rloo_studio.prm.batches import LengthBatches  # noqa: E402
from rloo_studio.prm.config import PrmJobConfig  # noqa: E402
from rloo_studio.prm.data import IGNORE, step_targets  # noqa: E402
from rloo_studio.prm.job import freeze_base  # noqa: E402
from rloo_studio.prm.teacher import teacher_examples  # noqa: E402


def examples(tok, cfg) -> list[dict]:
    out = []
    for line in (DEMO_DATA / "step_labels.jsonl").read_text().splitlines():
        r = json.loads(line)
        enc = encode(tok, r["prompt"], r["response"])
        targets = step_targets(len(enc.positions), r["verdicts"], cfg.after_first_bad)
        labels = [IGNORE] * len(enc.ids)
        for pos, t in zip(enc.positions, targets):
            if t is not None:
                labels[pos] = t
        out.append({"input_ids": enc.ids, "labels": labels, "starts": list(enc.starts), "positions": enc.positions})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--batch", type=int, default=64)
    args = ap.parse_args()
    cfg = PrmJobConfig()
    torch.manual_seed(0)
    model, tok = load_token_cls(str(DEMO_MODEL), extra_layers=cfg.extra_layers)
    n_base = model.config.num_hidden_layers - cfg.extra_layers
    freeze_base(model, n_base)
    t = time.perf_counter()
    train = teacher_examples(cfg, tok, examples(tok, cfg), log=lambda *_: None)
    teacher_s = time.perf_counter() - t
    t = time.perf_counter()
    states = cached.base_states(model, n_base, train)
    states_s = time.perf_counter() - t
    top = cached.top_model(model, n_base)
    pick = random.Random(0).sample(range(len(train)), args.batch)
    ids, mask = padded([e["input_ids"] for e in train], pick, tok.pad_token_id)
    labels = cached.collate([{"inputs_embeds": states[i], "labels": train[i]["labels"]} for i in pick])
    whole = {"input_ids": ids, "attention_mask": mask, "labels": labels["labels"]}
    opts = {"whole model": torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4),
            "cached states": torch.optim.AdamW([p for p in top.parameters() if p.requires_grad], lr=1e-4)}
    runs = {"whole model": (model, whole), "cached states": (top, labels)}
    times: dict[str, list[float]] = {k: [] for k in runs}
    for r in range(args.rounds + 2):
        for name, (m, batch) in runs.items():
            t = time.perf_counter()
            loss = m(**batch).loss
            opts[name].zero_grad()
            loss.backward()
            opts[name].step()
            if r >= 2:  # two uncounted warm-up rounds
                times[name].append(time.perf_counter() - t)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(json.dumps({"examples": len(train), "batch": args.batch, "teacher_labels_s": round(teacher_s, 2),
                      "base_states_s": round(states_s, 2),
                      **{f"{k} step s (median)": round(v, 4) for k, v in med.items()},
                      "speed-up": round(med["whole model"] / med["cached states"], 2)}, indent=1))
    print(json.dumps(orders(top, states, train, args.batch, args.rounds), indent=1))


def orders(top, states, train, batch: int, rounds: int) -> dict:
    """Fresh-layer steps on one epoch's batches in random order against prm/batches.py's, interleaved."""
    lengths = [len(e["input_ids"]) for e in train]
    perm = torch.randperm(len(train), generator=torch.Generator().manual_seed(0)).tolist()
    length_order = list(LengthBatches(lengths, batch, seed=0))
    cut = {"random": [perm[i:i + batch] for i in range(0, len(perm) - batch + 1, batch)],
           "length batches": [length_order[i:i + batch] for i in range(0, len(length_order) - batch + 1, batch)]}
    opt = torch.optim.AdamW([p for p in top.parameters() if p.requires_grad], lr=1e-4)
    times: dict[str, list[float]] = {k: [] for k in cut}
    for r in range(min(rounds + 2, *(len(v) for v in cut.values()))):
        for name, batches in cut.items():
            b = cached.collate([{"inputs_embeds": states[i], "labels": train[i]["labels"]} for i in batches[r]])
            t = time.perf_counter()
            loss = top(**b).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
            if r >= 2:  # two uncounted warm-up rounds
                times[name].append(time.perf_counter() - t)
    pad = {k: 1 - sum(lengths[i] for b in v for i in b) / sum(max(lengths[i] for i in b) * len(b) for b in v)
           for k, v in cut.items()}
    med = {k: statistics.median(v) for k, v in times.items()}
    return {**{f"{k}: step s (median)": round(v, 4) for k, v in med.items()},
            **{f"{k}: padding share": round(v, 3) for k, v in pad.items()},
            "length batches / random": round(med["length batches"] / med["random"], 2)}


if __name__ == "__main__":
    main()
