"""Job runner vs a plain TRL script: same reward-model config, data and seed; median step time.

    .venv/bin/python bench/bench_reward.py [--rounds 3] [--steps 20]

A = RLOO Studio's path: JobRunner -> train_reward (pre-flight, StudioCallback writing metrics.jsonl
    and progress, the stop check at every step).
B = the TRL example way: load the model, RewardTrainer(peft_config=...), trainer.train().
Both get the same timing callback (time between successive on_step_end calls). Variants run interleaved
(A, B, A, B, ...) so that load from other processes hits both alike. Prints medians and A/B.
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from rloo_studio.core import bootstrap  # noqa: E402,F401  (unsloth before transformers / trl)

# isort: split
from transformers import TrainerCallback  # noqa: E402

WARMUP = 2  # first steps carry one-off costs (allocations, first tokenization of a batch)


class StepTimer(TrainerCallback):
    """Time from one step's end to the next: the whole cycle, including logging and our callbacks."""

    def __init__(self):
        self.times: list[float] = []
        self._t = None

    def on_step_end(self, args, state, control, **kw):
        now = time.perf_counter()
        if self._t is not None:
            self.times.append(now - self._t)
        self._t = now


def config(steps: int):
    from rloo_studio.reward.config import RewardJobConfig

    # No evaluation or checkpoint inside the timed window: both variants time pure training steps.
    return RewardJobConfig(max_steps=steps, eval_steps=10_000, save_steps=10_000, eval_fraction=0.2, seed=0)


def run_studio(ws, steps: int) -> list[float]:
    from rloo_studio.reward.job import train_reward
    from rloo_studio.runs.runner import JobRunner

    timer = StepTimer()
    r = JobRunner(ws)
    rid = r.submit("reward", config(steps), lambda c, ctx: train_reward(c, ctx, (timer,)))
    assert r.wait(rid) == "completed", r.status(rid)
    return timer.times


def run_plain(ws, steps: int, out: Path) -> list[float]:
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, set_seed
    from trl import RewardConfig, RewardTrainer

    from rloo_studio.label.store import preference_pairs

    cfg = config(steps)
    set_seed(cfg.seed)
    tok = AutoTokenizer.from_pretrained(cfg.model)
    model = AutoModelForSequenceClassification.from_pretrained(cfg.model, num_labels=1, dtype=torch.float32)
    model.config.pad_token_id = tok.pad_token_id
    rows = [{"prompt": tok.apply_chat_template([{"role": "user", "content": p["prompt"]}], tokenize=False,
                                               add_generation_prompt=True),
             "chosen": p["chosen"], "rejected": p["rejected"]} for p in preference_pairs(ws)]
    random.Random(cfg.seed).shuffle(rows)
    n_eval = int(len(rows) * cfg.eval_fraction)
    args = RewardConfig(
        output_dir=str(out), use_cpu=True, bf16=False, learning_rate=cfg.learning_rate, max_steps=steps,
        per_device_train_batch_size=cfg.per_device_train_batch_size, max_length=cfg.max_length,
        center_rewards_coefficient=cfg.center_rewards_coefficient, seed=cfg.seed, logging_steps=1,
        save_strategy="no", eval_strategy="no", report_to=[], disable_tqdm=True,
        optim=cfg.optim, gradient_checkpointing=cfg.gradient_checkpointing,  # TRL's defaults differ: same config
    )
    lora = LoraConfig(r=cfg.lora.r, lora_alpha=cfg.lora.alpha, lora_dropout=cfg.lora.dropout,
                      target_modules=list(cfg.lora.target_modules), task_type="SEQ_CLS")
    timer = StepTimer()
    trainer = RewardTrainer(model=model, args=args, processing_class=tok,
                            train_dataset=Dataset.from_list(rows[n_eval:]), peft_config=lora, callbacks=[timer])
    trainer.train()
    return timer.times


def callback_overhead(n: int = 2000) -> float:
    """Seconds our StudioCallback adds per step (one on_log record + on_step_end), measured alone."""
    from types import SimpleNamespace

    from rloo_studio.core.workspace import Workspace
    from rloo_studio.runs.callback import StudioCallback
    from rloo_studio.runs.runner import RunContext

    d = Path(tempfile.mkdtemp(prefix="bench-cb-"))
    ctx = RunContext(Workspace(d / "ws"), "r", d)
    cb = StudioCallback(ctx)
    state = SimpleNamespace(global_step=0, max_steps=n, epoch=0.0)
    control = SimpleNamespace(should_training_stop=False, should_save=False)
    logs = {"loss": 0.5, "grad_norm": 1.0, "learning_rate": 1e-3, "num_tokens": 1e4, "min_reward": -1.0,
            "mean_reward": 0.1, "max_reward": 1.0, "accuracy": 0.8, "margin": 1.2, "epoch": 0.1}
    t = time.perf_counter()
    for i in range(n):
        state.global_step = i + 1
        cb.on_step_end(None, state, control)
        cb.on_log(None, state, control, logs=logs)
    return (time.perf_counter() - t) / n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=20)
    a = ap.parse_args()
    from rloo_studio.label.demo_data import open_workspace

    tmp = Path(tempfile.mkdtemp(prefix="bench-reward-"))
    ws = open_workspace(tmp / "ws", demo=True)
    per = {"A runner": [], "B plain TRL": []}
    for i in range(a.rounds):
        for name in per:  # interleaved: A, B, A, B, ...
            t = run_studio(ws, a.steps) if name.startswith("A") else run_plain(ws, a.steps, tmp / f"plain-{i}")
            med = statistics.median(t[WARMUP:])
            per[name].append(med)
            print(f"round {i + 1} {name:12} median step {med * 1000:7.1f} ms  ({len(t)} steps)", flush=True)
    ma, mb = (statistics.median(v) for v in per.values())
    print(f"\nmedian of round medians: A runner {ma * 1000:.1f} ms, B plain TRL {mb * 1000:.1f} ms")
    print(f"ratio A/B = {ma / mb:.3f}  (target <= 1.03)")
    ratios = [x / y for x, y in zip(*per.values())]
    print("per-round ratios: " + ", ".join(f"{r:.3f}" for r in ratios) + f"  (median {statistics.median(ratios):.3f})")
    oh = callback_overhead()
    print(f"StudioCallback alone: {oh * 1e6:.0f} us per step = {oh / mb:.2%} of a plain-TRL step "
          f"(the runner's own cost, free of the noise other processes add to step times)")


if __name__ == "__main__":
    main()
