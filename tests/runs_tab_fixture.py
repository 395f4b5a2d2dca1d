"""A workspace of finished runs as their jobs leave them, written through the studio's own functions
(runs.runner.prepare_run, RunContext.metric, write_status, rloo.evaluate.split_figures) without training: the
Runs tab reads folders, and training them would cost minutes for nothing it reads.

- a reward-model run: held-out pair accuracy 50% (untrained, step 0) -> 87.5%;
- a process-reward run of 2,000 steps (loss 0.6 -> 0.01), evaluated every 200 steps, with the Trainer's
  end-of-training record (total_flos, train_runtime, ...): the keys no picker should offer;
- an RLOO run of 160 steps rewarded by that process-reward run (loss ~1e-8), eval.json 50.5% -> 90.0%;
- an RLOO run rewarded by the reward-model run, with no eval.json (its headline falls back to its reward).
"""
from __future__ import annotations

import dataclasses
import json
import math

from rloo_studio.runs.jobs import KINDS
from rloo_studio.runs.runner import prepare_run, write_status

TRAINER_END = {"train_runtime": 812.4, "train_samples_per_second": 12.3, "train_steps_per_second": 2.46,
               "total_flos": 3.4e12, "train_loss": 0.05}


def _finish(ws, ctx, message: str) -> str:
    write_status(ctx.dir, {"id": ctx.run_id, "kind": ctx.kind, "status": "completed", "message": message})
    ws.upsert_run(ctx.run_id, status="completed", message=message)
    return ctx.run_id


def reward_run(ws) -> str:
    from rloo_studio.reward.config import RewardJobConfig

    ctx = prepare_run(ws, "reward", RewardJobConfig())
    for s in range(0, 41):
        if s:
            ctx.metric({"step": s, "epoch": s / 40, "loss": 0.7 / (1 + s / 4), "accuracy": min(1.0, 0.5 + s / 60),
                        "margin": s / 10, "mean_reward": 0.1, "learning_rate": 2e-4, "grad_norm": 1.5})
        if s % 10 == 0:
            acc = 0.5 + 0.375 * s / 40
            ctx.metric({"step": s, "eval_loss": 0.7 / (1 + s / 8), "eval_accuracy": acc, "eval_margin": s / 12,
                        "eval_mean_reward": 0.0, "eval_runtime": 1.2, "eval_samples_per_second": 40.0,
                        "eval_steps_per_second": 5.0})
    ctx.metric({"step": 40, **TRAINER_END})
    return _finish(ws, ctx, "finished at step 40; held-out accuracy 87.5%; adapter saved")


def prm_run(ws, steps: int = 2000) -> str:
    from rloo_studio.prm.config import PrmJobConfig

    ctx = prepare_run(ws, "prm", PrmJobConfig())
    for s in range(0, steps + 1, 20):
        if s:
            ctx.metric({"step": s, "epoch": s / steps, "loss": 0.01 + 0.59 * math.exp(-s / 300),
                        "learning_rate": 1e-3 * (1 - s / steps), "grad_norm": 0.8})
        if s % 200 == 0:
            f = s / steps
            ctx.metric({"step": s, "eval_loss": 0.5 - 0.3 * f, "eval_step_loss": 0.6 - 0.35 * f,
                        "eval_step_accuracy": 0.70 + 0.14 * f, "eval_right_called_right": 0.8 + 0.1 * f,
                        "eval_wrong_called_wrong": 0.4 + 0.3 * f, "eval_first_wrong_found": 0.1 + 0.52 * f,
                        "eval_correct_called_correct": 0.5 + 0.3 * f, "eval_processbench_f1": 0.2 + 0.5 * f,
                        "eval_runtime": 3.1, "eval_samples_per_second": 64.0, "eval_steps_per_second": 8.0})
    ctx.metric({"step": steps, **TRAINER_END})
    return _finish(ws, ctx, f"finished at step {steps}; held-out step accuracy 84.0%; model saved")


def _rloo_records(ctx, steps: int, rewards: list[str]) -> None:
    for s in range(1, steps + 1):
        f = s / steps
        per = {f"rewards/{r}/mean": 0.3 + 0.5 * f for r in rewards} | {f"rewards/{r}/std": 0.3 for r in rewards}
        ctx.metric({"step": s, "epoch": f, "loss": 1e-8 * (1 + (s % 3)), "grad_norm": 0.2, "learning_rate": 5e-4,
                    "num_tokens": 554.0 * s, "completions/mean_length": 40 - 8 * f, "completions/min_length": 20.0,
                    "completions/max_length": 64.0, "completions/clipped_ratio": 0.1 * (1 - f),
                    "completions/mean_terminated_length": 38.0, **per, "reward": 0.3 + 0.5 * f,
                    "reward_std": 0.4, "frac_reward_zero_std": 0.1, "kl": 0.02 * f, "entropy": 0.9,
                    "clip_ratio/low_mean": 0.0, "clip_ratio/high_mean": 0.0, "clip_ratio/region_mean": 0.0,
                    "step_time": 1.1})
    ctx.metric({"step": steps, **TRAINER_END})


def _figures(n: int, right: int) -> dict:
    """eval.json's figures of `n` reasoning answers of which `right` are right, as the job scores them."""
    from rloo_studio.rloo.evaluate import split_figures

    return split_figures([{"formatted": True, "correct": i < right, "thinking": True} for i in range(n)])


def rloo_run(ws, preset: str, scorer_key: str, scorer: str, steps: int, eval_before_after: tuple | None) -> str:
    from rloo_studio.rloo.evaluate import EVAL_FILE

    cfg = dataclasses.replace(KINDS["rloo"].preset_config(preset), **{scorer_key: scorer, "max_steps": steps})
    ctx = prepare_run(ws, "rloo", cfg)
    _rloo_records(ctx, steps, list(cfg.rewards))
    if eval_before_after:
        before, after = eval_before_after
        (ctx.dir / EVAL_FILE).write_text(json.dumps({"before": _figures(200, before), "after": _figures(200, after)}))
    return _finish(ws, ctx, f"finished at step {steps}/{steps}; adapter saved")


def runs_workspace(ws) -> dict[str, str]:
    """The four runs above in `ws`, by role: reward, prm, rloo_prm (eval.json 101 -> 180 of 200 right) and
    rloo_rm (no eval.json)."""
    reward = reward_run(ws)
    prm = prm_run(ws)
    rloo_prm = rloo_run(ws, "demo-cpu-process-reward", "process_reward_run", prm, 160, (101, 180))
    rloo_rm = rloo_run(ws, "demo-cpu-reward-model", "reward_model_run", reward, 40, None)
    return {"reward": reward, "prm": prm, "rloo_prm": rloo_prm, "rloo_rm": rloo_rm}
