"""Build the bundled demo model and data from scratch (no download).

    .venv/bin/python scripts/build_demo.py [--max-seconds 600] [--target-accuracy 0.45]

1. Generates 3-digit addition word problems (rloo_studio/demo.py): train / held-out prompt sets.
2. Trains a byte-level BPE tokenizer (digits kept single) with the chat and think tokens.
3. Trains a 4-layer Qwen3-shaped causal LM from scratch on <think> step-by-step targets,
   15% without reasoning, and stops once sampled held-out accuracy reaches the target
   (the demo must leave room for RL: roughly 30-70%).
4. Samples its own responses to build demo preference pairs, labeled by the known answer (a
   synthetic annotator, demo_task.ANSWER_KEY: never a person), and unlabeled candidates.
Writes assets/demo-model/ and assets/demo-data/, and prints the measured figures.

    .venv/bin/python scripts/build_demo.py --pairs-only [--pair-prompts 1600 --samples 8]

rebuilds only assets/demo-data/pairs.jsonl from the bundled model (the model, the prompt sets and
the candidates stay as they are).
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import torch
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from rloo_studio.core import demo_task as demo  # noqa: E402
from rloo_studio.rloo.evaluate import score_samples  # noqa: E402
from rloo_studio.core.sampling import sample  # noqa: E402

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
THINK = ["<think>", "</think>"]
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def build_tokenizer(corpus: list[str], out: Path) -> PreTrainedTokenizerFast:
    tok = Tokenizer(models.BPE())
    # Single digits (as in Qwen) so that the model can do column arithmetic.
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=320, special_tokens=SPECIAL, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(corpus, trainer)
    # <think> tags are added tokens but not "special": decoding with skip_special_tokens keeps them.
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in THINK])
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", padding_side="right"
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out)
    return fast


def encode_example(tok, prompt: str, response: str) -> tuple[list[int], list[int]]:
    head = tok.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True)
    p = tok(head, add_special_tokens=False)["input_ids"]
    r = tok(response + tok.eos_token, add_special_tokens=False)["input_ids"]
    return p + r, [-100] * len(p) + r


def evaluate(model, tok, problems: list[dict], seed: int, max_new_tokens: int = 64) -> dict:
    outs = sample(model, tok, [p["prompt"] for p in problems], n=1, max_new_tokens=max_new_tokens, seed=seed)
    return score_samples(outs, problems)


def build_pairs(model, tok, pool: list[dict], n: int, seed: int) -> list[dict]:
    """Demo preference pairs labeled by the known answer (demo_task.answer_key_pairs): n samples per
    prompt at temperature 1; per prompt at most one slip pair and one format pair."""
    outs = sample(model, tok, [p["prompt"] for p in pool], n=n, max_new_tokens=64, seed=seed + 7, batch_size=256)
    rng, pairs = random.Random(seed), []
    for i, p in enumerate(pool):
        group = [(o.text, o.stopped) for o in outs[i * n : (i + 1) * n]]
        pairs += demo.answer_key_pairs(p["prompt"], p["answer"], group, rng)
    rng.shuffle(pairs)
    return pairs


def pair_counts(pairs: list[dict]) -> dict:
    return {"pairs": len(pairs), "slip_pairs": sum(p["kind"] == "slip" for p in pairs),
            "format_pairs": sum(p["kind"] == "format" for p in pairs)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=ROOT / "assets")
    ap.add_argument("--max-seconds", type=float, default=600)
    ap.add_argument("--target-accuracy", type=float, default=0.45)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--pairs-only", action="store_true",
                    help="rebuild only demo-data/pairs.jsonl by sampling the model already in --out")
    ap.add_argument("--pair-prompts", type=int, default=1600, help="prompts sampled for the demo pairs")
    ap.add_argument("--samples", type=int, default=8, help="responses sampled per prompt for the demo pairs")
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    t0 = time.time()

    seen, problems = set(), []
    while len(problems) < 21000:
        p = demo.make_problem(rng)
        if p["prompt"] not in seen:
            seen.add(p["prompt"])
            problems.append(p)
    heldout, rl_train, train = problems[:500], problems[500:1000], problems[1000:]
    data_dir, model_dir = args.out / "demo-data", args.out / "demo-model"
    # Pairs and candidates come from training problems (never the RLOO prompt sets), candidates apart.
    cand_pool = problems[1300:1400]
    pair_pool = (problems[1000:1300] + problems[1400:])[: args.pair_prompts]
    if args.pairs_only:
        model = Qwen3ForCausalLM.from_pretrained(model_dir).eval()
        tok = PreTrainedTokenizerFast.from_pretrained(model_dir)
        pairs = build_pairs(model, tok, pair_pool, args.samples, args.seed)
        write_jsonl(data_dir / "pairs.jsonl", pairs)
        print(json.dumps({"command": "python scripts/build_demo.py " + " ".join(sys.argv[1:]),
                          "seconds": round(time.time() - t0, 1), **pair_counts(pairs)}))
        return
    write_jsonl(data_dir / "prompts_heldout.jsonl", heldout)
    write_jsonl(data_dir / "prompts_train.jsonl", rl_train)

    targets = [(p, demo.target_response(p, think=rng.random() >= demo.NO_THINK_FRACTION)) for p in train]
    tok = build_tokenizer([p["prompt"] + r for p, r in targets[:5000]], model_dir)
    examples = [encode_example(tok, p["prompt"], r) for p, r in targets]
    cfg = Qwen3Config(
        vocab_size=len(tok), hidden_size=128, intermediate_size=512, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, max_position_embeddings=1024,
        tie_word_embeddings=True, rope_theta=10000.0, pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id, bos_token_id=None,
    )
    model = Qwen3ForCausalLM(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)
    print(f"params {sum(p.numel() for p in model.parameters()):,}  vocab {len(tok)}  examples {len(examples)}")

    step, train_t, evals = 0, 0.0, []
    probe = heldout[:200]
    while train_t < args.max_seconds:
        ts = time.time()
        model.train()
        for _ in range(50):
            batch = rng.sample(examples, 64)
            width = max(len(x) for x, _ in batch)
            ids = torch.tensor([x + [tok.pad_token_id] * (width - len(x)) for x, _ in batch])
            labels = torch.tensor([y + [-100] * (width - len(y)) for _, y in batch])
            mask = (torch.arange(width)[None] < torch.tensor([len(x) for x, _ in batch])[:, None]).long()
            lr = 2e-3 * min(1.0, (step + 1) / 50)
            for g in opt.param_groups:
                g["lr"] = lr
            loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            step += 1
        train_t += time.time() - ts
        model.eval()
        m = evaluate(model, tok, probe, seed=step)
        evals.append({"step": step, "train_seconds": round(train_t, 1), "loss": round(loss.item(), 4), **m})
        print(json.dumps(evals[-1]), flush=True)
        if m["accuracy"] >= args.target_accuracy and m["format_rate"] >= 0.93:
            break

    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    model.save_pretrained(model_dir)
    final = evaluate(model, tok, heldout, seed=1234)
    print("held-out (500 prompts, temperature 1):", json.dumps(final))

    # Demo preference data from the model's own samples.
    pairs = build_pairs(model, tok, pair_pool, args.samples, args.seed)
    outs = sample(model, tok, [p["prompt"] for p in cand_pool], n=4, max_new_tokens=64, seed=7)
    candidates = []
    for i, p in enumerate(cand_pool):
        texts = list(dict.fromkeys(o.text for o in outs[i * 4 : (i + 1) * 4]))
        if len(texts) >= 2:
            candidates.append({"prompt": p["prompt"], "responses": texts[:2], "answer": p["answer"]})
    write_jsonl(data_dir / "pairs.jsonl", pairs)
    write_jsonl(data_dir / "candidates.jsonl", candidates)
    report = {
        "command": "python scripts/build_demo.py " + " ".join(sys.argv[1:]),
        "train_seconds": round(train_t, 1), "total_seconds": round(time.time() - t0, 1), "steps": step,
        "heldout": final, "evals": evals, **pair_counts(pairs), "candidates": len(candidates),
        "torch_threads": torch.get_num_threads(),
    }
    (model_dir / "build_report.json").write_text(json.dumps(report, indent=1))
    print(json.dumps({k: v for k, v in report.items() if k != "evals"}))


if __name__ == "__main__":
    main()
