"""The app's object: one workspace, the job runner that trains in it, and the device. It wires the stages
together (core, label, runs) for the UI and `serve`, so it lives above them; no gradio here."""
from __future__ import annotations

from pathlib import Path

from rloo_studio.core import bootstrap  # noqa: F401
from rloo_studio.core.device import describe
from rloo_studio.core.paths import DEFAULT_WORKSPACE
from rloo_studio.label.demo_data import open_workspace, wants_demo
from rloo_studio.runs.runner import JobRunner


class Studio:
    def __init__(self, workspace: str | Path | None = None, seed_demo: bool | None = None):
        """seed_demo None: only the default workspace starts with the demo data (see wants_demo)."""
        seed = wants_demo(workspace) if seed_demo is None else seed_demo
        self.ws = open_workspace(workspace or DEFAULT_WORKSPACE, demo=seed)
        self.runner = JobRunner(self.ws)  # marks runs of a dead process 'interrupted'
        self.device = describe()

    def header(self) -> dict:
        return {**self.device, "workspace": str(self.ws.root)}
