"""RLOO (TRL 1.15 RLOOTrainer) on the slippy policy, rewarded only by the PRM: min over steps of p(step right)
(0 for a completion without steps). The studio's demo-cpu recipe otherwise: LoRA r=16 alpha 32 (all linear layers),
lr 5e-4, k=8, 32 completions per step, max_completion_length 64, T=1; beta from --beta.

    python rloo_prm.py --policy slippy_s0 --prm prm_D --steps 40 --beta 0.05 --seed 0 --out runs/prm_s0
    python rloo_prm.py --policy slippy_s0 --reward orm --orm ws/... (control: a SEQ_CLS reward model adapter)

Held-out before/after: 500 held-out prompts, one sample each at T=1, seed 1234 (common.sample_responses).
"""
from __future__ import annotations

import argparse
import json
import os
import time

import torch
from common import LAB, Timer, problem_sets, sample_responses, summarize, write_jsonl

from rloo_studio.core import bootstrap  # noqa: F401,E402  (unsloth before transformers / trl / peft)


def prm_reward(prm_dir: str, reduce: str = "min", read: str = "", with_answer: bool = False):
    from prm import score_answers, score_rows
    from transformers import AutoTokenizer, Qwen3ForTokenClassification

    from rloo_studio.core.thinking import parse

    prm = Qwen3ForTokenClassification.from_pretrained(str(LAB / prm_dir)).eval()
    ptok = AutoTokenizer.from_pretrained(str(LAB / prm_dir))
    cfg = json.loads((LAB / prm_dir / "prm_config.json").read_text()) \
        if (LAB / prm_dir / "prm_config.json").exists() else {}
    read = read or cfg.get("read", "sep")

    def prm_min(prompts, completions, completion_ids=None, **kwargs):
        rows, idx = [], []
        out = [0.0] * len(completions)
        for i, (p, c) in enumerate(zip(prompts, completions)):
            text = c[-1]["content"] if isinstance(c, list) else c
            user = p[-1]["content"] if isinstance(p, list) else p
            steps = parse(text).steps
            if steps:
                rows.append({"prompt": user, "response": text, "spans": [(s.start, s.end) for s in steps]})
                idx.append(i)
        if rows:
            probs = score_rows(prm, ptok, rows, read)
            if with_answer:
                probs = [ps + [a] for ps, a in zip(probs, score_answers(prm, ptok, rows))]
            for i, ps in zip(idx, probs):
                out[i] = (min(ps) if reduce == "min" else float(torch.tensor(ps).prod())) if ps else 0.0
        return out

    prm_min.__name__ = "prm_min"
    return prm_min


def orm_reward(adapter_dir: str):
    """The studio's reward model (SEQ_CLS LoRA adapter), raw score, read the studio's way."""
    from rloo_studio.core.models import load_reward_adapter
    from rloo_studio.rloo import rewards

    rm, rm_tok = load_reward_adapter(adapter_dir)
    return rm, rm_tok, rewards


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--policy", default="slippy_s0")
    ap.add_argument("--prm", default="")
    ap.add_argument("--reduce", default="min", choices=["min", "prod"])
    ap.add_argument("--read", default="mintok", help="sep | last | mintok (prm.score_rows)")
    ap.add_argument("--with-answer", action="store_true", help="also min with the answer tokens' score")
    ap.add_argument("--orm-adapter", default="", help="control: a studio reward-model adapter folder")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--beta", type=float, default=0.05)
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eval-n", type=int, default=500)
    ap.add_argument("--out", default="runs/rloo")
    args = ap.parse_args()
    t = Timer()
    from datasets import Dataset
    from trl import RLOOConfig, RLOOTrainer

    from rloo_studio.core.model_options import LoraSpec
    from rloo_studio.core.models import add_lora, load_causal_lm
    from rloo_studio.core.thinking import template_kwargs

    out = LAB / args.out
    out.mkdir(parents=True, exist_ok=True)
    model, tok, backend = load_causal_lm(str(LAB / args.policy), "auto", False, max_seq_length=1024 + 64)
    model = add_lora(model, LoraSpec(r=16, alpha=32), backend, seed=args.seed)
    S = problem_sets(0)
    held = S["heldout"][:args.eval_n]

    def evaluate(tag):
        model.eval()
        rows = sample_responses(model, tok, held, seed=1234)
        write_jsonl(out / f"eval_{tag}.jsonl", rows)
        return summarize(rows)

    before = evaluate("before")
    print("BEFORE", json.dumps(before), flush=True)
    if args.orm_adapter:
        from rloo_studio.core.models import load_reward_adapter
        from rloo_studio.rloo import rewards
        rm, rm_tok = load_reward_adapter(args.orm_adapter)
        fn = rewards.make_reward_model_reward(rm, rm_tok, tok, 32, enable_thinking=True)
        # the studio's demo-cpu-reward-model shaping: batch-normalised, std floor 1.0, clipped to [-3, 3]
        funcs = [rewards.shaped(fn, True, [-3.0, 3.0], 1.0)]
    else:
        funcs = [prm_reward(args.prm, args.reduce, args.read, args.with_answer)]
    data = Dataset.from_list([{"prompt": [{"role": "user", "content": r["prompt"]}], "answer": r["answer"]}
                              for r in S["rl_train"]])
    cfg = RLOOConfig(output_dir=str(out / "checkpoints"), learning_rate=args.lr, beta=args.beta, num_generations=8,
                     max_completion_length=64, temperature=1.0, per_device_train_batch_size=32,
                     gradient_accumulation_steps=1, max_steps=args.steps, seed=args.seed, logging_steps=1,
                     save_strategy="no", disable_tqdm=True, remove_unused_columns=False, use_cpu=True, bf16=False,
                     report_to=[], chat_template_kwargs=template_kwargs(True))
    trainer = RLOOTrainer(model=model, reward_funcs=funcs, args=cfg, train_dataset=data, processing_class=tok)
    t0 = time.time()
    trainer.train()
    train_s = round(time.time() - t0, 1)
    hist = [h for h in trainer.state.log_history if "reward" in h]
    write_jsonl(out / "log_history.jsonl", trainer.state.log_history)
    after = evaluate("after")
    keys = ("reward", "kl", "reward_std", "frac_reward_zero_std", "completions/clipped_ratio")
    rep = {"args": vars(args), "backend": backend, "before": before, "after": after,
           "gain_points": round(100 * (after["accuracy"] - before["accuracy"]), 1), "train_s": train_s,
           "wall_s": t(), "first_logs": [{k: h.get(k) for k in keys} for h in hist[:3]],
           "last_logs": [{k: h.get(k) for k in keys} for h in hist[-3:]],
           "kl_mean_last5": sum(h.get("kl", 0) for h in hist[-5:]) / max(1, len(hist[-5:])), "load": os.getloadavg()}
    (out / "report.json").write_text(json.dumps(rep, indent=1))
    print("AFTER", json.dumps(after), flush=True)
    print("RESULT", json.dumps({k: rep[k] for k in ("args", "gain_points", "train_s", "wall_s", "kl_mean_last5")}),
          flush=True)


if __name__ == "__main__":
    main()
