"""Where a test run's CPU time goes: the CPU seconds of each kind of process while the tests run, as `make test` runs
them (two pytest-xdist workers, one compute thread a process).

    .venv/bin/python bench/suite_cpu.py [--log FILE] [tests/test_label_ui.py ...]    # no files: the whole suite
    PYTEST_ADDOPTS=--durations=0 .venv/bin/python bench/suite_cpu.py --log suite.log  # each test's time in FILE

Reads every process's CPU time (user + system) from /proc every 0.5 s and sums each process's growth by its kind:
Chromium's renderers, Chromium's other processes, the apps the browser tests start (app.py), the CLI commands tests
run, the pytest workers (their own training, scoring and sampling tests), a notebook kernel, anything else. A process
that lives less than 0.5 s may be missed; the sampling itself takes about 1% of a core. Prints pytest's last line, the
wall seconds and one JSON line of CPU seconds by kind; --log keeps pytest's whole output. Nothing else should be
running.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path

from bench_tests import pytest_command  # this folder is the script's: first on sys.path

ROOT = Path(__file__).resolve().parent.parent
TICK = os.sysconf("SC_CLK_TCK")


def kind(cmdline: str) -> str:
    if "chrom" in cmdline:
        return "chromium renderers" if "--type=renderer" in cmdline else "chromium other"
    if "app.py" in cmdline:
        return "apps"
    if "ipykernel" in cmdline:
        return "notebook kernel"
    if "rloo_studio" in cmdline or "accelerate" in cmdline:
        return "CLI commands the tests run"
    if "pytest" in cmdline or "exec(eval(" in cmdline:  # xdist's workers start as `python -c "...exec(eval(...))"`
        return "pytest workers"
    return "other"


class Sampler(threading.Thread):
    """Each process's CPU seconds at its first and last sighting, keyed by (pid, start time)."""

    def __init__(self):
        super().__init__(daemon=True)
        self.seen: dict[tuple[str, str], list] = {}
        self.on = True

    def run(self) -> None:
        me = str(os.getpid())
        while self.on:
            for pid in os.listdir("/proc"):
                if not pid.isdigit() or pid == me:
                    continue
                try:
                    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                    cpu = (int(fields[11]) + int(fields[12])) / TICK
                    key = (pid, fields[19])
                    if key not in self.seen:
                        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                        self.seen[key] = [kind(cmd), cpu, cpu]
                    self.seen[key][2] = cpu
                except (OSError, IndexError, ValueError):  # ended between the listing and the read
                    continue
            time.sleep(0.5)

    def totals(self) -> dict[str, float]:
        out = Counter()
        for k, first, last in self.seen.values():
            out[k] += last - first
        return {k: round(v, 1) for k, v in out.most_common()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", type=Path, help="write pytest's whole output here")
    ap.add_argument("modules", nargs="*", help="test files, relative to this tree (none: tests/)")
    args = ap.parse_args()
    modules = args.modules or ["tests"]
    cmd, env = pytest_command(ROOT, modules)
    sampler = Sampler()
    sampler.start()
    t0 = time.monotonic()
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.monotonic() - t0
    sampler.on = False
    sampler.join()
    if args.log:
        args.log.write_text(out.stdout + out.stderr)
    print((out.stdout.strip().splitlines() or ["(no output)"])[-1])
    totals = sampler.totals()
    print(json.dumps({"wall_s": round(wall), "cpu_s": round(sum(totals.values())), "by_kind": totals}))


if __name__ == "__main__":
    main()
