"""What a run's status says as it starts, stops and resumes, without a model: the time left only once the pace
means something, a resumed run that says what it recomputes and for how long and whose step counter never goes back,
the process reward model's stop figures naming the step they were measured at, and the completions' precision."""
import threading
import time

from rloo_studio.core.workspace import Workspace
from rloo_studio.runs import lifecycle
from rloo_studio.runs.checkpoints import mark_checkpoint
from rloo_studio.runs.runner import JobRunner, RunContext, resume_point

GATES: dict[str, threading.Event] = {}


def gated(name: str) -> None:
    GATES[name].wait(30)


def slow_setup_job(cfg, ctx):
    """A job like the process reward model's: it prepares (the teacher's labels), resumes from its last checkpoint,
    then counts steps to `stop`, a checkpoint every `save`; it waits at the named gates the test opens."""
    ctx.preparing("the teacher's labels and the base's states")
    time.sleep(cfg["setup_s"])
    gated(f"{cfg['part']}-setup")
    last = resume_point(ctx)
    start = int(last.rsplit("-", 1)[1]) if last else 0
    ctx.set_progress(start, cfg["steps"])  # the training loop begins (TrainerCallback.on_train_begin)
    for step in range(start + 1, cfg["stop"] + 1):
        ctx.metric({"step": step, "loss": 1.0 / step})
        if step % cfg["save"] == 0:
            mark_checkpoint(ctx, step)
        ctx.set_progress(step, cfg["steps"])
        if step == start + 1:
            gated(f"{cfg['part']}-first-step")
    return f"stopped at step {cfg['stop']}"


def wait_for(check, what: str, timeout: float = 30.0):
    end = time.time() + timeout
    while time.time() < end:
        got = check()
        if got:
            return got
        time.sleep(0.02)
    raise AssertionError(f"never saw {what}")


def test_a_resume_says_what_it_recomputes_and_its_step_counter_never_goes_back(tmp_path):
    ws = Workspace(tmp_path / "ws")
    runner = JobRunner(ws)
    for gate in ("one-setup", "one-first-step", "two-setup", "two-first-step"):
        GATES[gate] = threading.Event()
    GATES["one-setup"].set()
    GATES["one-first-step"].set()
    cfg = {"steps": 40, "stop": 17, "save": 15, "setup_s": 1.2, "part": "one"}
    rid = runner.submit("test", cfg, slow_setup_job)
    assert runner.wait(rid, 30) == "completed"
    ended = runner.status(rid)
    assert lifecycle.progress_text(ended) == "step 17/40"  # the furthest step shown, after the run ended
    assert ended["setup"]["what"] == "the teacher's labels and the base's states" and ended["setup"]["s"] >= 1.2

    shown: list[str] = []  # every status line the page would show from here on
    watch = lambda: shown.append(lifecycle.progress_text(runner.status(rid))) or shown[-1]  # noqa: E731
    runner.submit("test", {**cfg, "stop": 20, "part": "two"}, slow_setup_job, run_id=rid)
    said = wait_for(lambda: "recomputing" in watch() and shown[-1], "the resumed part preparing")
    assert said.startswith("resumed from the checkpoint at step 15 (the run had reached 17): recomputing the "
                           "teacher's labels and the base's states (about 1 s), then continuing from step 15"), said
    assert lifecycle.resume_plan(runner.status(rid)).startswith("from the checkpoint at step 15 (the run had reached "
                                                                "17): recomputing the teacher's labels")
    GATES["two-setup"].set()
    redo = wait_for(lambda: "redoing" in watch() and shown[-1], "the resumed part redoing steps")
    assert redo.startswith("step 17/40 · resumed from the checkpoint at step 15 (the run had reached 17): redoing "
                           "step 1"), redo
    GATES["two-first-step"].set()
    assert runner.wait(rid, 30) == "completed"
    shown.append(lifecycle.progress_text(runner.status(rid)))
    counters = [int(s.split("/")[0].rsplit(" ", 1)[1]) for s in shown if "/40" in s]
    assert counters and counters == sorted(counters) and min(counters) >= 17 and counters[-1] == 20, shown


def test_the_time_left_waits_for_a_pace_worth_the_name(tmp_path):
    """A first step timed alone (or the loading before it) once gave 'about 1977 min'."""
    ctx = RunContext(Workspace(tmp_path / "ws"), "r", tmp_path)
    now = time.time()
    ctx.progress["started"] = now - 150  # 150 s of loading before the training loop reported anything
    ctx.set_progress(0, 2000)
    assert ctx.progress["eta_s"] is None and 149 < ctx.progress["setup_s"] < 152
    ctx.progress["paced"] = (0, now - 2)
    ctx.set_progress(1, 2000)
    assert ctx.progress["eta_s"] is None  # one step in 2 s: too little to say
    ctx.set_progress(3, 2000)
    assert 1300 < ctx.progress["eta_s"] < 1340  # 3 steps in ~2 s: 1997 left at ~0.67 s
    ctx.progress["paced"] = (3, time.time() - 25)
    ctx.set_progress(4, 2000)
    assert 49_000 < ctx.progress["eta_s"] < 51_000  # one step, but 25 s of it


def test_stop_figures_name_the_step_they_were_measured_at():
    from rloo_studio.prm.job import figures_said

    untrained = {"step": 0, "eval_step_accuracy": 0.171, "eval_first_wrong_found": 0.167, "eval_right_called_right": 0}
    assert figures_said([untrained, {"step": 17, "loss": 0.3}], 17) == (
        "; held-out figures at step 0 (before training): step accuracy 17.1%, first wrong step found 16.7%, "
        "right steps called right 0.0%")
    later = {**untrained, "step": 10, "eval_step_accuracy": 0.8}
    assert figures_said([untrained, later], 17).startswith("; held-out figures at step 10, the last evaluation: "
                                                           "step accuracy 80.0%")
    assert figures_said([untrained, {**later, "step": 17}], 17).startswith("; held-out figures at step 17: ")
    assert figures_said([{"step": 3, "loss": 1.0}], 3) == ""


def test_rewards_keep_the_digits_that_tell_them_apart():
    from rloo_studio.rloo.completions import completion_groups

    samples = [{"step": 1, "prompt": "p", "response": "<think>\n1+1=2\n</think>\n\n2", "rewards": {"process_reward": v},
                "total": v, "advantage": v - 0.5, "length": 9, "truncated": False}
               for v in (0.81234, 0.81567, 0.2, 0.00042)]
    cols, rows = completion_groups(samples, "as generated")
    got = [r[cols.index("process_reward")] for r in rows]
    assert got == [0.8123, 0.8157, 0.2, 0.00042]
    assert [r[cols.index("total")] for r in rows] == got
