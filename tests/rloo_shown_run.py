"""A finished RLOO run folder as the job leaves one, written in a moment without training: the
demo-cpu-process-reward preset's config (its process reward run named), every step's metrics, the last steps'
completions with process rewards between 0.2 and 0.99 (the precision the completions table must keep), and the
held-out before / after. For browser tests of what the RLOO tab shows of a run: the form's note beside it, the
completions' precision, the charts in view at the end."""
from __future__ import annotations

import dataclasses
import json
import random
import time

from rloo_studio.core.config import to_yaml_commented
from rloo_studio.runs.jobs import KINDS
from rloo_studio.runs.runner import write_status

PRESET = "demo-cpu-process-reward"
STEPS = 12
BEFORE = {"n": 200, "accuracy": 0.385, "format_rate": 0.99, "thinking_rate": 1.0, "n_reasoning": 200,
          "accuracy_reasoning": 0.385, "accuracy_not_reasoning": None, "slip_rate": 0.515,
          "wrong_steps_per_answer": 1.1}
AFTER = {**BEFORE, "accuracy": 0.6, "accuracy_reasoning": 0.6, "slip_rate": 0.3, "wrong_steps_per_answer": 0.55}


def process_reward_values(seed: int = 0, n: int = 16) -> list[float]:
    """Process rewards as a PRM's min over steps gives them: fractions, two close together (0.812 and 0.815) in the
    first group, which the completions table shows first."""
    rnd = random.Random(seed)
    return [0.81234, 0.81567] + [round(rnd.uniform(0.2, 0.99), 6) for _ in range(n - 2)]


def finished_run(ws, rid: str = "rloo-shown-process-reward", created: float | None = None) -> str:
    """Write run `rid` (kind rloo, completed) into workspace `ws`; `created` (default: a day ago) places it among
    the workspace's runs (ws.runs lists the newest first: an old one leaves the tabs' default run as it was)."""
    cfg = KINDS["rloo"].preset_config(PRESET, ws)
    cfg.process_reward_run = "prm-shown"  # the pre-flight names the newest process reward run at launch
    cfg.max_steps, cfg.save_steps = STEPS, STEPS
    d = ws.run_dir(rid)
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.yaml").write_text(to_yaml_commented(cfg))
    t0 = (created or time.time() - 86400)
    with open(d / "metrics.jsonl", "w") as f:
        for s in range(1, STEPS + 1):
            f.write(json.dumps({"time": t0 + 10 * s, "step": s, "loss": 0.001 * (-1) ** s, "reward": 0.4 + s / 60,
                                "rewards/process_reward/mean": 0.4 + s / 60, "reward_std": 0.2, "kl": 0.002 * s,
                                "frac_reward_zero_std": 0.0, "entropy": 0.5, "step_time": 9.5,
                                "completions/mean_length": 40, "completions/clipped_ratio": 0.0}) + "\n")
    values = process_reward_values()
    with open(d / "samples.jsonl", "w") as f:
        for s in (STEPS - 1, STEPS):
            for i, v in enumerate(values):
                group = values[(i // 8) * 8:(i // 8) * 8 + 8]
                others = (sum(group) - v) / (len(group) - 1)
                f.write(json.dumps({"step": s, "prompt": f"Add {120 + i // 8} and 254.",
                                    "completion": "<think>\n0+4+0=4\n</think>\n\nThe answer is 374.",
                                    "response": "<think>\n0+4+0=4\n</think>\n\nThe answer is 374.",
                                    "rewards": {"process_reward": v}, "total": v, "advantage": v - others,
                                    "length": 21, "truncated": False}) + "\n")
    (d / "eval.json").write_text(json.dumps({"before": BEFORE, "after": AFTER,
                                             "reward": {"key": "reward", "first": 0.42, "last": 0.6, "steps": 12}}))
    msg = f"finished at step {STEPS}"
    write_status(d, {"id": rid, "kind": "rloo", "status": "completed", "started": t0, "ended": t0 + 10 * STEPS,
                     "message": msg})
    ws.upsert_run(rid, kind="rloo", name=rid, status="completed", created=t0, started=t0, ended=t0 + 10 * STEPS,
                  message=msg, config=dataclasses.asdict(cfg))
    return rid
