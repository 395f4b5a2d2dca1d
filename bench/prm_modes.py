"""The process reward model beside the answer key, on the demo's slipping policy: which way of using it teaches most.

    .venv/bin/python bench/prm_modes.py [--seeds 0,1,2] [--steps 160] [--out /tmp/prm_modes.jsonl] [--workspace W]

One process reward model (`train-prm --demo`, the demo preset; reused when the workspace has one), then the
`demo-cpu-process-reward` preset's RLOO run (the slipping policy, 160 steps, before/after on 200 held-out prompts)
with five reward settings, each on every seed, seed by seed:

    answer key alone      rewards=[correctness]
    PRM alone             rewards=[process_reward]                       (the preset)
    key + PRM added       rewards=[correctness, process_reward], weights 1, 1
    key + PRM filter      the same, weights 1, 0, process_reward_filter  (PROF: the PRM only filters)
    key + PRM right-only  the same, weights 1, 1, process_reward_correct_only  (PAPO)

Each run's checkpoints (every steps/4) are graded on the same 200 held-out prompts as its before/after (eval-demo,
seed 1234), so that the step at which each first reaches the answer key's final accuracy can be read. One JSON
line per run in --out (accuracy before / after, answers with a wrong step, the accuracy at each checkpoint), then a
table of the means over seeds.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "rloo_studio"]
MODES = {
    "answer key alone": ["rewards=[correctness]", "reward_weights=[1.0]"],
    "PRM alone": [],
    "key + PRM added": ["rewards=[correctness, process_reward]", "reward_weights=[1.0, 1.0]"],
    "key + PRM filter": ["rewards=[correctness, process_reward]", "reward_weights=[1.0, 0.0]",
                         "process_reward_filter=true"],
    "key + PRM right-only": ["rewards=[correctness, process_reward]", "reward_weights=[1.0, 1.0]",
                             "process_reward_correct_only=true"],
}


def run(cmd: list[str]) -> str:
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"{' '.join(cmd)} failed:\n{out.stderr[-3000:]}")
    return out.stdout


def ensure_prm(ws: Path) -> None:
    """The demo's process reward model, trained once (about 6.5 minutes on 2 quiet cores)."""
    if not list((ws / "runs").glob("prm-*/adapter")):
        run([*CLI, "train-prm", "--workspace", str(ws), "--demo", "--preset", "demo-cpu"])


def grade(adapter: Path, model: str) -> dict:
    """eval-demo on the 200 held-out prompts (seed 1234), as the before/after grades them."""
    line = run([*CLI, "eval-demo", "--model", model, "--adapter", str(adapter), "--n", "200", "--seed", "1234"])
    return json.loads(next(x for x in line.splitlines() if x.startswith("{")))


def one(ws: Path, mode: str, seed: int, steps: int) -> dict:
    import yaml

    before = {p.name for p in (ws / "runs").glob("rloo-*")}
    sets = [f"seed={seed}", f"max_steps={steps}", f"save_steps={steps // 4}", *MODES[mode]]
    run([*CLI, "train-rloo", "--workspace", str(ws), "--preset", "demo-cpu-process-reward",
         *[x for s in sets for x in ("--set", s)]])
    (rid,) = {p.name for p in (ws / "runs").glob("rloo-*")} - before
    d = ws / "runs" / rid
    ev = json.loads((d / "eval.json").read_text())
    model = yaml.safe_load((d / "config.yaml").read_text())["model"]
    curve = {0: ev["before"]["accuracy"]}
    for ck in sorted((d / "checkpoints").glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1])):
        step = int(ck.name.split("-")[1])
        curve[step] = ev["after"]["accuracy"] if step == steps else grade(ck, model)["accuracy"]
    return {"mode": mode, "seed": seed, "run": rid, "before": ev["before"]["accuracy"],
            "after": ev["after"]["accuracy"], "slip_before": ev["before"].get("slip_rate"),
            "slip_after": ev["after"].get("slip_rate"), "curve": curve}


def table(rows: list[dict]) -> str:
    key = [r for r in rows if r["mode"] == "answer key alone"]
    target = statistics.mean(r["after"] for r in key) if key else None
    lines = ["| reward | seeds | held-out accuracy (mean) | change | answers with a wrong step | first step at "
             "the answer key's final accuracy |", "|---|---|---|---|---|---|"]
    for mode in MODES:
        rs = [r for r in rows if r["mode"] == mode]
        if not rs:
            continue
        reach = [min((int(s) for s, a in r["curve"].items() if target is not None and a >= target), default=None)
                 for r in rs]
        each = ", ".join(f"{100 * (r['after'] - r['before']):+.1f}" for r in rs)
        lines.append(f"| {mode} | {len(rs)} | {statistics.mean(r['before'] for r in rs):.1%} -> "
                     f"{statistics.mean(r['after'] for r in rs):.1%} | "
                     f"{100 * statistics.mean(r['after'] - r['before'] for r in rs):+.1f} "
                     f"({each}) | "
                     f"{statistics.mean(r['slip_before'] for r in rs):.1%} -> "
                     f"{statistics.mean(r['slip_after'] for r in rs):.1%} | "
                     f"{', '.join('-' if s is None else str(s) for s in reach)} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--steps", type=int, default=160)
    ap.add_argument("--out", default="/tmp/prm_modes.jsonl")
    ap.add_argument("--workspace", default="/tmp/prm_modes_ws")
    ap.add_argument("--table", action="store_true", help="only print the table of what --out holds")
    a = ap.parse_args()
    out = Path(a.out)
    rows = [json.loads(x) for x in out.read_text().splitlines()] if out.exists() else []
    if not a.table:
        ws = Path(a.workspace)
        ensure_prm(ws)
        done = {(r["mode"], r["seed"]) for r in rows}
        for seed in map(int, a.seeds.split(",")):
            for mode in MODES:
                if (mode, seed) in done:
                    continue
                row = one(ws, mode, seed, a.steps)
                rows.append(row)
                with out.open("a") as f:
                    f.write(json.dumps(row) + "\n")
                print(json.dumps(row), flush=True)
    print(table(rows))


if __name__ == "__main__":
    main()
