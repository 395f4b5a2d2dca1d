"""A demo workspace with one short RLOO run (2 steps, a high learning rate so that the adapter visibly
changes the policy), trained once per test session and shared by the export, playground and
RLOO-to-labeling tests."""
from __future__ import annotations

import json
import os
from pathlib import Path

from rloo_studio.core.model_options import LoraSpec

TRAIN = dict(max_steps=2, beta=0.0, per_device_train_batch_size=8, num_generations=4, lora=LoraSpec(r=4, alpha=8),
             max_completion_length=48, save_steps=100, learning_rate=5e-2)

# A prompt of demo-train (its answer, 1215, reaches the correctness reward) that both the base model and the trained
# run's adapter answer, greedy, with reasoning: the demo model skips it on about half of its prompts.
PLAY_PROMPT = "A box holds 862 apples. 353 apples are added. How many apples are in the box?"


def shared_root(tmp_path_factory) -> Path:
    """A folder every worker of this test run sees (`make test` runs two pytest-xdist workers, each with its own
    base temp folder under the run's): what is trained once for the session lives here."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def trained_run(root: Path) -> tuple[Path, str]:
    """(workspace folder, run id) of a completed 2-step RLOO run on the demo model under `root`, trained by the
    first worker that asks (the others wait on the lock and read it)."""
    from filelock import FileLock

    root.mkdir(parents=True, exist_ok=True)
    with FileLock(str(root / "train.lock")):
        return _trained_run(root)


def _trained_run(root: Path) -> tuple[Path, str]:
    from rloo_studio.label.demo_data import open_workspace
    from rloo_studio.rloo.config import RlooJobConfig
    from rloo_studio.rloo.job import train_rloo
    from rloo_studio.runs.runner import JobRunner

    ws_dir, done = root / "ws", root / "run.json"
    if done.exists():
        return ws_dir, json.loads(done.read_text())["run"]
    ws = open_workspace(ws_dir, demo=True)
    r = JobRunner(ws)
    rid = r.submit("rloo", RlooJobConfig(**TRAIN), train_rloo)
    assert r.wait(rid, 1800) == "completed", r.status(rid)
    done.write_text(json.dumps({"run": rid}))
    return ws_dir, rid


def reward_model_run(root: Path, rule: str, steps: int):
    """(workspace, run id) of a short RLOO run on a fresh demo workspace under `root`, rewarded by the rule reward
    `rule` (weight 1) and a seeded, untrained reward model (weight 0.5)."""
    from reward_run_fixture import seeded_reward_run

    from rloo_studio.label.demo_data import open_workspace
    from rloo_studio.rloo.config import RlooJobConfig
    from rloo_studio.rloo.job import train_rloo
    from rloo_studio.runs.runner import JobRunner

    ws = open_workspace(root / "ws", demo=True)
    cfg = RlooJobConfig(**{**TRAIN, "max_steps": steps, "rewards": [rule, "reward_model"],
                           "reward_weights": [1.0, 0.5], "reward_model_run": seeded_reward_run(ws)})
    r = JobRunner(ws)
    rid = r.submit("rloo", cfg, train_rloo)
    assert r.wait(rid, 1800) == "completed", r.status(rid)
    return ws, rid
