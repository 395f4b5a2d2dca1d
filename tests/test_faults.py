"""Faults: the process killed mid-run (each job kind that trains), and a full disk while saving a checkpoint."""
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from resume_check import assert_same_run

from rloo_studio.label.demo_data import open_workspace
from rloo_studio.label.store import progress
from rloo_studio.rloo.config import RlooJobConfig
from rloo_studio.rloo.job import train_rloo
from rloo_studio.runs.checkpoints import last_good_checkpoint
from rloo_studio.runs.runner import JobRunner, read_metrics, read_status

ROOT = Path(__file__).resolve().parent.parent


def wait_for(pred, timeout=300, every=0.02):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(every)
    raise TimeoutError


KINDS = {  # settings off the defaults, so a resume that rebuilt a default config would not match
    "rloo": ["per_device_train_batch_size=8", "learning_rate=2e-4", "seed=3"],
    "reward": ["per_device_train_batch_size=8", "eval_steps=100", "learning_rate=5e-5", "seed=3"],
    # the demo's step labels (train-prm --demo), one changed copy of each response where the preset makes six
    "prm": ["per_device_train_batch_size=64", "copies=1", "eval_steps=100", "logging_steps=1", "learning_rate=2e-3",
            "seed=3"],
}
DEMO = {"prm": ["--demo"]}  # its own demo data: the step labels, added once


@pytest.mark.parametrize("kind", list(KINDS))
def test_kill_9_mid_run_then_resume_from_checkpoint(tmp_path, kind, capsys):
    """kill -9 after the first checkpoint, then `train-KIND --resume RUN` alone: the run continues with its
    saved settings (config.yaml unchanged) and ends as the run that was never killed (metrics ==, adapter equal)."""
    from rloo_studio.cli import main

    ws_dir = tmp_path / "ws"
    ws = open_workspace(ws_dir, demo=True)
    labels_before = progress(ws)
    sets = [a for x in ["max_steps=8", "save_steps=2", *KINDS[kind]] for a in ("--set", x)]
    cmd = [sys.executable, "-m", "rloo_studio", f"train-{kind}", "--workspace", str(ws_dir), *DEMO.get(kind, []), *sets]
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for(lambda: ws.runs() and last_good_checkpoint(ws.run_dir(ws.runs()[0]["id"])) is not None)
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    rid = ws.runs()[0]["id"]
    d = ws.run_dir(rid)
    assert read_status(d)["status"] == "running"  # what the dead process left
    saved = {f: (d / f).read_bytes() for f in ("config.yaml", "command.txt", "reproduce.json")}
    ckpt = int(Path(last_good_checkpoint(d)).name.split("-")[1])
    logged_before = [m["step"] for m in read_metrics(d) if "loss" in m]

    # Settings given with --resume are refused in words, and nothing of the run changes.
    assert main([f"train-{kind}", "--workspace", str(ws_dir), "--resume", rid, "--set", "max_steps=9"]) == 2
    err = capsys.readouterr().err
    assert "--set max_steps=9" in err and "saved settings" in err, err
    assert {f: (d / f).read_bytes() for f in saved} == saved

    assert main([f"train-{kind}", "--workspace", str(ws_dir), "--resume", rid]) == 0, capsys.readouterr()
    assert ws.run(rid)["status"] == "completed" and read_status(d)["status"] == "completed"
    assert {f: (d / f).read_bytes() for f in saved} == saved  # the saved settings were trained, not rewritten
    steps = [m["step"] for m in read_metrics(d) if "loss" in m]
    assert steps == list(range(1, 9)), steps  # one record per step: the redone steps replace the lost ones
    assert set(logged_before) <= set(steps) and max(logged_before) >= ckpt
    assert progress(ws) == labels_before
    assert read_status(d)["earlier_s"] > 0  # the killed part's time counts in the whole run's
    # The resumed run is the run that was never killed: same metrics after the checkpoint, same adapter.
    assert main([f"train-{kind}", "--workspace", str(ws_dir), *DEMO.get(kind, []), *sets]) == 0
    full = next(r["id"] for r in ws.runs() if r["id"] != rid)
    assert_same_run(d, ws.run_dir(full), from_step=ckpt)


def test_full_disk_while_checkpointing_fails_cleanly(tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", str(mnt)]).returncode:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        ws = open_workspace(mnt / "ws", demo=True)
        r = JobRunner(ws)
        cfg = RlooJobConfig(max_steps=30, save_steps=2, per_device_train_batch_size=8)
        rid = r.submit("rloo", cfg, train_rloo)
        d = ws.run_dir(rid)
        wait_for(lambda: last_good_checkpoint(d) is not None
                 or r.status(rid).get("status") not in ("queued", "running"))
        good = last_good_checkpoint(d)
        assert good, r.status(rid)
        # Fill the disk right after the first checkpoint: the next save cannot be written.
        with open(mnt / "filler", "wb") as f:
            try:
                while True:
                    f.write(b"\0" * 2**20)
            except OSError:
                pass
        assert r.wait(rid, 600) == "failed"
        msg = r.status(rid)["message"]
        assert msg.startswith("The disk is full"), msg
        from safetensors.torch import load_file

        assert load_file(str(Path(good) / "adapter_model.safetensors"))  # the earlier checkpoint is intact
        assert last_good_checkpoint(d) is not None
        # The app keeps working: free the space and the next run succeeds.
        (mnt / "filler").unlink()
        ok = r.submit("rloo", RlooJobConfig(max_steps=1, save_steps=100, per_device_train_batch_size=8), train_rloo)
        assert r.wait(ok, 600) == "completed"
    finally:
        subprocess.run(["umount", "-l", str(mnt)])


GENERATE = """
import sys
from rloo_studio.label.generate import GenerateConfig, generate_candidates
from rloo_studio.runs.runner import JobRunner
from rloo_studio.core.workspace import Workspace
r = JobRunner(Workspace(sys.argv[1]))
r.wait(r.submit("generate", GenerateConfig(limit=400, k=2, max_new_tokens=48), generate_candidates), 3600)
"""


def test_kill_9_during_generate_keeps_whole_batches(tmp_path):
    ws_dir = tmp_path / "ws"
    ws = open_workspace(ws_dir, demo=True)
    labels_before = progress(ws)
    count = "SELECT COUNT(*) FROM pairs WHERE source LIKE 'generated:%'"
    p = subprocess.Popen([sys.executable, "-c", GENERATE, str(ws_dir)], cwd=ROOT, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: ws.query(count)[0][0] > 0, timeout=600)
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    (run,) = ws.runs("generate")
    r = JobRunner(ws)  # the next start
    assert ws.run(run["id"])["status"] == "interrupted"
    assert ws.query("PRAGMA integrity_check")[0][0] == "ok"
    orphans = ws.query("SELECT COUNT(*) FROM responses r WHERE r.source LIKE 'model:%' AND NOT EXISTS "
                       "(SELECT 1 FROM pairs p WHERE p.response_a = r.id OR p.response_b = r.id)")[0][0]
    assert orphans == 0  # a batch is written whole or not at all
    made = ws.query(count)[0][0]
    assert 0 < made < 400 and progress(ws) == {**labels_before, "total": labels_before["total"] + made}
    from rloo_studio.label.generate import GenerateConfig, generate_candidates

    again = r.submit("generate", GenerateConfig(limit=8, k=2, max_new_tokens=48), generate_candidates)
    assert r.wait(again, 600) == "completed", r.status(again)
