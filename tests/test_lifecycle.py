"""The one job lifecycle (runs/lifecycle.py) and registry (runs/jobs.py): busy, follow, whole-run progress and
time across a resume, the CLI's --resume refusals. No training here (tests/test_faults.py resumes real runs)."""
import os
import subprocess
import sys
import threading
import time

import pytest

from rloo_studio.core.errors import DataError
from rloo_studio.core.workspace import Workspace
from rloo_studio.runs import catalog, lifecycle
from rloo_studio.runs.jobs import KINDS
from rloo_studio.runs.runner import JobRunner, RunContext, earlier_parts, prepare_run, write_status


def steps_job(cfg, ctx):
    for step in range(cfg["steps"]):
        if ctx.should_stop():
            break
        ctx.metric({"step": step + 1, "loss": 1.0})
        ctx.set_progress(step + 1, cfg["steps"])
        time.sleep(cfg.get("sleep", 0.0))


def test_every_kind_names_loadable_parts_and_the_cli_commands():
    for kind in KINDS.values():
        assert callable(kind.train_fn()) and isinstance(kind.config_class(), type), kind.name
        if kind.presets:
            for name in kind.preset_names():
                assert isinstance(kind.preset_config(name), kind.config_class())
    assert {k.cli for k in KINDS.values() if k.cli} == {"train-rloo", "train-reward", "train-prm", "label-steps"}


def test_busy_names_the_run_of_this_app_and_of_another_live_process(tmp_path):
    ws = Workspace(tmp_path / "ws")
    runner = JobRunner(ws)
    assert lifecycle.busy(ws, runner) is None
    rid = runner.submit("test", {"steps": 50, "sleep": 0.05}, steps_job)
    assert rid in lifecycle.busy(ws, runner)
    with pytest.raises(DataError, match=f"Run {rid} (is queued|is still going)"):
        lifecycle.refuse_if_busy(ws, runner)
    runner.stop(rid)
    runner.wait(rid, 30)
    assert lifecycle.busy(ws, runner) is None
    # a run another live process has active (a CLI run): the app says so too
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        ws.upsert_run("rloo-other", name="rloo-other", kind="rloo", status="running", pid=other.pid,
                      started=time.time())
        assert "another process" in lifecycle.busy(ws, runner) and "rloo-other" in lifecycle.busy(ws, runner)
    finally:
        other.kill()
        other.wait()
    assert lifecycle.busy(ws, runner) is None  # its process died: not busy


def test_follow_prefers_the_typed_run_then_the_active_one_then_the_newest(tmp_path):
    ws = Workspace(tmp_path / "ws")
    assert lifecycle.follow(ws, "rloo") is None
    ws.upsert_run("rloo-1", name="rloo-1", kind="rloo", status="running", created=1.0)
    ws.upsert_run("rloo-2", name="rloo-2", kind="rloo", status="completed", created=2.0)
    ws.upsert_run("reward-3", name="reward-3", kind="reward", status="completed", created=3.0)
    assert lifecycle.follow(ws, "rloo") == "rloo-1"
    ws.upsert_run("rloo-1", status="stopped")
    assert lifecycle.follow(ws, "rloo") == "rloo-2"
    assert lifecycle.follow(ws, "rloo", " rloo-1 ") == "rloo-1"
    assert lifecycle.follow(ws, "reward") == "reward-3"
    with pytest.raises(DataError, match="no RLOO run reward-3"):
        lifecycle.follow(ws, "rloo", "reward-3")


def test_any_active_sees_a_queued_or_running_run_of_the_kind_only(tmp_path):
    """What a tab's timer paces itself by (ui/run_panel.pace): a run of the kind queued or running, here or in
    another process (the runs table), not one that ended, not one of another kind."""
    ws = Workspace(tmp_path / "ws")
    assert not lifecycle.any_active(ws, "test") and not lifecycle.any_active(ws)
    runner = JobRunner(ws)
    release = threading.Event()
    rid = runner.submit("test", {}, lambda cfg, ctx: release.wait(30))
    try:
        assert lifecycle.any_active(ws, "test") and lifecycle.any_active(ws)
        assert not lifecycle.any_active(ws, "reward")
    finally:
        release.set()
    assert runner.wait(rid, 30) == "completed"
    assert not lifecycle.any_active(ws, "test") and not lifecycle.any_active(ws)


def test_a_resumed_run_reports_the_whole_run_and_an_eta_from_its_own_pace(tmp_path):
    ws = Workspace(tmp_path / "ws")
    first = prepare_run(ws, "test", {"steps": 16})
    t0 = time.time() - 100
    first.metric({"step": 10, "loss": 1.0})
    write_status(first.dir, {"status": "stopped", "started": t0, "ended": t0 + 40})
    ctx = prepare_run(ws, "test", {"steps": 16}, run_id=first.run_id)  # the resume
    assert ctx.earlier == {"first_started": t0, "earlier_s": 40.0}
    assert (ctx.dir / "config.yaml").read_text() == (first.dir / "config.yaml").read_text()
    ctx.progress["started"] = time.time() - 8.0  # this part began 8 s ago (loading took 2 s) ...
    ctx.progress["paced"] = (10, time.time() - 6.0)  # ... its training loop at checkpoint-10 6 s ago: 3 steps since
    ctx.set_progress(13, 16)
    p = ctx.progress
    assert 47.5 < p["elapsed_s"] < 49 and 5 < p["eta_s"] < 7  # 3 steps left at 2 s a step, loading not counted
    text = lifecycle.progress_text({"status": "running", "progress": p})
    assert text.startswith("step 13/16 · 48 s in all · about 6 s left"), text
    # the Runs tab: when the first part started, and the time of every part
    ws.upsert_run(ctx.run_id, status="completed", started=time.time() - 5, ended=time.time())
    write_status(ctx.dir, {"status": "completed", **ctx.earlier})
    row = next(r for r in catalog.summaries(ws) if r["id"] == ctx.run_id)
    assert row["duration_s"] == 45
    assert row["started"] == time.strftime("%Y-%m-%d %H:%M", time.localtime(t0))


def test_earlier_parts_of_a_killed_part_end_at_its_last_record():
    assert earlier_parts({"started": 100.0}, last_record=130.0) == {"first_started": 100.0, "earlier_s": 30.0}
    assert earlier_parts({"started": 200.0, "first_started": 100.0, "earlier_s": 30.0, "ended": 210.0}) == \
        {"first_started": 100.0, "earlier_s": 40.0}
    assert earlier_parts({}) == {}


def test_cli_resume_refuses_every_settings_flag_by_name(tmp_path, capsys):
    from rloo_studio.cli import main

    ws = Workspace(tmp_path / "ws")
    ctx = prepare_run(ws, "rloo", KINDS["rloo"].preset_config("demo-cpu"))
    saved = (ctx.dir / "config.yaml").read_bytes()
    write_status(ctx.dir, {"status": "stopped"})
    args = ["train-rloo", "--workspace", str(ws.root), "--resume", ctx.run_id]
    assert main([*args, "--preset", "demo-cpu", "--config", "x.yaml", "--set", "seed=4"]) == 2
    err = capsys.readouterr().err
    assert all(f in err for f in ("--preset demo-cpu", "--config x.yaml", "--set seed=4")), err
    assert main(args) == 2  # no checkpoint: refused in words, nothing trained
    assert "no complete checkpoint" in capsys.readouterr().err
    assert (ctx.dir / "config.yaml").read_bytes() == saved and len(ws.runs()) == 1


def test_stop_of_a_run_this_app_does_not_run_says_so(tmp_path):
    ws = Workspace(tmp_path / "ws")
    runner = JobRunner(ws)
    ws.upsert_run("rloo-x", name="rloo-x", kind="rloo", status="completed")
    with pytest.raises(DataError, match="not running in this app"):
        lifecycle.stop(ws, runner, "rloo-x")
    rid = runner.submit("test", {"steps": 100, "sleep": 0.05}, steps_job)
    assert "Stopping" in lifecycle.stop(ws, runner, rid)
    assert runner.wait(rid, 30) == "stopped"
    assert isinstance(RunContext, type) and os.getpid()
