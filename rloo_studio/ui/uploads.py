"""Where the app keeps files a browser uploads: inside the workspace, private, and only until imported.

Gradio keeps uploads (and copies of the files it hands out) in its temp folder, by default one
folder under /tmp shared by every Gradio app on the machine. The app points that folder into its
workspace (GRADIO_TEMP_DIR, read when the Blocks are built), readable by its owner only, and
deletes an upload's copy there once the import has read it (the workspace keeps its own copy of
an imported file under uploads/).
"""
from __future__ import annotations

import os
from pathlib import Path

from rloo_studio.core.workspace import Workspace


def use_workspace_temp(ws: Workspace) -> Path:
    """Make Gradio keep uploads in <workspace>/incoming (owner-only). Call before building the UI."""
    d = ws.incoming_dir
    d.mkdir(parents=True, exist_ok=True)
    d.chmod(0o700)
    os.environ["GRADIO_TEMP_DIR"] = str(d)
    return d


def discard_upload(ws: Workspace, path) -> None:
    """Delete Gradio's copy of an uploaded file (and its folder, once empty); only inside incoming/."""
    if not path:
        return
    p = Path(path).resolve()
    if ws.incoming_dir.resolve() not in p.parents:
        return  # not one of ours (a path from the CLI or a test): never delete it
    p.unlink(missing_ok=True)
    try:
        p.parent.rmdir()
    except OSError:
        pass
