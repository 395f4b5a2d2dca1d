"""A throw-away job kind for tests/test_registry.py: its config and its job, registered only by the test; its tab is
the default job tab (ui/job_tab.py).

The job counts steps: each writes a metric record and a row per item to toy.jsonl (a per-step file of its own),
and every `save_steps` a checkpoint marker (runs.checkpoints.mark_checkpoint), so that a resume starts from the last
checkpoint through the same runs.runner.resume_point as the real jobs.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from rloo_studio.runs.checkpoints import mark_checkpoint
from rloo_studio.runs.runner import RunContext, resume_point

FILE = "toy.jsonl"


@dataclass
class ToyConfig:
    steps: int = field(default=4, metadata={"help": "Steps to count."})
    items: int = field(default=3, metadata={"help": "Rows written to toy.jsonl at each step."})
    save_steps: int = field(default=2, metadata={"help": "A checkpoint every this many steps."})


def train_toy(cfg: ToyConfig, ctx: RunContext) -> str:
    last = resume_point(ctx)
    start = int(last.rsplit("-", 1)[1]) if last else 0
    for step in range(start + 1, cfg.steps + 1):
        ctx.metric({"step": step, "loss": 1.0 / step})
        with open(ctx.dir / FILE, "a") as f:
            f.writelines(json.dumps({"step": step, "item": i}) + "\n" for i in range(cfg.items))
        if step % cfg.save_steps == 0:
            mark_checkpoint(ctx, step)
        if step == int(os.environ.get("TOY_CRASH_AFTER", 0)):  # as a killed run ends; a resume is told otherwise
            raise RuntimeError(f"killed after step {step}")
        ctx.set_progress(step, cfg.steps)
    return f"counted to {cfg.steps}"

