"""What some test modules cost on this tree against another checkout: the machine's CPU seconds and the wall time of
each run, as `make test` runs them (two pytest-xdist workers, one compute thread a process).

    .venv/bin/python bench/bench_tests.py --compare OTHER_TREE [--rounds 2] tests/test_label_screen.py ...

The trees alternate within each round (the other first in odd rounds), after an uncounted warm-up round of both.
CPU seconds are the whole machine's busy time (/proc/stat) over the run, so nothing else should be running. Prints
one JSON line per tree: the median CPU seconds and wall seconds, the runs' pass lines, and for this tree the ratios
to the other.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def busy_s() -> float:
    """Seconds of CPU time the machine has spent busy (all cores) since it started."""
    user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, Path("/proc/stat").read_text().split()[1:9])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def pytest_command(tree: Path, modules: list[str]) -> tuple[list[str], dict]:
    """(command, environment) that runs the modules' tests on `tree` as `make test` runs them."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    cmd = [str(tree / ".venv" / "bin" / "python"), "-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup",
           "--no-loadscope-reorder", "-p", "no:cacheprovider", *modules]
    return cmd, env


def run(tree: Path, modules: list[str]) -> tuple[float, float, str]:
    """(busy CPU seconds, wall seconds, pytest's last line) of the modules' tests on `tree`."""
    cmd, env = pytest_command(tree, modules)
    c0, t0 = busy_s(), time.monotonic()
    out = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
    c1, t1 = busy_s(), time.monotonic()
    last = (out.stdout.strip().splitlines() or ["(no output)"])[-1]
    if out.returncode:
        sys.exit(f"{tree}: the tests failed: {last}")
    return c1 - c0, t1 - t0, last


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--compare", type=Path, required=True, help="another checkout (its own .venv, or a link to one)")
    ap.add_argument("--rounds", type=int, default=2, help="counted rounds (after one uncounted warm-up)")
    ap.add_argument("modules", nargs="+", help="test files, relative to the trees")
    args = ap.parse_args()
    trees = [ROOT, args.compare.resolve()]
    figures = {t: [] for t in trees}
    for r in range(args.rounds + 1):
        for tree in (trees if r % 2 == 0 else trees[::-1]):
            cpu, wall, last = run(tree, args.modules)
            if r:  # round 0 warms up
                figures[tree].append((cpu, wall, last))
    med = {t: (statistics.median(f[0] for f in figs), statistics.median(f[1] for f in figs))
           for t, figs in figures.items()}
    for tree, figs in figures.items():
        out = {"tree": str(tree), "cpu_s": round(med[tree][0]), "wall_s": round(med[tree][1]), "rounds": len(figs),
               "runs": [f[2] for f in figs]}
        if tree == ROOT:
            out["ratio_cpu"] = round(med[ROOT][0] / med[trees[1]][0], 2)
            out["ratio_wall"] = round(med[ROOT][1] / med[trees[1]][1], 2)
        print(json.dumps(out))


if __name__ == "__main__":
    main()
