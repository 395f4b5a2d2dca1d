"""Run one training job at a time in a background thread; record its state in the workspace.

A job is a function `fn(config, ctx) -> str | None` (the returned text is its final message).
Its run folder holds config.yaml, status.json, metrics.jsonl and log.txt; the runs table
mirrors status.json for listing. States:
  queued -> running -> completed | stopped | failed
  running/queued in a process that died -> interrupted (found at the next start)
"""
from __future__ import annotations

import dataclasses
import json
import logging
import os
import queue
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from rloo_studio.core.config import to_yaml_commented
from rloo_studio.core.errors import explain
from rloo_studio.core.kept import release_memory
from rloo_studio.core.workspace import Workspace
from rloo_studio.runs.checkpoints import checkpoint_step, last_good_checkpoint
from rloo_studio.runs.jobs import KINDS
from rloo_studio.runs.record import write as write_repro

STATES = ("queued", "running", "completed", "stopped", "failed", "interrupted")
ACTIVE = ("queued", "running")
FEED_LIMIT = 20000  # in-memory metric records kept per run (the file keeps all)
PACE_STEPS, PACE_S = 3, 20.0  # the time left is said once this many steps, or seconds of steps, were seen


@dataclass
class RunContext:
    """What a job function gets: where to write, how to report, whether to stop."""

    ws: Workspace
    run_id: str
    dir: Path
    stop_event: threading.Event = field(default_factory=threading.Event)
    feed: list[dict] = field(default_factory=list)
    progress: dict = field(default_factory=dict)
    final: dict = field(default_factory=dict)  # the ended state, kept in memory even if the disk refused it
    main: bool = True  # under `accelerate launch`, only the main process writes files
    kind: str = ""  # the run's kind (runs.jobs.KINDS): which per-step files a resume rewinds
    earlier: dict = field(default_factory=dict)  # a resumed run's earlier parts: first_started, earlier_s
    resumed: dict = field(default_factory=dict)  # a resumed run: reached, resumed_from, setup (resume_facts)

    def should_stop(self) -> bool:
        return self.stop_event.is_set()

    def log(self, msg: str) -> None:
        if not self.main:
            return
        with open(self.dir / "log.txt", "a") as f:
            f.write(f"{time.strftime('%H:%M:%S')} {msg}\n")

    def metric(self, record: dict) -> None:
        record = {"time": round(time.time(), 3), **record}
        if not self.main:
            return
        with open(self.dir / "metrics.jsonl", "a") as f:
            f.write(json.dumps(record) + "\n")
        self.feed.append(record)
        del self.feed[:-FEED_LIMIT]

    def preparing(self, what: str) -> None:
        """Say what the job does before its first step ('recomputing the teacher's labels'): the status line shows
        it meanwhile, and a resume of the run says it will do it again and for about how long."""
        self.progress["preparing"] = what
        self.log(what)

    def set_progress(self, done: int, total: int, what: str = "step") -> None:
        """Progress of the whole run. The ETA comes from this part's pace since its first report (the training
        loop's start: loading models and data before it is no step's time, and a resumed run's earlier steps are
        not this part's), once PACE_STEPS steps or PACE_S seconds of steps were seen: a first step's time alone
        once said "about 1977 min"."""
        now = time.time()
        start = self.progress.get("started") or now
        self.progress.setdefault("setup_s", round(now - start, 3))  # what came before the first report
        first_done, first_at = self.progress.setdefault("paced", (done, now))
        steps, secs = done - first_done, now - first_at
        paced = steps >= PACE_STEPS or (steps > 0 and secs >= PACE_S)
        eta = (total - done) * secs / steps if paced and total else None
        self.progress.update(done=done, total=total, what=what, started=start, eta_s=eta,
                             elapsed_s=self.earlier.get("earlier_s", 0.0) + now - start)


def write_status(run_dir: Path, status: dict) -> None:
    tmp = run_dir / "status.json.tmp"
    tmp.write_text(json.dumps(status, indent=1))
    os.replace(tmp, run_dir / "status.json")  # atomic: a reader never sees half a file


def read_status(run_dir: Path) -> dict:
    try:
        return json.loads((run_dir / "status.json").read_text())
    except (OSError, ValueError):
        return {}


def read_jsonl(path: Path) -> list[dict]:
    """Records of a JSON-lines file written while a job runs; a line cut by a crash is skipped."""
    out = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    except OSError:
        pass
    return out


def read_metrics(run_dir: Path) -> list[dict]:
    return read_jsonl(run_dir / "metrics.jsonl")


def pid_alive(pid: int | None, since: float | None) -> bool:
    if not pid:
        return False
    try:
        import psutil

        p = psutil.Process(pid)
        return p.create_time() <= (since or time.time()) + 1  # a reused pid started later
    except Exception:
        return False


def mark_interrupted(ws: Workspace) -> list[str]:
    """Runs left queued/running by a process that is gone become 'interrupted'."""
    found = []
    for r in ws.runs():
        if r["status"] in ACTIVE and not pid_alive(r["pid"], r["started"] or r["created"]):
            msg = "The app stopped while this run was active. Resume it from its last checkpoint."
            ws.upsert_run(r["id"], status="interrupted", message=msg, ended=time.time())
            d = ws.run_dir(r["id"])
            write_status(d, {**read_status(d), "status": "interrupted", "message": msg})
            found.append(r["id"])
    return found


def config_dict(config: Any) -> dict:
    return dataclasses.asdict(config) if dataclasses.is_dataclass(config) else dict(config)


def prepare_run(ws: Workspace, kind: str, config: Any, run_id: str | None = None, name: str | None = None,
                pid: int | None = None) -> RunContext:
    """Create a run folder with its config and reproduction records, or reopen one to resume it.

    A resumed run is the same run: its config.yaml, command and reproduce.py stay as they were written
    (the caller resumes with the saved config, runs.lifecycle.saved_config); only its state changes, and
    the time its earlier parts took is carried into the new part's status."""
    rid = run_id or ws.new_run_id(kind)
    d = ws.run_dir(rid)
    d.mkdir(parents=True, exist_ok=True)
    ctx = RunContext(ws, rid, d, kind=kind)
    if run_id:  # a resumed run keeps its earlier curves and the time its earlier parts took
        ctx.feed.extend(read_metrics(d))
        before = read_status(d)
        ctx.earlier = earlier_parts(before, max((r.get("time", 0) for r in ctx.feed), default=None))
        ctx.resumed = resume_facts(d, before, ctx.feed)
    else:
        cfg = config_dict(config)
        (d / "config.yaml").write_text(to_yaml_commented(config))  # each key with its help as a comment
        write_repro(d, kind, ws.root, cfg)
    write_status(d, {"id": rid, "kind": kind, "status": "queued", "message": "", **ctx.earlier, **ctx.resumed})
    fields = dict(kind=kind, status="queued", pid=pid or os.getpid(), message="", ended=None)
    if not run_id:
        fields.update(name=name or rid, config=config_dict(config))
    ws.upsert_run(rid, **fields)
    return ctx


def earlier_parts(status: dict, last_record: float | None = None) -> dict:
    """What a run's status says of its parts before this one: when its first part started and how long
    the parts ran in all (a resume adds the part that just ended; a part whose process died ended at its
    last metric record)."""
    started, ended = status.get("started"), status.get("ended") or last_record
    last = max(0.0, ended - started) if started and ended else 0.0
    first = status.get("first_started") or started
    return {"first_started": first, "earlier_s": round(status.get("earlier_s", 0.0) + last, 3)} if first else {}


def resume_facts(run_dir: Path, status: dict, records: list[dict]) -> dict:
    """What a resume of the run in `run_dir` will do, from its status and its metric records before it: `reached`
    (the furthest progress the run showed: its last part's, else its furthest logged step), `resumed_from` (the step
    of the checkpoint it continues from) and `setup` (what its last part did before its first step, and how long
    that took: a resume does it again)."""
    steps = [r["step"] for r in records if isinstance(r.get("step"), int)]
    reached = status.get("reached") or ({"done": max(steps), "total": None, "what": "step"} if steps else None)
    out = {"resumed_from": checkpoint_step(last_good_checkpoint(run_dir))}
    if reached:
        out["reached"] = reached
    if status.get("setup"):
        out["setup"] = status["setup"]
    return out


def _part_end(ctx: RunContext) -> dict:
    """What a part's final status keeps for the next resume: the furthest progress shown (never less than an earlier
    part's), and what the part did before its first step and for how long."""
    p, before = ctx.progress, ctx.resumed.get("reached") or {}
    out = {}
    if p.get("total") or before:
        furthest = p if p.get("done", -1) >= before.get("done", -1) else before
        out["reached"] = {"done": furthest.get("done"), "total": p.get("total") or before.get("total"),
                          "what": furthest.get("what", "step")}
    if p.get("setup_s") is not None:
        out["setup"] = {"what": p.get("preparing", ""), "s": p["setup_s"]}
    return out


class _ThreadLogHandler(logging.Handler):
    """Copies library log records from the job's thread into log.txt."""

    def __init__(self, path: Path, thread_id: int):
        super().__init__(logging.INFO)
        self.path, self.thread_id = path, thread_id
        self.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s", "%H:%M:%S"))

    def emit(self, record):
        if record.thread == self.thread_id:
            with open(self.path, "a") as f:
                f.write(self.format(record) + "\n")


def execute(ws: Workspace, ctx: RunContext, kind: str, config: Any, fn: Callable) -> str:
    """Run `fn` now, in this thread, recording state; returns the final status. Never raises."""
    d = ctx.dir
    started = time.time()
    status = {"id": ctx.run_id, "kind": kind, "status": "running", "started": started, "pid": os.getpid(),
              "message": "", **ctx.earlier, **ctx.resumed}
    if ctx.main:
        write_status(d, status)
        ws.upsert_run(ctx.run_id, status="running", started=started, pid=os.getpid())
    handler = _ThreadLogHandler(d / "log.txt", threading.get_ident())
    root = logging.getLogger()
    if ctx.main:
        root.addHandler(handler)
    ctx.progress["started"] = started
    try:
        ctx.log(f"{kind} run {ctx.run_id} started")
        message = fn(config, ctx) or ""
        final = "stopped" if ctx.should_stop() else "completed"
    except BaseException as exc:  # noqa: BLE001 — a job must never take the app down
        final, message = "failed", explain(exc, in_run=True)
        ctx.log("FAILED: " + message + "\n" + traceback.format_exc())
    finally:
        root.removeHandler(handler)
    release_memory()  # the job's model, optimizer and trainer go now, not at a later collection (core/kept.py)
    ended = time.time()
    done = {**status, "status": final, "ended": ended, "message": message, **_part_end(ctx)}
    if ctx.main:
        # status.json last, and the in-memory state after it: whoever sees the run ended (wait(), the CLI that then
        # exits, a copy of the folder) finds its log and its row written and no file half-way. A full disk may
        # refuse these writes: the in-memory state still answers, and the next start marks the run interrupted if
        # the files never caught up.
        for record in (lambda: ctx.log(f"{final}: {message}"),
                       lambda: ws.upsert_run(ctx.run_id, status=final, ended=ended, message=message),
                       lambda: write_status(d, done)):
            try:
                record()
            except Exception as exc:  # noqa: BLE001
                logging.getLogger(__name__).warning("could not record the end of %s: %s", ctx.run_id, exc)
    ctx.final = done
    return final


class JobRunner:
    """One worker thread; jobs submitted while another runs wait in a queue (status 'queued')."""

    def __init__(self, ws: Workspace):
        self.ws = ws
        self.contexts: dict[str, RunContext] = {}
        self._queue: queue.Queue = queue.Queue()
        self._current: str | None = None
        self._lock = threading.Lock()
        mark_interrupted(ws)
        threading.Thread(target=self._work, name="rloo-studio-jobs", daemon=True).start()

    def submit(self, kind: str, config: Any, fn: Callable, name: str | None = None, run_id: str | None = None) -> str:
        """Queue a job; returns its run id at once. `run_id` resumes into an existing run folder."""
        ctx = prepare_run(self.ws, kind, config, run_id, name)
        rid = ctx.run_id
        with self._lock:
            self.contexts[rid] = ctx
        self._queue.put((rid, kind, config, fn))
        return rid

    def stop(self, run_id: str) -> bool:
        """Ask a queued or running job to stop; a running one saves its adapter first."""
        ctx = self.contexts.get(run_id)
        if ctx is None:
            return False
        ctx.stop_event.set()
        return True

    @property
    def current(self) -> str | None:
        return self._current

    def busy(self) -> bool:
        return self._current is not None or not self._queue.empty()

    def feed(self, run_id: str) -> list[dict]:
        """Metric records so far: from memory for this process's runs, else from metrics.jsonl."""
        ctx = self.contexts.get(run_id)
        return list(ctx.feed) if ctx else read_metrics(self.ws.run_dir(run_id))

    def status(self, run_id: str) -> dict:
        ctx = self.contexts.get(run_id)
        if ctx and ctx.final:
            return dict(ctx.final)
        st = read_status(self.ws.run_dir(run_id)) or (self.ws.run(run_id) or {})
        if ctx and ctx.progress:
            st = {**st, "progress": {k: v for k, v in ctx.progress.items() if k not in ("started", "paced")}}
        return st

    def wait(self, run_id: str, timeout: float | None = None) -> str:
        """Block until the run has ended; returns its status (for the CLI and tests)."""
        end = time.time() + (timeout or 1e9)
        while time.time() < end:
            s = self.status(run_id).get("status")
            if s not in ACTIVE:
                return s
            time.sleep(0.1)
        raise TimeoutError(run_id)

    def _work(self) -> None:
        while True:
            rid, kind, config, fn = self._queue.get()
            ctx = self.contexts[rid]
            if ctx.should_stop():  # stopped while queued: never started
                ctx.final = {"id": rid, "kind": kind, "status": "stopped", "message": "stopped before it started"}
                write_status(ctx.dir, ctx.final)
                self.ws.upsert_run(rid, status="stopped", message=ctx.final["message"], ended=time.time())
                continue
            self._current = rid
            try:
                execute(self.ws, ctx, kind, config, fn)
            except Exception:  # noqa: BLE001 — the worker must outlive any job
                logging.getLogger(__name__).exception("job %s", rid)
                ctx.final = ctx.final or {"id": rid, "kind": kind, "status": "failed", "message": "internal error"}
            finally:
                self._current = None


def step_files(kind: str) -> tuple[str, ...]:
    """The per-step records a resumed run of `kind` writes again (its registry entry; metrics.jsonl for any)."""
    return KINDS[kind].step_files if kind in KINDS else ("metrics.jsonl",)


def rewind(ctx: RunContext, step: int) -> None:
    """Forget what a run recorded after `step` (the checkpoint it resumes from), so that the redone
    steps appear once: each of its kind's per-step files (runs.jobs.JobKind.step_files) and the in-memory
    feed keep steps <= step, and the end-of-training summary goes (training is not over)."""
    keep = lambda r: r.get("step", 0) <= step and "train_runtime" not in r  # noqa: E731
    ctx.feed[:] = [r for r in ctx.feed if keep(r)]
    if not ctx.main:
        return
    for name in step_files(ctx.kind):
        path = ctx.dir / name
        if path.exists():
            tmp = path.with_suffix(".tmp")
            tmp.write_text("".join(json.dumps(r) + "\n" for r in read_jsonl(path) if keep(r)))
            os.replace(tmp, path)  # atomic: a crash leaves the old file or the new, never half


def resume_point(ctx: RunContext) -> str | None:
    """The checkpoint a job resumes from (None: it starts afresh), with whatever the run recorded
    after that checkpoint forgotten, so that each step has one record."""
    ckpt = last_good_checkpoint(ctx.dir)
    rewind(ctx, checkpoint_step(ckpt) if ckpt else -1)
    if ckpt:
        ctx.resumed["resumed_from"] = checkpoint_step(ckpt)
        ctx.log(f"resuming from {Path(ckpt).name}")
    return ckpt
