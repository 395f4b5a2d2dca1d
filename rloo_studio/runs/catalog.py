"""Runs across kinds: summaries, curves to overlay, deletion; trained adapters as choices for tabs."""
from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

from rloo_studio.core.config import from_dict
from rloo_studio.core.errors import DataError
from rloo_studio.core.workspace import Workspace
from rloo_studio.runs import run_warnings
from rloo_studio.runs.checkpoints import last_good_checkpoint
from rloo_studio.runs.jobs import KINDS, SCORERS, article, scorer_kinds, title
from rloo_studio.runs.runner import ACTIVE, read_metrics, read_status

_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


def shorten(text: str, limit: int = 60) -> str:
    """Typed text quoted back to the user, cut to a readable length."""
    text = str(text)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} characters)"


def find_run(ws: Workspace, run_id, kind: str | None = None) -> dict:
    """The run a typed id names, or a DataError that says so in plain words (no path is ever built from it)."""
    rid = str(run_id or "").strip()
    what = title(kind)
    if not rid:
        raise DataError(f"No {what + ' ' if what else ''}run chosen: pick one from the list.")
    if not _RUN_ID.fullmatch(rid) or ".." in rid:
        raise DataError(f"{shorten(rid)!r} is not a run id (ids look like rloo-20261201-075300): "
                        "pick a run from the list.")
    r = ws.run(rid)
    if r is None or (kind and r["kind"] != kind):
        raise DataError(f"There is no {what + ' ' if what else ''}run {rid} in this workspace: pick one from the list.")
    return r


def resumable(ws: Workspace, run_id, kind: str, status: str | None = None) -> str:
    """The run id of a run that Resume may continue, or a DataError that says in plain words why not.
    The one rule for the tabs and the CLI: a stopped, failed or interrupted run of this kind with a complete
    checkpoint. `status`: what the caller knows of it (a job runner's live status), else its status.json."""
    rid = find_run(ws, run_id, kind)["id"]
    status = status or (read_status(ws.run_dir(rid)) or {}).get("status")
    if status in ACTIVE:
        raise DataError(f"{rid} is {status} already: there is nothing to resume.")
    if status == "completed":
        raise DataError(f"{rid} completed all its steps: to train longer, start a new run with a higher max_steps.")
    if last_good_checkpoint(ws.run_dir(rid)) is None:
        raise DataError(f"{rid} saved no complete checkpoint to resume from: start it again.")
    return rid


def run_config(ws: Workspace, run_id: str, cls=None):
    """The config a run was launched with (its config.yaml): as `cls`, a job's config dataclass (settings it
    no longer has are left out; a missing file is a DataError), or as the plain dict ({} when missing)."""
    import dataclasses

    import yaml

    try:
        data = yaml.safe_load((ws.run_dir(run_id) / "config.yaml").read_text()) or {}
    except OSError:
        if cls is not None:
            raise DataError(f"Run {run_id} has no config.yaml: it cannot be resumed or compared.") from None
        return {}
    if cls is None:
        return data

    names = {f.name for f in dataclasses.fields(cls)}
    return from_dict(cls, {k: v for k, v in data.items() if k in names})


_STAMP = re.compile(r"\d\d:\d\d:\d\d ")


def failure(ws: Workspace, run_id: str) -> tuple[str, str]:
    """(plain message, traceback) of a failed run, read from its log.txt ('FAILED: <message>' then the
    traceback); ('', '') when the log records no failure."""
    try:
        lines = (ws.run_dir(run_id) / "log.txt").read_text(errors="replace").splitlines()
    except (OSError, ValueError):
        return "", ""
    return split_failure(lines)


def split_failure(lines: list[str]) -> tuple[str, str]:
    """The last 'FAILED: message' in log lines, and the traceback lines that follow it (up to the next
    time-stamped line)."""
    for i in range(len(lines) - 1, -1, -1):
        head, sep, message = lines[i].partition("FAILED: ")
        if sep and (not head or _STAMP.fullmatch(head)):
            tb = []
            for line in lines[i + 1:]:
                if _STAMP.match(line):
                    break
                tb.append(line)
            return message.strip(), "\n".join(tb).strip()
    return "", ""


def without_traceback(lines: list[str]) -> list[str]:
    """Log lines with every traceback left out (each failure's message line stays)."""
    out, skipping = [], False
    for line in lines:
        if _STAMP.match(line):
            skipping = "FAILED: " in line
            out.append(line)
        elif not skipping:
            out.append(line)
    return out



def trained_adapters(ws: Workspace, kind: str) -> list[tuple[str, str]]:
    """(label, run_id) for runs of `kind` that saved an adapter, newest first.

    A stopped run saved its adapter too, so it counts; a failed one usually did not.
    """
    out = []
    for r in ws.runs(kind):
        if saved_model(ws, r["id"]):
            out.append((f"{r['name']} ({r['status']})", r["id"]))
    return out


def scorer_run(ws: Workspace, run_id, which: tuple[str, ...] = SCORERS) -> dict:
    """The run a typed id names when its kind gives a scorer of these sorts (runs.jobs.JobKind.adapter: 'outcome',
    'process'), or a DataError that says in words what the run is and what to choose instead."""
    kinds = scorer_kinds(which)
    named = " or ".join(title(k) for k in kinds)
    rid = str(run_id or "").strip()
    if _RUN_ID.fullmatch(rid) and ".." not in rid and ws.run(rid) is None:
        raise DataError(f"There is no {named} run {rid} in this workspace: pick one from the list.")
    r = find_run(ws, rid)
    kind = KINDS.get(r["kind"])
    if kind is None or kind.scorer not in which:
        what = title(r["kind"])
        gives = "a policy, not a reward model" if kind and kind.adapter == "policy" else \
            f"{article(kind.scorer)} {kind.scorer} reward model" if kind and kind.scorer else "no reward model"
        wanted = " or ".join(f"{article(title(k))} {title(k)}" for k in kinds)
        raise DataError(f"Run {r['id']} is {article(what)} {what} run: it gives {gives}, so it cannot score here. "
                        f"Choose {wanted} run (see: runs list).")
    return r


def scorer_of(ws: Workspace, run_id) -> str:
    """'outcome' or 'process': what the run a typed id names scores with (scorer_run's DataError otherwise)."""
    return KINDS[scorer_run(ws, run_id)["kind"]].scorer


def scorer_runs(ws: Workspace, which: tuple[str, ...] = SCORERS) -> list[tuple[str, str]]:
    """(label, run_id) of the runs with a saved adapter whose kind gives a scorer of these sorts, newest first."""
    kinds = set(scorer_kinds(which))
    return [(f"{r['name']} ({r['status']})", r["id"]) for r in ws.runs()
            if r["kind"] in kinds and saved_model(ws, r["id"])]


def saved_model(ws: Workspace, run_id: str) -> bool:
    """Whether a run saved what it trained: a PEFT adapter, or a whole fine-tuned model, in its adapter/ folder."""
    d = adapter_dir(ws, run_id)
    return (d / "adapter_config.json").exists() or (d / "config.json").exists()


def adapter_dir(ws: Workspace, run_id: str) -> Path:
    return ws.run_dir(run_id) / "adapter"


def last_values(metrics: list[dict]) -> dict:
    out = {}
    for m in metrics:
        out.update({k: v for k, v in m.items() if isinstance(v, (int, float))})
    return out


def summaries(ws: Workspace) -> list[dict]:
    """One row per run: id, kind, status, started, duration, key figures, message, folder."""
    rows = []
    for r in ws.runs():
        st = read_status(ws.run_dir(r["id"]))
        start = st.get("first_started") or r["started"] or r["created"]  # a resumed run: when its first part began
        last = last_values(read_metrics(ws.run_dir(r["id"])))
        metrics = KINDS[r["kind"]].key_metrics if r["kind"] in KINDS else ()
        figures = ", ".join(f"{label} {last[k]:.3g}" for label, k in metrics if k in last)
        rows.append({"id": r["id"], "kind": r["kind"], "status": r["status"],
                     "started": time.strftime("%Y-%m-%d %H:%M", time.localtime(start)),
                     "duration_s": round(whole_duration(st, r)), "figures": figures, "step": last.get("step"),
                     "message": r["message"], "warnings": run_warnings.read(ws.run_dir(r["id"])),
                     "folder": str(ws.run_dir(r["id"]))})
    return rows


def whole_duration(status: dict, row: dict) -> float:
    """Seconds a run trained in all its parts: its status's earlier parts plus the runs-table row's last
    part (still counting while it runs)."""
    start = row.get("started") or row.get("created") or time.time()
    end = row.get("ended") or (time.time() if row.get("status") in ACTIVE else start)
    return (status.get("earlier_s") or 0.0) + max(0.0, end - start)


def numeric_keys(ws: Workspace, run_ids: list[str]) -> list[str]:
    keys: set[str] = set()
    for rid in run_ids:
        for m in read_metrics(ws.run_dir(rid)):
            keys |= {k for k, v in m.items() if isinstance(v, (int, float)) and k not in ("time", "step", "epoch")}
    return sorted(keys)


def overlay(ws: Workspace, run_ids: list[str], metric: str) -> list[dict]:
    """Rows {run, step, value} of one metric for several runs, for a single plot."""
    rows = []
    for rid in run_ids:
        for m in read_metrics(ws.run_dir(rid)):
            v = m.get(metric)
            if isinstance(v, (int, float)) and m.get("step") is not None:
                rows.append({"run": rid, "step": m["step"], "value": float(v)})
    return rows


def delete_run(ws: Workspace, run_id: str) -> None:
    """Remove a finished run's folder and row. An active run must be stopped first."""
    r = ws.run(run_id)
    if r is None:
        raise KeyError(f"no run {run_id}")
    if r["status"] in ACTIVE:
        raise ValueError(f"{run_id} is {r['status']}; stop it before deleting")
    shutil.rmtree(ws.run_dir(run_id), ignore_errors=True)
    with ws.transaction() as con:
        con.execute("DELETE FROM runs WHERE id=?", (run_id,))
