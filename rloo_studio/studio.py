"""The app's core object: one workspace, one job runner, the device. No gradio here."""
from __future__ import annotations

import time
from pathlib import Path

from . import bootstrap  # noqa: F401
from .device import describe
from .jobs.runner import JobRunner
from .paths import DEFAULT_WORKSPACE
from .workspace import Workspace


class Studio:
    def __init__(self, workspace: str | Path | None = None, seed_demo: bool = True):
        self.ws = Workspace(workspace or DEFAULT_WORKSPACE, seed_demo=seed_demo)
        self.runner = JobRunner(self.ws)  # marks runs of a dead process 'interrupted'
        self.device = describe()

    def header(self) -> dict:
        return {**self.device, "workspace": str(self.ws.root)}

    def runs_table(self, kind: str | None = None) -> list[list]:
        """Rows for the runs list: id, kind, status, started, duration, message."""
        rows = []
        for r in self.ws.runs(kind):
            start = r["started"] or r["created"]
            end = r["ended"] or (time.time() if r["status"] == "running" else start)
            rows.append([
                r["id"], r["kind"], r["status"], time.strftime("%Y-%m-%d %H:%M", time.localtime(start)),
                f"{max(0, end - start):.0f} s", r["message"],
            ])
        return rows
