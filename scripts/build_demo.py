"""Build the bundled demo model and data (no download).

    .venv/bin/python scripts/build_demo.py                     # both stages, from scratch (~10 min on 2 cores)
    .venv/bin/python scripts/build_demo.py --from-stage1 DIR   # stage 2 only, on a stage-1 model folder

The bundled model was built with --from-stage1 on the stage-1 model bundled before (commit 07c2a4a):
    git archive 07c2a4a assets/demo-model | tar -x -C /tmp/stage1
    .venv/bin/python scripts/build_demo.py --from-stage1 /tmp/stage1/assets/demo-model

1. Generates 3-digit addition word problems (core/demo_task.py): train / held-out prompt sets, and a
   validation set apart from both (the stops below read it, never the held-out prompts).
2. Stage 1, from scratch: trains a byte-level BPE tokenizer (digits kept single) with the chat and think
   tokens, then a 4-layer Qwen3-shaped causal LM on <think> step-by-step targets, 15% without reasoning,
   until sampled validation accuracy reaches --target-accuracy.
3. Stage 2, the loop's room: fine-tunes that model on targets of which half skip the reasoning, and stops
   once it reasons on about half of its answers (demo_task.REASONING_SHARE) and is right at least
   demo_task.ACCURACY_WHEN_REASONING of the time when it reasons — not on overall accuracy. A reward model
   trained on the demo pairs learns "reason first", so RLOO rewarded by it alone can teach that much.
4. Samples its own responses to build demo preference pairs, labeled by the known answer (a synthetic
   annotator, demo_task.ANSWER_KEY: never a person), and unlabeled candidates.
Writes rloo_studio/assets/demo-model/ (with build_report.json: what the build measured) and
rloo_studio/assets/demo-data/.

    .venv/bin/python scripts/build_demo.py --pairs-only

rebuilds only rloo_studio/assets/demo-data/pairs.jsonl and candidates.jsonl from the bundled model.
"""
from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import time
from pathlib import Path

import torch
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from rloo_studio.core import demo_task as demo  # noqa: E402
from rloo_studio.core.sampling import sample  # noqa: E402
from rloo_studio.rloo.evaluate import score_samples  # noqa: E402

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


def make_problems(seed: int) -> dict[str, list[dict]]:
    """The demo's problem sets, the same for a seed on every run: held-out (500), RLOO train (500), the
    supervised pool (20,000; the pairs and candidates come from it too) and a validation set (200)."""
    rng = random.Random(seed)
    seen, problems = set(), []
    while len(problems) < 21200:
        p = demo.make_problem(rng)
        if p["prompt"] not in seen:
            seen.add(p["prompt"])
            problems.append(p)
    return {"heldout": problems[:500], "rl_train": problems[500:1000], "train": problems[1000:21000],
            "validation": problems[21000:], "cand_pool": problems[1300:1400],
            "pair_pool": problems[1000:1300] + problems[1400:21000]}


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


def examples(tok, problems: list[dict], no_think: float, rng: random.Random) -> list[tuple[list[int], list[int]]]:
    """Supervised examples; a share `no_think` of the targets skip the reasoning (`<think>\\n\\n</think>`)."""
    return [encode_example(tok, p["prompt"], demo.target_response(p, think=rng.random() >= no_think))
            for p in problems]


def evaluate(model, tok, problems: list[dict], seed: int, max_new_tokens: int = 64) -> dict:
    model.eval()
    outs = sample(model, tok, [p["prompt"] for p in problems], n=1, max_new_tokens=max_new_tokens, seed=seed)
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in score_samples(outs, problems).items()}


def train_steps(model, opt, tok, data: list, rng: random.Random, steps: int, lr) -> float:
    """`steps` AdamW steps on batches of 64 examples, loss on the response tokens; lr(step) -> rate.
    Returns the last loss."""
    model.train()
    for _ in range(steps):
        batch = rng.sample(data, 64)
        width = max(len(x) for x, _ in batch)
        ids = torch.tensor([x + [tok.pad_token_id] * (width - len(x)) for x, _ in batch])
        labels = torch.tensor([y + [-100] * (width - len(y)) for _, y in batch])
        mask = (torch.arange(width)[None] < torch.tensor([len(x) for x, _ in batch])[:, None]).long()
        for g in opt.param_groups:
            g["lr"] = lr(train_steps.done)
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        train_steps.done += 1
    return loss.item()


train_steps.done = 0  # steps taken in this process, across stages (the warm-up and the logs count them)


def stage_scratch(args, sets: dict, model_dir: Path, rng: random.Random) -> tuple:
    """Stage 1: tokenizer and model from scratch, 15% of targets without reasoning, until validation
    accuracy reaches --target-accuracy with >= 93% format. Returns (model, tokenizer, report)."""
    targets = [p["prompt"] + demo.target_response(p) for p in sets["train"][:5000]]
    tok = build_tokenizer(targets, model_dir)
    data = examples(tok, sets["train"], demo.NO_THINK_FRACTION, rng)
    cfg = Qwen3Config(
        vocab_size=len(tok), hidden_size=128, intermediate_size=512, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, max_position_embeddings=1024,
        tie_word_embeddings=True, rope_theta=10000.0, pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id, bos_token_id=None,
    )
    model = Qwen3ForCausalLM(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)
    print(f"params {sum(p.numel() for p in model.parameters()):,}  vocab {len(tok)}  examples {len(data)}")
    evals, train_t = [], 0.0
    while train_t < args.max_seconds:
        ts = time.time()
        loss = train_steps(model, opt, tok, data, rng, 50, lambda s: 2e-3 * min(1.0, (s + 1) / 50))
        train_t += time.time() - ts
        m = evaluate(model, tok, sets["validation"], seed=train_steps.done)
        evals.append({"step": train_steps.done, "train_seconds": round(train_t, 1), "loss": round(loss, 4), **m})
        print(json.dumps(evals[-1]), flush=True)
        if m["accuracy"] >= args.target_accuracy and m["format_rate"] >= 0.93:
            break
    return model, tok, {"steps": train_steps.done, "train_seconds": round(train_t, 1), "evals": evals}


def room_to_teach(m: dict) -> bool:
    """Stage 2's stop: reasons on about half of the answers, right when it reasons, well formed."""
    low, high = demo.REASONING_SHARE
    return (low <= m["thinking_rate"] <= high and m["format_rate"] >= 0.95
            and (m["accuracy_reasoning"] or 0) >= demo.ACCURACY_WHEN_REASONING)


def stage_half_reasoning(args, model, tok, sets: dict, rng: random.Random) -> dict:
    """Stage 2: fine-tune on targets of which half skip the reasoning, measuring the validation set every
    --eval-every steps; stop at the first measurement that meets room_to_teach (or at --max-steps)."""
    data = examples(tok, sets["train"], demo.HALF_NO_THINK_FRACTION, rng)
    opt = torch.optim.AdamW(model.parameters(), lr=args.finetune_lr, weight_decay=0.01)
    start, evals, train_t = train_steps.done, [], 0.0
    m = evaluate(model, tok, sets["validation"], seed=start)
    evals.append({"step": 0, "train_seconds": 0.0, **m})
    print(json.dumps(evals[-1]), flush=True)
    while not room_to_teach(m) and train_steps.done - start < args.max_steps:
        ts = time.time()
        loss = train_steps(model, opt, tok, data, rng, args.eval_every, lambda s: args.finetune_lr)
        train_t += time.time() - ts
        m = evaluate(model, tok, sets["validation"], seed=train_steps.done)
        evals.append({"step": train_steps.done - start, "train_seconds": round(train_t, 1), "loss": round(loss, 4),
                      **m})
        print(json.dumps(evals[-1]), flush=True)
    return {"steps": train_steps.done - start, "train_seconds": round(train_t, 1), "lr": args.finetune_lr,
            "no_think_fraction": demo.HALF_NO_THINK_FRACTION, "met": room_to_teach(m), "evals": evals}


def build_pairs(model, tok, pool: list[dict], n: int, seed: int, limit: int) -> list[dict]:
    """Demo preference pairs labeled by the known answer (demo_task.answer_key_pairs): n samples per
    prompt at temperature 1, per prompt at most one slip pair and one format pair, prompts taken in order
    until `limit` pairs."""
    rng, pairs = random.Random(seed), []
    for i in range(0, len(pool), 100):
        chunk = pool[i : i + 100]
        outs = sample(model, tok, [p["prompt"] for p in chunk], n=n, max_new_tokens=64, seed=seed + 7 + i,
                      batch_size=256)
        for j, p in enumerate(chunk):
            group = [(o.text, o.stopped) for o in outs[j * n : (j + 1) * n]]
            pairs += demo.answer_key_pairs(p["prompt"], p["answer"], group, rng)
        if len(pairs) >= limit:
            break
    pairs = pairs[:limit]
    rng.shuffle(pairs)
    return pairs


def build_candidates(model, tok, pool: list[dict], limit: int) -> list[dict]:
    """Two different sampled responses per prompt, unlabeled, for the Label tab."""
    outs = sample(model, tok, [p["prompt"] for p in pool], n=4, max_new_tokens=64, seed=7)
    candidates = []
    for i, p in enumerate(pool):
        texts = list(dict.fromkeys(o.text for o in outs[i * 4 : (i + 1) * 4]))
        if len(texts) >= 2:
            candidates.append({"prompt": p["prompt"], "responses": texts[:2], "answer": p["answer"]})
    return candidates[:limit]


def pair_counts(pairs: list[dict]) -> dict:
    return {"pairs": len(pairs), "slip_pairs": sum(p["kind"] == "slip" for p in pairs),
            "format_pairs": sum(p["kind"] == "format" for p in pairs)}


def demo_data(args, model, tok, sets: dict, data_dir: Path) -> dict:
    pairs = build_pairs(model, tok, sets["pair_pool"], args.samples, args.seed, args.pairs)
    candidates = build_candidates(model, tok, sets["cand_pool"], args.candidates)
    write_jsonl(data_dir / "pairs.jsonl", pairs)
    write_jsonl(data_dir / "candidates.jsonl", candidates)
    return {**pair_counts(pairs), "candidates": len(candidates)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=ROOT / "rloo_studio" / "assets")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--from-stage1", type=Path, metavar="DIR",
                    help="skip stage 1: fine-tune this stage-1 model folder (its tokenizer is kept)")
    ap.add_argument("--pairs-only", action="store_true", help="rebuild only the demo pairs and candidates")
    ap.add_argument("--max-seconds", type=float, default=600, help="stage 1's training time limit")
    ap.add_argument("--target-accuracy", type=float, default=0.45, help="stage 1's stop")
    ap.add_argument("--finetune-lr", type=float, default=5e-4, help="stage 2's learning rate (constant)")
    ap.add_argument("--eval-every", type=int, default=10, help="stage 2: steps between validation measurements")
    ap.add_argument("--max-steps", type=int, default=400, help="stage 2 gives up after this many steps")
    ap.add_argument("--pairs", type=int, default=237, help="demo pairs to keep (the labeled set's size)")
    ap.add_argument("--candidates", type=int, default=80, help="unlabeled candidate pairs to keep")
    ap.add_argument("--samples", type=int, default=4, help="responses sampled per prompt for the demo pairs")
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    t0 = time.time()
    sets = make_problems(args.seed)
    data_dir, model_dir = args.out / "demo-data", args.out / "demo-model"
    command = "python scripts/build_demo.py " + " ".join(sys.argv[1:])
    if args.pairs_only or args.from_stage1:
        src = args.from_stage1 or model_dir
        model = Qwen3ForCausalLM.from_pretrained(src).eval()
        tok = PreTrainedTokenizerFast.from_pretrained(src)
    if args.pairs_only:
        print(json.dumps({"command": command, **demo_data(args, model, tok, sets, data_dir),
                          "seconds": round(time.time() - t0, 1)}))
        return
    write_jsonl(data_dir / "prompts_heldout.jsonl", sets["heldout"])
    write_jsonl(data_dir / "prompts_train.jsonl", sets["rl_train"])
    report_file = model_dir / "build_report.json"
    if args.from_stage1:  # stage 1 as it was recorded when that model was built; its tokenizer files as they are
        model_dir.mkdir(parents=True, exist_ok=True)
        for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
            if (args.from_stage1 / name).exists() and args.from_stage1.resolve() != model_dir.resolve():
                shutil.copyfile(args.from_stage1 / name, model_dir / name)
        earlier_file = args.from_stage1 / "build_report.json"
        earlier = json.loads(earlier_file.read_text()) if earlier_file.exists() else {}
        stage1 = earlier.get("stage1") or {k: earlier[k] for k in ("command", "steps", "train_seconds", "heldout",
                                                                   "evals") if k in earlier}
    else:
        model, tok, stage1 = stage_scratch(args, sets, model_dir, random.Random(args.seed))
        stage1["heldout"] = evaluate(model, tok, sets["heldout"], seed=1234)
    stage2 = stage_half_reasoning(args, model, tok, sets, random.Random(args.seed + 1))
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    model.save_pretrained(model_dir)
    final = evaluate(model, tok, sets["heldout"], seed=1234)
    print("held-out (500 prompts, temperature 1, seed 1234):", json.dumps(final), flush=True)
    report = {"command": command, "heldout": final, **demo_data(args, model, tok, sets, data_dir),
              "stage1": stage1, "stage2": stage2, "total_seconds": round(time.time() - t0, 1),
              "torch_threads": torch.get_num_threads(), "load_average": list(os_load())}
    report_file.write_text(json.dumps(report, indent=1))
    print(json.dumps({k: v for k, v in report.items() if k not in ("stage1", "stage2")}))


def os_load() -> tuple:
    """The machine's load when the build ended (2 cores shared with other work: times are upper bounds)."""
    import os

    return tuple(round(x, 1) for x in os.getloadavg())


if __name__ == "__main__":
    main()
