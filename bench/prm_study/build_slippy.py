"""Slippy demo policy: the demo model's architecture and tokenizer, trained from scratch on <think> targets only
(0% no-think), stopped early once sampled validation accuracy reaches --target (so it reasons nearly always and
slips in its arithmetic on a good share of answers: natural, on-policy slips of an under-trained model).

    python build_slippy.py --out slippy --target 0.45 [--seed 0]

Recipe: Qwen3Config as scripts/build_demo.py (4 layers, hidden 128, 1.03 M params), bundled tokenizer,
AdamW lr 2e-3 (50-step linear warm-up, then constant), weight decay 0.01, batch 64, loss on the assistant tokens,
20,000 problems (build_demo.make_problems(0)['train']), every --eval-every steps: 200 validation prompts sampled
at temperature 1; stop at the first eval with accuracy >= --target, reasoning >= 0.95 and format >= 0.93.
Then measures 500 held-out prompts (temperature 1, seed 1234) and writes OUT/report.json.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import time

import build_demo
import torch
from common import DEMO_MODEL, LAB, Timer, problem_sets, sample_responses, summarize, write_jsonl
from transformers import AutoTokenizer, Qwen3Config, Qwen3ForCausalLM


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="slippy")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--target", type=float, default=0.45)
    ap.add_argument("--eval-every", type=int, default=25)
    ap.add_argument("--max-steps", type=int, default=1500)
    ap.add_argument("--lr", type=float, default=2e-3)
    args = ap.parse_args()
    t = Timer()
    out = LAB / args.out
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    S = problem_sets(0)
    tok = AutoTokenizer.from_pretrained(str(DEMO_MODEL))
    data = build_demo.examples(tok, S["train"], 0.0, rng)
    cfg = Qwen3Config(
        vocab_size=len(tok), hidden_size=128, intermediate_size=512, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, max_position_embeddings=1024,
        tie_word_embeddings=True, rope_theta=10000.0, pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id, bos_token_id=None,
    )
    model = Qwen3ForCausalLM(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    evals, train_t = [], 0.0
    while build_demo.train_steps.done < args.max_steps:
        ts = time.time()
        loss = build_demo.train_steps(model, opt, tok, data, rng, args.eval_every,
                                      lambda s: args.lr * min(1.0, (s + 1) / 50))
        train_t += time.time() - ts
        model.eval()
        m = summarize(sample_responses(model, tok, S["validation"], seed=build_demo.train_steps.done))
        evals.append({"step": build_demo.train_steps.done, "train_s": round(train_t, 1), "wall_s": t(),
                      "loss": round(loss, 4), **m})
        print(json.dumps(evals[-1]), flush=True)
        if m["accuracy"] >= args.target and m["reasoning_rate"] >= 0.95 and m["format_rate"] >= 0.93:
            break
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    model.save_pretrained(out)
    tok.save_pretrained(out)
    build_s = t()
    rows = sample_responses(model, tok, S["heldout"], seed=1234)
    write_jsonl(out / "heldout_samples.jsonl", rows)
    rep = {"args": vars(args), "steps": build_demo.train_steps.done, "train_s": round(train_t, 1),
           "build_wall_s": build_s, "heldout": summarize(rows), "evals": evals, "load": os.getloadavg()}
    (out / "report.json").write_text(json.dumps(rep, indent=1))
    print("HELDOUT", json.dumps(rep["heldout"]), "build_wall_s", build_s, "total", t())


if __name__ == "__main__":
    main()
