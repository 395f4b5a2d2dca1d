"""Start-up time of the CLI commands that load no model (the target: <= 2 s, no Unsloth banner).

    .venv/bin/python bench/bench_cli.py [--repeats 5] [--compare /path/to/other/checkout]

Times `--help`, `runs list`, `import` and `export` on a fresh empty workspace, each a new process, the
median of --repeats runs after one uncounted warm-up. With --compare, the same commands of another
checkout (e.g. `git worktree add /tmp/old 1691ed3^`, with a .venv link) run interleaved with this one's,
and the ratio of medians is printed. One JSON line per command.
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
PAIR = {"prompt": "What is 2+2?", "chosen": "<think>\n2+2=4\n</think>\n\n4", "rejected": "5"}


def commands(tmp: Path) -> dict[str, list[str]]:
    data = tmp / "pairs.jsonl"
    data.write_text(json.dumps(PAIR) + "\n")
    return {
        "--help": ["--help"],
        "runs list": ["runs", "list", "--workspace", "{ws}"],
        "import": ["import", str(data), "--workspace", "{ws}"],
        "export": ["export", "--workspace", "{ws}", "--out", "{ws}/out.jsonl"],
    }


def once(checkout: Path, args: list[str], ws: Path) -> tuple[float, bool]:
    argv = [str(checkout / ".venv" / "bin" / "python"), "-m", "rloo_studio", *[a.format(ws=ws) for a in args]]
    t = time.perf_counter()
    p = subprocess.run(argv, cwd=checkout, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(checkout)})
    return time.perf_counter() - t, "Unsloth" in p.stdout + p.stderr


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--compare", type=Path, help="another checkout, timed interleaved with this one")
    a = ap.parse_args()
    sides = {"this": ROOT, **({"other": a.compare.resolve()} if a.compare else {})}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for name, args in commands(tmp).items():
            times: dict[str, list[float]] = {s: [] for s in sides}
            banner = {s: False for s in sides}
            for k in range(a.repeats + 1):  # k == 0: warm-up, not counted
                for s, checkout in sides.items():
                    ws = tmp / f"ws-{s}-{name.replace(' ', '_')}-{k}"
                    if name == "export":  # something to export
                        once(checkout, commands(tmp)["import"], ws)
                    secs, b = once(checkout, args, ws)
                    banner[s] |= b
                    if k:
                        times[s].append(secs)
            out = {"command": name, **{f"{s}_median_s": round(statistics.median(v), 3) for s, v in times.items()},
                   **{f"{s}_banner": banner[s] for s in sides}}
            if a.compare:
                out["ratio_this_over_other"] = round(out["this_median_s"] / out["other_median_s"], 3)
            out["load_average"] = round(os.getloadavg()[0], 2)
            print(json.dumps(out), flush=True)


if __name__ == "__main__":
    sys.exit(main())
