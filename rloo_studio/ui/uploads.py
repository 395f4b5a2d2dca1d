"""Where the app keeps files a browser uploads: inside the workspace, private, and only until imported.

Gradio keeps uploads (and copies of the files it hands out) in its temp folder, by default one
folder under /tmp shared by every Gradio app on the machine. The app points that folder into its
workspace (GRADIO_TEMP_DIR, read when the Blocks are built), readable by its owner only, and
deletes an upload's copy there once the import has read it (the workspace keeps its own copy of
an imported file under uploads/).

Gradio serves every file in its temp folder, and that folder cannot be blocked: Gradio then refuses
to hand an upload to the import ("located in one of the blocked_paths"), and an export's download
link points at the copy Gradio makes there. What it puts there is always `<64 hex digits>/<name>`,
the digits being the SHA-256 of Gradio's seed and the file's bytes, so that a URL can be written only
by someone who holds the file already. IncomingGuard refuses, on the file route, every other path
in the folder (a file placed there by hand, a half-received upload, Gradio's deep links).
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from rloo_studio.core.workspace import Workspace

GRADIO_NAME = re.compile(r"[0-9a-f]{64}")  # the folder Gradio names by the hash of a file it keeps
FILE_ROUTE = re.compile(r"/file[=/](.*)$", re.DOTALL)  # /gradio_api/file=PATH and /gradio_api/file/PATH


def served_from_incoming(incoming: Path, target: str) -> bool:
    """False for a file-route target inside `incoming` that Gradio did not put there (see the module)."""
    try:
        folder, path = Path(os.path.abspath(incoming)).resolve(), Path(os.path.abspath(target)).resolve()
    except (OSError, ValueError, RuntimeError):  # a path no file can have (a NUL byte; a symlink loop raises
        # RuntimeError on Python 3.11): Gradio would refuse it too
        return False
    try:
        parts = path.relative_to(folder).parts
    except ValueError:
        return True  # not in incoming/: Gradio's own rules (allowed / blocked paths) decide
    return len(parts) == 2 and bool(GRADIO_NAME.fullmatch(parts[0]))


class IncomingGuard:
    """ASGI middleware: the file route answers 403 for any path in incoming/ but `<hash>/<name>`, before
    Gradio looks at it (whether the file exists or not, so a refusal says nothing about what is there)."""

    def __init__(self, app, incoming: str):
        self.app, self.incoming = app, Path(incoming)

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            m = FILE_ROUTE.search(scope.get("path", ""))
            if m and not served_from_incoming(self.incoming, m.group(1)):
                await send({"type": "http.response.start", "status": 403,
                            "headers": [(b"content-type", b"text/plain; charset=utf-8")]})
                await send({"type": "http.response.body", "body": b"File not allowed."})
                return
        await self.app(scope, receive, send)


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
