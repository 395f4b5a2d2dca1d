"""Finished runs as choices for other tabs: trained reward models and RLOO policies."""
from __future__ import annotations

from pathlib import Path

from .workspace import Workspace


def trained_adapters(ws: Workspace, kind: str) -> list[tuple[str, str]]:
    """(label, run_id) for runs of `kind` that saved an adapter, newest first.

    A stopped run saved its adapter too, so it counts; a failed one usually did not.
    """
    out = []
    for r in ws.runs(kind):
        if (adapter_dir(ws, r["id"]) / "adapter_config.json").exists():
            out.append((f"{r['name']} ({r['status']})", r["id"]))
    return out


def adapter_dir(ws: Workspace, run_id: str) -> Path:
    return ws.run_dir(run_id) / "adapter"
