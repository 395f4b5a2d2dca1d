"""How long the app takes from `python app.py` to serving its page, with Unsloth imported when the first model is
loaded (as the app does) and imported at start (as the app did until 2026-12-06).

    .venv/bin/python bench/bench_app_start.py [--rounds 5]

Each round starts the app on a copy of one demo workspace in both ways, in alternating order, after an uncounted
warm-up round of each, and times the first HTTP 200 of its page. The eager variant imports unsloth before running
app.py, which is what core/bootstrap.py did at import before it waited for transformers. Prints the medians in
seconds and the ratio eager / lazy as one JSON line.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from browser import free_port  # noqa: E402

EAGER = "import unsloth, runpy, sys; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"


def start(ws: Path, eager: bool) -> float:
    port = free_port()
    args = ["app.py", "--workspace", str(ws), "--port", str(port)]
    cmd = [sys.executable, "-c", EAGER, *args] if eager else [sys.executable, *args]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the app exited ({' '.join(cmd)})")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as r:
                    if r.status == 200:
                        return time.perf_counter() - t0
            except OSError:
                time.sleep(0.1)
    finally:
        proc.terminate()
        proc.wait(30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    from rloo_studio.label.demo_data import open_workspace

    tmp = Path(tempfile.mkdtemp())
    open_workspace(tmp / "seed", demo=True)
    times: dict[str, list[float]] = {"lazy": [], "eager": []}
    for i in range(args.rounds + 1):  # round 0: warm-up, not counted
        order = ("lazy", "eager") if i % 2 else ("eager", "lazy")
        for name in order:
            ws = tmp / f"ws-{i}-{name}"
            shutil.copytree(tmp / "seed", ws)
            t = start(ws, name == "eager")
            if i:
                times[name].append(t)
    lazy, eager = statistics.median(times["lazy"]), statistics.median(times["eager"])
    print(json.dumps({"rounds": args.rounds, "median_s": {"lazy": round(lazy, 2), "eager": round(eager, 2)},
                      "eager_over_lazy": round(eager / lazy, 2)}))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
