"""The headless jobs under `accelerate launch` with two CPU processes (DDP over gloo)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from rloo_studio.core.workspace import Workspace
from rloo_studio.runs.runner import read_metrics, read_status

ROOT = Path(__file__).resolve().parent.parent
ACCELERATE = str(Path(sys.executable).parent / "accelerate")


@pytest.mark.parametrize("kind,sets", [
    ("rloo", ["max_steps=2", "per_device_train_batch_size=8"]),
    ("reward", ["max_steps=2", "per_device_train_batch_size=4"]),
])
def test_two_process_cpu_run_writes_one_run_folder(tmp_path, kind, sets):
    ws_dir = tmp_path / "ws"
    cmd = [ACCELERATE, "launch", "--cpu", "--num_processes", "2", "--num_machines", "1", "--mixed_precision", "no",
           "--dynamo_backend", "no", "-m", "rloo_studio", f"train-{kind}", "--workspace", str(ws_dir), "--demo"]
    for s in sets:
        cmd += ["--set", s]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    ws = Workspace(ws_dir)
    runs = ws.runs()
    assert len(runs) == 1 and runs[0]["status"] == "completed"
    d = ws.run_dir(runs[0]["id"])
    assert [p.name for p in (ws.runs_dir).iterdir()] == [runs[0]["id"]]
    assert read_status(d)["status"] == "completed"
    steps = [m["step"] for m in read_metrics(d) if "loss" in m]
    assert steps == sorted(set(steps)) and steps[-1] == 2  # each step logged once, by the main process
    assert (d / "adapter" / "adapter_config.json").exists()
    assert json.loads((d / "environment.json").read_text())["versions"]["trl"] == "1.15.0"
