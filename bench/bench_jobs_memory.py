"""Memory of one long-lived studio process over many jobs: resident memory (and, on a GPU, torch's allocated and
reserved CUDA memory) before the first job and after each job, reward and RLOO jobs alternating through the job
runner as the tabs start them, on the demo.

    python bench/bench_jobs_memory.py [--rounds 4] [--workspace DIR]

Prints one line per job and, at the end, each kind's resident memory after its last job as a ratio of after its
first (the goal: within 1.05), and on CUDA the allocated memory after each job minus before the first (the goal: 0).
The job runner gives memory back when a job ends (core/kept.py release_memory); nothing here collects garbage.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def rss_mb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2 ** 20


def cuda_mb() -> tuple[float, float] | None:
    import torch

    if not torch.cuda.is_available():
        return None
    torch.cuda.synchronize()
    return torch.cuda.memory_allocated() / 2 ** 20, torch.cuda.memory_reserved() / 2 ** 20


def jobs():
    from rloo_studio.core.model_options import LoraSpec
    from rloo_studio.reward.config import RewardJobConfig
    from rloo_studio.reward.job import train_reward
    from rloo_studio.rloo.config import RlooJobConfig
    from rloo_studio.rloo.job import train_rloo

    return [("reward", RewardJobConfig(max_steps=4, eval_fraction=0.1, eval_steps=100, save_steps=100), train_reward),
            ("rloo", RlooJobConfig(max_steps=2, per_device_train_batch_size=8, num_generations=4,
                                   max_completion_length=48, lora=LoraSpec(r=8, alpha=16), save_steps=100,
                                   eval_prompts=0), train_rloo)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=4, help="each kind runs this many times, alternating")
    ap.add_argument("--workspace", default=None)
    a = ap.parse_args()
    from rloo_studio.core import bootstrap  # noqa: F401  (unsloth first)
    from rloo_studio.label.demo_data import open_workspace
    from rloo_studio.runs.runner import JobRunner

    ws = open_workspace(a.workspace or Path(tempfile.mkdtemp()) / "ws", demo=True)
    runner = JobRunner(ws)
    start = {"rss_mb": rss_mb(), "cuda_mb": cuda_mb()}
    print(json.dumps({"before": start}), flush=True)
    after: dict[str, list[float]] = {}
    rows = []
    for i in range(a.rounds):
        for kind, cfg, fn in jobs():
            t0 = time.time()
            rid = runner.submit(kind, cfg, fn)
            status = runner.wait(rid, 3600)
            row = {"round": i, "kind": kind, "status": status, "seconds": round(time.time() - t0, 1),
                   "rss_mb": round(rss_mb(), 1), "cuda_mb": cuda_mb()}
            after.setdefault(kind, []).append(row["rss_mb"])
            rows.append(row)
            print(json.dumps(row), flush=True)
    for kind, values in after.items():
        print(f"{kind}: resident memory after its last job / after its first = {values[-1] / values[0]:.3f} "
              f"({values[0]:.0f} -> {values[-1]:.0f} MB over {len(values)} jobs)")
    if start["cuda_mb"] is not None:
        worst = max(r["cuda_mb"][0] - start["cuda_mb"][0] for r in rows)
        print(f"CUDA allocated after a job minus before the first: at most {worst:+.1f} MB")


if __name__ == "__main__":
    main()
