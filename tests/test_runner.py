import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rloo_studio.core.errors import ConfigError, DataError
from rloo_studio.core.workspace import Workspace
from rloo_studio.runs.runner import JobRunner, mark_interrupted, read_metrics, read_status

ROOT = Path(__file__).resolve().parent.parent


def counting_job(cfg, ctx):
    """A job that logs a metric per step and honours stop, like a trainer with StudioCallback."""
    for step in range(cfg["steps"]):
        if ctx.should_stop():
            break
        ctx.metric({"step": step + 1, "loss": 1.0 / (step + 1)})
        ctx.set_progress(step + 1, cfg["steps"])
        time.sleep(cfg.get("sleep", 0.0))
    return f"did {len(ctx.feed)} steps"


def failing_job(cfg, ctx):
    raise ConfigError("learning_rate must be positive, got -1.")


def oom_job(cfg, ctx):
    raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")


def test_completed_with_metrics_status_and_log(empty_workspace):
    r = JobRunner(empty_workspace)
    rid = r.submit("test", {"steps": 3}, counting_job)
    assert r.wait(rid, 30) == "completed"
    d = empty_workspace.run_dir(rid)
    assert [m["step"] for m in read_metrics(d)] == [1, 2, 3]
    assert [m["step"] for m in r.feed(rid)] == [1, 2, 3]
    st = read_status(d)
    assert st["status"] == "completed" and st["message"] == "did 3 steps"
    assert (d / "config.yaml").read_text().startswith("steps: 3")
    assert "started" in (d / "log.txt").read_text()
    assert empty_workspace.run(rid)["status"] == "completed"


def test_one_at_a_time_second_is_queued_then_runs(empty_workspace):
    r = JobRunner(empty_workspace)
    a = r.submit("test", {"steps": 50, "sleep": 0.02}, counting_job)
    b = r.submit("test", {"steps": 2}, counting_job)
    time.sleep(0.2)
    assert r.status(a)["status"] == "running"
    assert r.status(b)["status"] == "queued"
    assert r.wait(a, 30) == "completed" and r.wait(b, 30) == "completed"
    assert empty_workspace.run(a)["ended"] <= empty_workspace.run(b)["started"]


def test_stop_running_and_queued(empty_workspace):
    r = JobRunner(empty_workspace)
    a = r.submit("test", {"steps": 10000, "sleep": 0.01}, counting_job)
    b = r.submit("test", {"steps": 5}, counting_job)
    while not r.feed(a):
        time.sleep(0.01)
    r.stop(b)
    r.stop(a)
    assert r.wait(a, 30) == "stopped"
    assert r.wait(b, 30) == "stopped"
    assert len(r.feed(a)) < 10000
    assert r.feed(b) == []  # never started
    assert r.status(b)["message"] == "stopped before it started"


def test_failures_become_messages_and_next_run_works(empty_workspace):
    r = JobRunner(empty_workspace)
    bad = r.submit("test", {}, failing_job)
    assert r.wait(bad, 30) == "failed"
    assert r.status(bad)["message"] == "learning_rate must be positive, got -1."
    oom = r.submit("test", {}, oom_job)
    assert r.wait(oom, 30) == "failed"
    assert r.status(oom)["message"].startswith("Out of memory. Lower the batch size")
    assert "Traceback" in (empty_workspace.run_dir(oom) / "log.txt").read_text()
    ok = r.submit("test", {"steps": 1}, counting_job)
    assert r.wait(ok, 30) == "completed"


def test_run_of_a_killed_process_shows_interrupted(tmp_path):
    ws_dir = tmp_path / "ws"
    code = f"""
import sys, time
sys.path.insert(0, {str(ROOT)!r})
from rloo_studio.core.workspace import Workspace
from rloo_studio.runs.runner import JobRunner
def job(cfg, ctx):
    ctx.metric({{"step": 1}})
    print("RUNNING", ctx.run_id, flush=True)
    time.sleep(600)
r = JobRunner(Workspace({str(ws_dir)!r}))
r.submit("test", {{}}, job)
r.submit("test", {{}}, job)
print("SUBMITTED", flush=True)
time.sleep(600)
"""
    env = {**os.environ, "RLOO_STUDIO_NO_UNSLOTH": "1"}
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)
    lines = [p.stdout.readline(), p.stdout.readline()]
    line = next(x for x in lines if x.startswith("RUNNING"))
    assert any(x.startswith("SUBMITTED") for x in lines), lines
    ws = Workspace(ws_dir)
    assert mark_interrupted(ws) == []  # the owner is alive: nothing to mark
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert sorted(r["status"] for r in ws.runs()) == ["queued", "running"]
    JobRunner(ws)  # the next start marks them
    runs = ws.runs()
    assert [r["status"] for r in runs] == ["interrupted", "interrupted"]
    running = line.split()[1]
    assert read_status(ws.run_dir(running))["status"] == "interrupted"
    assert read_metrics(ws.run_dir(running)) != []  # what was logged is kept


def test_feed_of_a_finished_run_in_another_process_reads_the_file(empty_workspace):
    r = JobRunner(empty_workspace)
    rid = r.submit("test", {"steps": 2}, counting_job)
    r.wait(rid, 30)
    r2 = JobRunner(empty_workspace)
    assert [m["step"] for m in r2.feed(rid)] == [1, 2]


def test_resume_passes_over_a_checkpoint_cut_short(tmp_path):
    """The one resume rule: the newest checkpoint whose trainer_state.json was written (the Trainer writes it
    last), never a half-written one (no state, or a state cut short by a kill as it was written), nor a folder
    that only looks like a checkpoint."""
    from rloo_studio.runs.checkpoints import last_good_checkpoint

    ck = tmp_path / "checkpoints"
    assert last_good_checkpoint(tmp_path) is None
    for step, complete in ((4, True), (8, True), (12, False)):
        (ck / f"checkpoint-{step}").mkdir(parents=True)
        if complete:
            (ck / f"checkpoint-{step}" / "trainer_state.json").write_text("{}")
    (ck / "checkpoint-16").mkdir()
    (ck / "checkpoint-16" / "trainer_state.json").write_text('{\n  "best_global_step": null,\n  "best_met')
    (ck / "checkpoint-final").mkdir()
    (ck / "checkpoint-final" / "trainer_state.json").write_text("{}")
    assert last_good_checkpoint(tmp_path) == str(ck / "checkpoint-8")


def test_one_resume_rule_for_the_tabs_and_the_cli(tmp_path):
    """catalog.resumable: a stopped, failed or interrupted run of the kind asked for, with a complete checkpoint."""
    from rloo_studio.runs.catalog import resumable
    from rloo_studio.runs.runner import prepare_run, write_status

    ws = Workspace(tmp_path / "ws")
    ctx = prepare_run(ws, "rloo", {"max_steps": 4})
    rid, d = ctx.run_id, ctx.dir

    def refused(status, match, kind="rloo"):
        write_status(d, {"status": status})
        with pytest.raises(DataError, match=match):
            resumable(ws, rid, kind)

    refused("running", "running already")
    refused("completed", "completed all its steps")
    refused("stopped", "no complete checkpoint")
    (d / "checkpoints" / "checkpoint-2").mkdir(parents=True)
    refused("stopped", "no complete checkpoint")  # cut short: no trainer_state.json
    (d / "checkpoints" / "checkpoint-2" / "trainer_state.json").write_text("{}")
    for status in ("stopped", "failed", "interrupted"):
        write_status(d, {"status": status})
        assert resumable(ws, rid, "rloo") == rid
    refused("stopped", "no reward-model run", kind="reward")
    with pytest.raises(DataError, match="not a run id"):
        resumable(ws, "../../etc", "rloo")
    # a live status from the job runner overrides the file
    with pytest.raises(DataError, match="queued already"):
        resumable(ws, rid, "rloo", status="queued")
