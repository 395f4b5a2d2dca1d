"""A process reward model's scoring against a bare batched forward over the same responses, in tokens per second.

    .venv/bin/python bench/bench_prm_scoring.py [--responses 64] [--repeats 7] [--threads 1] [--step-score min_so_far]

PRM: inspect.process.score_steps, what Inspect, `score`, the labeled-set figures and RLOO's process reward call:
each response encoded with the chat template, its step read positions found, one forward pass per batch of 16, every
step's probability read and the verdicts built. Bare: the model called on the same token ids in the same batches
(ids made beforehand, nothing read back), the floor any scorer pays. Variants are interleaved (PRM, bare, PRM, ...)
after an uncounted warm-up; medians and their ratio are printed (goal: PRM >= 0.9x bare). Two models: the bundled
demo model with a two-label head (1 M parameters: per-call overhead dominates) and a randomly initialised
Qwen3-shaped token classifier built from a config (8 layers, hidden 512; no download), where compute dominates.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from rloo_studio.core import bootstrap  # noqa: F401,E402

# isort: split
import torch  # noqa: E402
from bench_scoring import interleaved  # noqa: E402

from rloo_studio.core.paths import DEMO_MODEL  # noqa: E402
from rloo_studio.inspect import process  # noqa: E402
from rloo_studio.inspect.scoring import length_batches  # noqa: E402

BATCH = 16


def responses(n: int) -> list[tuple[str, str]]:
    """Demo-style additions with 3 to 16 blank-line-separated steps."""
    out = []
    for i in range(n):
        steps = 3 + i % 14
        lines = [f"{(3 * k + i) % 10}+{(7 * k + 1) % 10}+{k % 2}={(3 * k + i) % 10 + (7 * k + 1) % 10 + k % 2}"
                 for k in range(steps)]
        out.append((f"Add {1000 + 37 * i} and {2000 + 91 * i}.",
                    "<think>\n" + "\n\n".join(lines) + f"\n</think>\n\nThe answer is {3000 + 128 * i}."))
    return out


def demo_prm(tok):
    from transformers import AutoModelForTokenClassification

    torch.manual_seed(0)
    model = AutoModelForTokenClassification.from_pretrained(str(DEMO_MODEL), num_labels=2).eval()
    return process.ProcessScorer(model, tok, "demo model, two-label head (1 M parameters)")


def big_prm(tok):
    from transformers import AutoModelForTokenClassification, Qwen3Config

    cfg = Qwen3Config(vocab_size=len(tok), hidden_size=512, intermediate_size=1536, num_hidden_layers=8,
                      num_attention_heads=8, num_key_value_heads=4, head_dim=64, max_position_embeddings=4096,
                      num_labels=2, pad_token_id=tok.pad_token_id, tie_word_embeddings=True)
    torch.manual_seed(0)
    model = AutoModelForTokenClassification.from_config(cfg, dtype=torch.float32).eval()
    return process.ProcessScorer(model, tok, "random Qwen3-shaped token classifier (8 layers, hidden 512)")


def measure(scorer, items, repeats: int) -> tuple[float, float, int]:
    encs = [process.encode(scorer.tok, p, r, scorer.enable_thinking, scorer.read_at) for p, r in items]
    pad = scorer.tok.pad_token_id
    lengths = [len(e.ids) for e in encs]

    @torch.inference_mode()
    def bare():
        for idx in length_batches(lengths, BATCH):
            ids, mask = process.padded([e.ids for e in encs], idx, pad)
            scorer.model(input_ids=ids, attention_mask=mask)

    variants = {"prm": lambda: process.score_steps(scorer, items, batch_size=BATCH), "bare": bare}
    scored = variants["prm"]()  # warm-up, and a check that every step got its probability
    assert all(len(s["steps"]) == len(e.steps) for s, e in zip(scored, encs))
    variants["bare"]()
    med = interleaved(variants, repeats)
    return med["prm"], med["bare"], sum(lengths)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--responses", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads (default 1: on a shared 2-core machine more threads mostly add noise)")
    ap.add_argument("--skip-big", action="store_true")
    ap.add_argument("--step-score", default="at_read", choices=process.STEP_SCORES,
                    help="how each step is read: at its read position, or the lowest over the tokens so far")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    from rloo_studio.core.models import load_tokenizer

    tok = load_tokenizer(str(DEMO_MODEL))
    items = responses(a.responses)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, fp32, CPU; {len(items)} responses, "
          f"batches of {BATCH}, {a.repeats} interleaved repeats")
    print(f"{'model':<62} {'tokens':>6} {'PRM tok/s':>10} {'bare tok/s':>10} {'PRM / bare':>10}")
    for scorer in [demo_prm(tok)] + ([] if a.skip_big else [big_prm(tok)]):
        scorer.step_score = a.step_score
        prm, bare, tokens = measure(scorer, items, a.repeats)
        print(f"{scorer.label:<62} {tokens:>6} {tokens / prm:>10.0f} {tokens / bare:>10.0f} {bare / prm:>9.2f}x",
              flush=True)


if __name__ == "__main__":
    main()
