"""The whole loop on the demo, measured: a reward model trained in the studio on the demo pairs, then RLOO
rewarded by it alone (the demo-cpu-reward-model preset), for several reward-model and RLOO seeds; and the
correctness preset beside it. Every run goes through the CLI, so each row's command is the command a user types.

    .venv/bin/python bench/rm_loop.py [--rm-seeds 0 1 2] [--rloo-seeds 0 1] [--set KEY=VALUE ...]
                                      [--correctness] [--out bench/rm_loop.json]

--set goes to every train-rloo command (e.g. --set reward_model_std_floor=0 --set beta=0.02 for the ablations
in docs/RLOO.md). Prints one row per run (held-out accuracy before -> after, the share that reasons, accuracy
among reasoning answers, max KL per token, median step time, the machine's load) and writes them as JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = [sys.executable, "-m", "rloo_studio"]


def cli(args: list[str]) -> tuple[str, float]:
    """Run one CLI command; returns (its run id, wall seconds). Raises with the output when it fails."""
    t = time.time()
    out = subprocess.run(PY + args, cwd=ROOT, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"{' '.join(args)} failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    line = next(x for x in out.stdout.splitlines() if x.startswith("run "))
    return line.split()[1], time.time() - t


def show(ws: Path, rid: str) -> dict:
    out = subprocess.run(PY + ["runs", "show", rid, "--workspace", str(ws)], cwd=ROOT, capture_output=True, text=True)
    return json.loads(out.stdout)


def rloo_row(ws: Path, sets: list[str], seed: int, preset: str) -> dict:
    args = ["train-rloo", "--workspace", str(ws), "--demo", "--preset", preset, "--set", f"seed={seed}"]
    for s in sets:
        args += ["--set", s]
    load0 = os.getloadavg()[0]
    rid, wall = cli(args)
    shown = show(ws, rid)
    steps = [m for m in (json.loads(x) for x in (ws / "runs" / rid / "metrics.jsonl").read_text().splitlines())
             if "kl" in m]
    ev = shown["before_after"]
    b, a = ev["before"], ev["after"]
    return {"command": "python -m rloo_studio " + " ".join(args), "run": rid, "rloo_seed": seed,
            "before": b["accuracy"], "after": a["accuracy"],
            "gain_points": round((a["accuracy"] - b["accuracy"]) * 100, 1),
            "reasons": [b["thinking_rate"], a["thinking_rate"]],
            "accuracy_reasoning": [b["accuracy_reasoning"], a["accuracy_reasoning"]],
            "max_kl": max(m["kl"] for m in steps), "median_step_s": statistics.median(m["step_time"] for m in steps),
            "steps": len(steps), "wall_s": round(wall), "load": [round(load0, 1), round(os.getloadavg()[0], 1)],
            "learned": ev["learned"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rm-seeds", type=int, nargs="*", default=[0, 1, 2])
    ap.add_argument("--rloo-seeds", type=int, nargs="*", default=[0, 1])
    ap.add_argument("--set", action="append", default=[], help="KEY=VALUE for every train-rloo command")
    ap.add_argument("--correctness", action="store_true", help="also run the correctness preset (demo-cpu)")
    ap.add_argument("--root", type=Path, default=None, help="where the workspaces go (default: a temporary folder)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "rm_loop.json")
    args = ap.parse_args()
    root = args.root or Path(tempfile.mkdtemp(prefix="rm-loop-"))
    rows = []
    for rm_seed in args.rm_seeds:
        ws = root / f"rm{rm_seed}"
        rm, wall = cli(["train-reward", "--workspace", str(ws), "--demo", "--set", f"seed={rm_seed}"])
        by_kind = show(ws, rm).get("held_out_accuracy_by", {}).get("by_kind", {})
        held = {k: f"{v['correct']}/{v['pairs']}" for k, v in by_kind.items()}
        acc = sum(v["correct"] for v in by_kind.values()) / max(1, sum(v["pairs"] for v in by_kind.values()))
        print(f"reward model seed {rm_seed}: {rm}, held-out {acc:.1%} {held} ({wall:.0f} s)", flush=True)
        for seed in args.rloo_seeds:
            row = {"rm_seed": rm_seed, "reward_run": rm, "rm_heldout": round(acc, 4), "rm_by_kind": held,
                   **rloo_row(ws, args.set, seed, "demo-cpu-reward-model")}
            rows.append(row)
            print(json.dumps(row), flush=True)
            args.out.write_text(json.dumps(rows, indent=1))
    if args.correctness:
        row = {"rm_seed": None, **rloo_row(root / "correctness", args.set, 0, "demo-cpu")}
        rows.append(row)
        print(json.dumps(row), flush=True)
        args.out.write_text(json.dumps(rows, indent=1))
    print(f"{'rm':>3} {'rloo':>4} {'before':>7} {'after':>7} {'gain':>6} {'reasons':>13} {'acc|reasons':>13} "
          f"{'KL max':>7} {'step s':>6} load")
    for r in rows:
        print(f"{str(r['rm_seed']):>3} {r['rloo_seed']:>4} {r['before']:>7.1%} {r['after']:>7.1%} "
              f"{r['gain_points']:>+6.1f} {r['reasons'][0]:>6.0%}→{r['reasons'][1]:<6.0%} "
              f"{r['accuracy_reasoning'][0]:>6.0%}→{r['accuracy_reasoning'][1]:<6.0%} {r['max_kl']:>7.3f} "
              f"{r['median_step_s']:>6.2f} {r['load']}")


if __name__ == "__main__":
    main()
