"""bench/gpu_check.py --tiny: every GPU preset of every kind runs through the studio's own jobs (a tiny Qwen3 shape on
the CPU, each preset in a process of its own), and the table says, per preset, the estimate, the measured peak and
that it completed."""
import json
import re
import subprocess
import sys
from pathlib import Path

from rloo_studio.runs.jobs import KINDS

ROOT = Path(__file__).resolve().parent.parent


def test_gpu_check_tiny_runs_every_gpu_preset_on_cpu(tmp_path):
    out = tmp_path / "gpu_check.md"
    done = subprocess.run([sys.executable, "bench/gpu_check.py", "--tiny", "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    presets = {(kind, name) for kind in ("reward", "prm", "rloo") for name in KINDS[kind].preset_names()
               if re.search(r"\d+ ?gb", name, re.I)}
    assert len(presets) == 9  # 16, 24 and 80 GB of each kind
    rows = [json.loads(x) for x in out.with_suffix(".jsonl").read_text().splitlines()][1:]  # the first: the build
    assert sorted((r["kind"], r["preset"]) for r in rows) == sorted(presets)  # each once
    for r in rows:
        assert r["status"] == "completed", r
        assert r["estimate_gib"] > r["estimate_without_context_gib"] > 0 and r["peak_reserved_gib"] > 0, r
        assert r["steps"] >= 1 and r["ratio"] > 0, r
    lines = [x for x in out.read_text().splitlines() if x.startswith("| ") and not x.startswith("| kind")]
    assert sorted((x.split(" | ")[0][2:], x.split(" | ")[1]) for x in lines) == sorted(presets)
    assert all(" | completed | " in x for x in lines)
    assert (tmp_path / "gpu_check-logs").is_dir()  # each preset's output and its run's log.txt
