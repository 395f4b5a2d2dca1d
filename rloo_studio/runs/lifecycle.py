"""A job's life, decided once for the tabs and the CLI: start, resume, stop, is a job busy, which run to follow.

The tabs start jobs on the app's JobRunner (a background thread); the CLI runs them in its own process
(`run_here`). Both go through `new_run` / `resume_run` for the config a run trains with, so a resumed run
always continues its saved config.yaml, which nothing rewrites.
"""
from __future__ import annotations

from typing import Any

from rloo_studio.core import form
from rloo_studio.core.errors import DataError, StudioError
from rloo_studio.core.workspace import Workspace
from rloo_studio.runs.catalog import find_run, resumable, run_config
from rloo_studio.runs.jobs import KINDS
from rloo_studio.runs.plan import guard
from rloo_studio.runs.runner import ACTIVE, JobRunner, mark_interrupted, pid_alive

STOPPING = "it finishes the current step, then saves a checkpoint and the adapter"


def busy(ws: Workspace, runner: JobRunner | None = None) -> str | None:
    """Why a new job cannot start now (one job at a time: one GPU), or None. Looks at this app's runner
    and at runs another live process (a CLI run, another app) has active in the workspace."""
    if runner is not None and runner.busy():
        rid = runner.current or next((r for r, c in runner.contexts.items() if not c.final), "")
        state = "is still going" if runner.current else "is queued"
        return f"Run {rid} {state}: stop it or wait for it to end, then try again."
    for r in ws.runs():
        if r["status"] in ACTIVE and (runner is None or r["id"] not in runner.contexts) \
                and pid_alive(r["pid"], r["started"] or r["created"]):
            return (f"Run {r['id']} is still going in another process (pid {r['pid']}): "
                    "stop it or wait for it to end, then try again.")
    return None


def new_run(ws: Workspace, kind: str, cfg: Any) -> Any:
    """The config a new run of `kind` trains with, after the kind's pre-flight and, on a GPU, the memory guard
    (runs/plan.py; raises in plain words)."""
    KINDS[kind].check(ws, cfg)
    guard(ws, kind, cfg)
    return cfg


def resume_run(ws: Workspace, kind: str, run_id, status: str | None = None) -> tuple[str, Any]:
    """(run id, saved config) of a run that Resume may continue, or a DataError saying why not. The config
    is the run's own config.yaml: the checkpoint was made with it, so a resume never trains another."""
    rid = resumable(ws, run_id, kind, status)
    return rid, saved_config(ws, kind, rid)


def saved_config(ws: Workspace, kind: str, run_id: str) -> Any:
    return run_config(ws, run_id, KINDS[kind].config_class())


def start(ws: Workspace, runner: JobRunner, kind: str, cfg: Any, name: str | None = None) -> str:
    """Check and queue a new run on the app's runner; returns its id (raises a StudioError in words)."""
    cfg = new_run(ws, kind, cfg)
    refuse_if_busy(ws, runner)
    return runner.submit(kind, cfg, KINDS[kind].train_fn(), name=name)


def resume(ws: Workspace, runner: JobRunner, kind: str, run_id) -> str:
    """Queue a stopped, failed or interrupted run to continue from its last checkpoint with its saved config."""
    rid = find_run(ws, run_id, kind)["id"]  # a typed id is checked before anything reads its folder
    rid, cfg = resume_run(ws, kind, rid, runner.status(rid).get("status"))
    refuse_if_busy(ws, runner)
    return runner.submit(kind, cfg, KINDS[kind].train_fn(), run_id=rid)


def refuse_if_busy(ws: Workspace, runner: JobRunner | None) -> None:
    why = busy(ws, runner)
    if why:
        raise DataError(why)


def stop(ws: Workspace, runner: JobRunner, run_id) -> str:
    """Ask a run of this app to stop; returns what will happen, or raises a DataError saying why not."""
    r = find_run(ws, run_id)
    if not can_stop(runner, r["id"]) or not runner.stop(r["id"]):
        raise DataError(f"{r['id']} is not running in this app: there is nothing to stop.")
    return f"Stopping {r['id']}: {STOPPING}."


def can_stop(runner: JobRunner, run_id: str | None) -> bool:
    """Whether Stop would stop `run_id`: a job of this app whose status is queued or running. The status, as every
    reader sees it (its status.json says a run ended a moment before the runner lets the run go)."""
    return bool(run_id) and run_id in runner.contexts and runner.status(run_id).get("status") in ACTIVE


def can_resume(ws: Workspace, runner: JobRunner, kind: str, run_id: str | None) -> bool:
    """Whether Resume would continue `run_id` (the rule of `resumable`; another job running is said on click)."""
    if not run_id:
        return False
    try:
        resumable(ws, run_id, kind, runner.status(run_id).get("status"))
        return True
    except StudioError:
        return False


def follow(ws: Workspace, kind: str, typed=None) -> str | None:
    """The run a tab shows: the one typed or picked (checked), else the kind's active run, else its newest."""
    if str(typed or "").strip():
        return find_run(ws, typed, kind)["id"]
    runs = ws.runs(kind)
    active = [r for r in runs if r["status"] in ACTIVE]
    return (active or runs or [{"id": None}])[0]["id"]


def any_active(ws: Workspace, kind: str | None = None) -> bool:
    """Whether a run of `kind` (None: any kind) is queued or running, in this app or another process."""
    return any(r["status"] in ACTIVE for r in ws.runs(kind))


# -- the settings a run was started with, against a form's or a preset's -------------------------------------------

LEFT_TO_LAUNCH = "latest"  # a setting a preset leaves to the launch (the newest run of a kind, named by the pre-flight)


def differing(cfg: Any, other: Any) -> list[str]:
    """The settings (the form's keys, lora.r …) whose values differ between two configs of one kind, compared as a
    form holds them; a setting `cfg` leaves to the launch matches whatever `other` named there."""
    keys = [f.key for f in form.fields(type(cfg))]
    return [k for k, a, b in zip(keys, form.values(cfg), form.values(other))
            if a != b and not (a == LEFT_TO_LAUNCH and b)]


def nearest_preset(ws: Workspace, kind: str, cfg: Any) -> tuple[str, list[str]] | None:
    """(preset name, the settings `cfg` changed from it) for the kind's preset that `cfg` differs least from."""
    best = None
    for p in KINDS[kind].presets(ws):
        try:
            changed = differing(KINDS[kind].preset_config(p.name, ws), cfg)
        except StudioError:  # a preset file of the user's that went wrong: not a candidate
            continue
        if best is None or len(changed) < len(best[1]):
            best = (p.name, changed)
    return best


def settings_words(ws: Workspace, kind: str, cfg: Any) -> str:
    """'demo-cpu-process-reward settings', or 'demo-cpu settings with max_steps and beta changed': a run's settings
    named by their nearest preset."""
    near = nearest_preset(ws, kind, cfg)
    if near is None:
        return "settings of its own"
    name, changed = near
    return f"{name} settings" + (f" with {names(changed)} changed" if changed else "")


def names(keys: list[str], most: int = 3) -> str:
    """'a', 'a and b', 'a, b and c', 'a, b, c and 4 more'."""
    if len(keys) > most:
        return f"{', '.join(keys[:most])} and {len(keys) - most} more"
    return " and ".join([", ".join(keys[:-1]), keys[-1]]) if len(keys) > 1 else "".join(keys)


def cli_resume_check(ws: Workspace, kind: str, run_id: str, given: list[str]) -> tuple[str, Any]:
    """The CLI's `--resume RUN`: (run id, saved config). Settings given with it are refused, named: a resumed
    run is the run that was started, and its checkpoint was made with its own settings."""
    if given:
        raise DataError(f"--resume {run_id} continues the run with its saved settings (its config.yaml); it "
                        f"takes no {', '.join(given)}. To train with other settings, start a new run "
                        f"(the saved ones: --config {ws.run_dir(str(run_id)) / 'config.yaml'}).")
    mark_interrupted(ws)  # a run whose process died (kill -9, a crash) resumes like an interrupted one
    return resume_run(ws, kind, run_id)


def describe_time(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 90 else f"{seconds} s"


def progress_text(status: dict) -> str:
    """'step 11/16 · 41 s in all · about 20 s left' for a run's status line: the whole run, earlier parts
    included; what a part does before its first step while it does it; a resumed run's counter never below the
    furthest step the run showed ('' before the run reports anything)."""
    p, reached = status.get("progress") or {}, status.get("reached") or {}
    running = status.get("status") == "running"
    if running and not p.get("total"):
        return preparing_text(status)
    total = p.get("total") or reached.get("total")
    if not total:
        return ""
    now, furthest = p.get("done", reached.get("done")) or 0, reached.get("done") or 0
    parts = [f"{p.get('what') or reached.get('what') or 'step'} {max(now, furthest)}/{total}"]
    if running and now < furthest:
        parts.append(f"resumed from the checkpoint at step {status.get('resumed_from', now)} (the run had reached "
                     f"{furthest}): redoing step {now + 1}")
    if p.get("elapsed_s") is not None and running:
        parts.append(describe_time(p["elapsed_s"]) + " in all")
    if p.get("eta_s") is not None and running:
        parts.append(f"about {describe_time(p['eta_s'])} left")
    return " · ".join(parts)


def preparing_text(status: dict) -> str:
    """What a running part does before its first step: a resumed run says what it recomputes, for about how long
    (its last part's time), and the step it continues from; '' when the job says nothing and resumes nothing."""
    p = status.get("progress") or {}
    if status.get("resumed_from") is not None and status.get("reached"):
        return "resumed " + resume_plan(status)
    return f"computing {p['preparing']} before the first step" if p.get("preparing") else ""


def resume_plan(facts: dict) -> str:
    """'from the checkpoint at step 15 (the run had reached 17): recomputing the teacher's labels and the base's
    states (about 2 min 30 s), then continuing from step 15', from a resumed run's status (runner.resume_facts)."""
    start, furthest = facts.get("resumed_from") or 0, (facts.get("reached") or {}).get("done")
    had = f" (the run had reached {furthest})" if furthest is not None and furthest != start else ""
    setup = facts.get("setup") or {}
    what = (facts.get("progress") or {}).get("preparing") or setup.get("what")
    doing = f"recomputing {what}" if what else "loading the model and data again"
    took = f" (about {describe_time(setup['s'])})" if (setup.get("s") or 0) >= 1 else ""
    return f"from the checkpoint at step {start}{had}: {doing}{took}, then continuing from step {start}"
