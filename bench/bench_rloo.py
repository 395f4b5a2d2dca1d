"""RLOO benchmarks; prints medians and ratios (figures go to docs/BENCHMARKS.md).

1. Reward-model reward: the token-id path (completion ids as they are) vs decode + re-tokenize,
   on real demo-model completions, calls interleaved A,B,A,B.
2. RLOO step time: the studio job (JobRunner + callbacks + samples.jsonl) vs a plain TRL script
   with the same config and seed; runs interleaved A,B,A,B; TRL's own step_time metric, first
   step of each run dropped (warm-up). Target ratio <= 1.03.

    .venv/bin/python bench/bench_rloo.py [--calls 30] [--runs 2] [--steps 8]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from rloo_studio.core import bootstrap  # noqa: F401,E402  (unsloth first)


def bench_reward_model(calls: int) -> None:
    import torch

    from rloo_studio.core.models import load_causal_lm, load_seq_cls
    from rloo_studio.core.paths import DEMO_MODEL
    from rloo_studio.core.sampling import sample
    from rloo_studio.rloo.rewards import make_reward_model_reward

    policy, tok, _ = load_causal_lm(str(DEMO_MODEL), "transformers")
    outs = sample(policy, tok, ["What is 123 + 456?", "Add 820 and 634.", "Compute 529 + 417.", "Add 111 and 999."],
                  n=8, max_new_tokens=64, seed=0)
    torch.manual_seed(0)
    rm, rm_tok = load_seq_cls(str(DEMO_MODEL))
    rm.eval()
    prompts = [[{"role": "user", "content": s.prompt}] for s in outs]
    comps = [[{"role": "assistant", "content": s.text}] for s in outs]
    ids = [s.ids for s in outs]
    fns = {"ids": make_reward_model_reward(rm, rm_tok, tok, 16, use_ids=True),
           "text": make_reward_model_reward(rm, rm_tok, tok, 16, use_ids=False)}
    times = {k: [] for k in fns}
    for _ in range(calls):
        for k, f in fns.items():  # interleaved
            t = time.perf_counter()
            f(prompts=prompts, completions=comps, completion_ids=ids)
            times[k].append(time.perf_counter() - t)
    build = {k: [] for k in fns}
    for _ in range(calls * 5):
        for k, f in fns.items():  # interleaved; the input ids only (where the two paths differ)
            t = time.perf_counter()
            f.inputs(prompts, comps, ids)
            build[k].append(time.perf_counter() - t)
    med = {k: statistics.median(v) for k, v in times.items()}
    bmed = {k: statistics.median(v) for k, v in build.items()}
    print(f"building the input ids only, {len(ids)} completions, {calls * 5} calls each:")
    print(f"  token-id path           median {bmed['ids'] * 1000:.3f} ms")
    print(f"  decode + re-tokenize    median {bmed['text'] * 1000:.3f} ms")
    print(f"  ratio ids / text        {bmed['ids'] / bmed['text']:.3f}")
    print(f"reward-model reward (inputs + forward), {len(ids)} completions per call, {calls} calls each:")
    print(f"  token-id path           median {med['ids'] * 1000:.2f} ms")
    print(f"  decode + re-tokenize    median {med['text'] * 1000:.2f} ms")
    print(f"  ratio ids / text        {med['ids'] / med['text']:.3f}")


def _cfg(steps: int):
    from rloo_studio.core.model_options import LoraSpec
    from rloo_studio.rloo.config import RlooJobConfig

    return RlooJobConfig(rewards=["correctness"], reward_weights=[1.0], num_generations=4,
                         per_device_train_batch_size=16, max_steps=steps, beta=0.02, save_steps=10_000,
                         lora=LoraSpec(r=16, alpha=32), eval_prompts=0)


def run_studio(steps: int) -> list[float]:
    from rloo_studio.label.demo_data import open_workspace
    from rloo_studio.rloo.job import train_rloo
    from rloo_studio.runs.runner import JobRunner, read_metrics

    with tempfile.TemporaryDirectory() as d:
        ws = open_workspace(Path(d) / "ws", demo=True)
        r = JobRunner(ws)
        rid = r.submit("rloo", _cfg(steps), train_rloo)
        assert r.wait(rid) == "completed", r.status(rid)
        return [m["step_time"] for m in read_metrics(ws.run_dir(rid)) if "step_time" in m][1:]


def run_plain(steps: int) -> list[float]:
    """The same training as a user would write it with TRL directly (no studio callbacks)."""
    import torch
    from datasets import Dataset
    from trl import RLOOConfig, RLOOTrainer

    from rloo_studio.core.models import add_lora, load_causal_lm
    from rloo_studio.core.paths import DEMO_DATA
    from rloo_studio.core.rule_rewards import make_correctness_reward


    cfg = _cfg(steps)
    rows = [json.loads(x) for x in (DEMO_DATA / "prompts_train.jsonl").read_text().splitlines() if x.strip()]
    model, tok, backend = load_causal_lm(cfg.model, cfg.backend, max_seq_length=1024 + cfg.max_completion_length)
    model = add_lora(model, cfg.lora, backend, seed=cfg.seed)
    data = Dataset.from_list([{**r, "prompt": [{"role": "user", "content": r["prompt"]}]} for r in rows])
    times = []

    from transformers import TrainerCallback

    class Keep(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kw):
            if logs and "step_time" in logs:
                times.append(logs["step_time"])

    with tempfile.TemporaryDirectory() as d:
        args = RLOOConfig(output_dir=d, use_cpu=not torch.cuda.is_available(), bf16=False,
                          learning_rate=cfg.learning_rate, beta=cfg.beta, num_generations=cfg.num_generations,
                          max_completion_length=cfg.max_completion_length, temperature=cfg.temperature,
                          per_device_train_batch_size=cfg.per_device_train_batch_size, max_steps=steps, seed=cfg.seed,
                          reward_weights=cfg.reward_weights, logging_steps=1, save_strategy="no", report_to=[],
                          disable_tqdm=True, remove_unused_columns=False)
        RLOOTrainer(model=model, reward_funcs=[make_correctness_reward(tok)], args=args, train_dataset=data,
                    processing_class=tok, callbacks=[Keep()]).train()
    return times[1:]


def bench_steps(runs: int, steps: int) -> None:
    got = {"studio": [], "plain": []}
    for _ in range(runs):  # interleaved A,B,A,B
        got["studio"] += run_studio(steps)
        got["plain"] += run_plain(steps)
    med = {k: statistics.median(v) for k, v in got.items()}
    print(f"RLOO step time, 16 completions x <=64 tokens, k=4, {runs} runs x {steps - 1} timed steps each:")
    print(f"  studio job (runner + callbacks + samples)  median {med['studio']:.3f} s")
    print(f"  plain TRL script                           median {med['plain']:.3f} s")
    print(f"  ratio studio / plain                       {med['studio'] / med['plain']:.3f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=30)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--only", choices=["reward", "steps"])
    a = ap.parse_args()
    if a.only != "steps":
        bench_reward_model(a.calls)
    if a.only != "reward":
        bench_steps(a.runs, a.steps)
