"""Scoring the labeled set (Inspect's Dataset view) against a bare batched forward pass over the same tokens.

    .venv/bin/python bench/bench_dataset_scoring.py [--repeats 7] [--big-repeats 5] [--budgets 1024 2048 4096 16384]

The texts: every labeled pair of the bundled demo data (both responses, chat template applied, as the reward
model reads them). Variants, interleaved (A, B, C, ... A, B, C, ...) after one uncounted round:

  dataset   inspect.dataset.score_labeled with no cache: tokenizing (format_ids_many), token-budget batches
            (scoring.length_batches), the backbone, the head at each text's last token
  bare      the backbone alone over the same token ids in the same batches: no tokenizing, no head, no read-out
            (the target: the dataset path should reach >= 0.9x its tokens per second)
  before    the path the Dataset view took before: one tokenizer call per text with offsets, batches
            of 16 texts, the head applied at every position and every position's score read back
  kept      score_labeled again with every score in the run's cache (a second look)

Two models: the bundled demo model (1 M parameters: tokenizing and per-batch overhead dominate) and a randomly
initialised Qwen3-shaped model (8 layers, hidden 512, 25 M parameters; built from a config, no download).
Tokens per second count the real tokens (no padding). Prints medians and the ratio dataset / bare.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from rloo_studio.core import bootstrap  # noqa: F401,E402

# isort: split
import torch  # noqa: E402
from bench_scoring import big_scorer  # noqa: E402

from rloo_studio.core.paths import DEMO_MODEL  # noqa: E402
from rloo_studio.core.reward_input import format_ids_many  # noqa: E402
from rloo_studio.inspect import scoring  # noqa: E402
from rloo_studio.inspect.dataset import score_labeled  # noqa: E402
from rloo_studio.inspect.score_cache import ScoreCache  # noqa: E402
from rloo_studio.label.demo_data import open_workspace  # noqa: E402
from rloo_studio.label.store import preference_pairs  # noqa: E402


@torch.inference_mode()
def bare(scorer: scoring.Scorer, ids: list[list[int]], budget: int) -> None:
    backbone, _ = scoring._parts(scorer.model)
    for idx in scoring.length_batches([len(x) for x in ids], 1 << 16, budget):
        x, mask, pos = scoring._padded(ids, idx, scoring._pad_id(scorer))
        backbone(input_ids=x, attention_mask=mask, position_ids=pos)


def before(scorer: scoring.Scorer, rows: list[dict]) -> list[float]:
    ids = [scoring._encode(scorer.tok, r["prompt"], t, scorer.enable_thinking)[0]
           for r in rows for t in (r["chosen"], r["rejected"])]
    with torch.inference_mode():
        return [s[-1] for s in scoring.position_scores(scorer, ids, 16)]


def measure(name: str, scorer: scoring.Scorer, rows: list[dict], repeats: int, budget: int, tmp: Path) -> dict:
    ids = format_ids_many(scorer.tok, [r["prompt"] for r in rows for _ in (0, 1)],
                          [t for r in rows for t in (r["chosen"], r["rejected"])], scorer.enable_thinking)
    tokens = sum(map(len, ids))
    run = tmp / f"run-{name}-{budget}"
    run.mkdir()
    (run / "adapter.safetensors").write_bytes(b"x")  # the cache's stamp reads a file; nothing is loaded from it
    cache = ScoreCache(run, run / "adapter.safetensors", scorer.enable_thinking)
    ref = score_labeled(scorer, rows, cache, batch_tokens=budget)  # fills the cache; also the uncounted warm-up
    old = before(scorer, rows)
    err = max(abs(a - b) for pair, (c, r) in zip(zip(old[::2], old[1::2]), ref) for a, b in zip(pair, (c, r)))
    variants = {
        "dataset": lambda: score_labeled(scorer, rows, None, batch_tokens=budget),
        "bare": lambda: bare(scorer, ids, budget),
        "before": lambda: before(scorer, rows),
        "kept": lambda: score_labeled(scorer, rows, cache, batch_tokens=budget),
    }
    bare(scorer, ids, budget)
    times: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(repeats):
        for k, fn in variants.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    cache.close()
    med = {k: statistics.median(v) for k, v in times.items()}
    return {"model": name, "budget": budget, "texts": len(ids), "tokens": tokens, "max_diff_vs_before": err,
            **{f"{k}_s": round(v, 4) for k, v in med.items()},
            **{f"{k}_tok_s": round(tokens / v) for k, v in med.items()},
            "dataset_over_bare": round(med["bare"] / med["dataset"], 3),
            "dataset_vs_before_speedup": round(med["before"] / med["dataset"], 2),
            "kept_speedup": round(med["dataset"] / med["kept"], 1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--big-repeats", type=int, default=5)
    ap.add_argument("--budgets", type=int, nargs="+", default=[1024, 2048, 4096, 16384])
    ap.add_argument("--only", choices=["demo", "big"])
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        ws = open_workspace(Path(d) / "ws", demo=True)
        rows = preference_pairs(ws)
        demo = scoring.load_scorer(reward_model=str(DEMO_MODEL))
        models = [("demo", demo, a.repeats), ("qwen3-25M", big_scorer(demo.tok), a.big_repeats)]
        for name, scorer, repeats in models:
            if a.only and not name.startswith(a.only[:3]):
                continue
            for budget in a.budgets:
                print(measure(name, scorer, rows, repeats, budget, Path(d)), flush=True)


if __name__ == "__main__":
    main()
