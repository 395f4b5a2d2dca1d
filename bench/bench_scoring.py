"""One-pass per-step reward scores vs naive re-scoring of every step prefix.

    .venv/bin/python bench/bench_scoring.py [--repeats 15] [--big-repeats 5] [--steps 4 8 16 32]

Both variants return the same numbers: every step's score and the total. One-pass:
scoring.score_responses(answer_alone=False) (one forward over the text; the Inspect tab also
scores the answer alone as a second, short text in the same batch). Naive:
scoring.naive_step_scores (one forward per step prefix, plus the whole text). Variants are
interleaved (A, B, A, B, ...) so that load from other processes hits both alike; medians and
their ratio are printed. Two models: the bundled demo model (1 M parameters: per-call overhead
dominates) and a randomly initialised Qwen3-shaped model built locally from a config (no
download), large enough that compute dominates.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from rloo_studio.core import bootstrap  # noqa: F401,E402

# isort: split
import torch  # noqa: E402

from rloo_studio.core.paths import DEMO_MODEL  # noqa: E402
from rloo_studio.inspect import scoring  # noqa: E402

PROMPT = "Add 4821 and 5937."


def response(n_steps: int) -> str:
    """A demo-style reasoning trace with n_steps blank-line-separated steps."""
    lines = [f"{(3 * k) % 10}+{(7 * k + 1) % 10}+{k % 2}={(3 * k) % 10 + (7 * k + 1) % 10 + k % 2}"
             for k in range(n_steps)]
    return "<think>\n" + "\n\n".join(lines) + "\n</think>\n\nThe answer is 10758."


def big_scorer(tok) -> scoring.Scorer:
    from transformers import AutoModelForSequenceClassification, Qwen3Config

    cfg = Qwen3Config(
        vocab_size=len(tok), hidden_size=512, intermediate_size=1536, num_hidden_layers=8, num_attention_heads=8,
        num_key_value_heads=4, head_dim=64, max_position_embeddings=4096, num_labels=1,
        pad_token_id=tok.pad_token_id, tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_config(cfg, dtype=torch.float32).eval()
    return scoring.Scorer(model, tok, "random Qwen3-shaped (8 layers, hidden 512)", False)


def interleaved(variants: dict, repeats: int) -> dict[str, float]:
    """The median seconds of each variant over `repeats` rounds, one call of each per round (A, B, A, B, ...), so
    that load from other processes hits them alike. Warm up before calling it."""
    times: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(repeats):
        for name, fn in variants.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def measure(scorer: scoring.Scorer, n_steps: int, repeats: int) -> tuple[float, float, int, float]:
    r = response(n_steps)
    variants = {
        "one-pass": lambda: scoring.score_responses(scorer, [(PROMPT, r)], answer_alone=False),
        "naive": lambda: scoring.naive_step_scores(scorer, PROMPT, r),
    }
    fast, ref = variants["one-pass"]()[0], variants["naive"]()  # warm-up, and a correctness check
    assert len(fast.steps) == len(ref["steps"]) == n_steps
    err = max(abs(a.score - b) for a, b in zip(fast.steps, ref["steps"]))
    med = interleaved(variants, repeats)
    n_tokens = len(scoring._encode(scorer.tok, PROMPT, r)[0])
    return med["one-pass"], med["naive"], n_tokens, err


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--big-repeats", type=int, default=5)
    ap.add_argument("--steps", type=int, nargs="+", default=[4, 8, 16, 32])
    ap.add_argument("--skip-big", action="store_true")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads (default 1: on a shared 2-core machine more threads mostly add noise)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    demo = scoring.load_scorer(reward_model=str(DEMO_MODEL))
    models = [(demo, a.repeats)] + ([] if a.skip_big else [(big_scorer(demo.tok), a.big_repeats)])
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, fp32, CPU")
    for sc, reps in models:
        n_params = sum(p.numel() for p in sc.model.parameters())
        print(f"\n{sc.label}: {n_params / 1e6:.1f} M parameters, {reps} interleaved repeats")
        print(f"{'steps':>5} {'tokens':>6} {'one-pass ms':>12} {'naive ms':>10} {'ratio':>7} {'max |diff|':>10}")
        for n in a.steps:
            fast, naive, toks, err = measure(sc, n, reps)
            print(f"{n:>5} {toks:>6} {fast * 1e3:>12.1f} {naive * 1e3:>10.1f} {naive / fast:>6.1f}x {err:>10.1e}",
                  flush=True)


if __name__ == "__main__":
    main()
