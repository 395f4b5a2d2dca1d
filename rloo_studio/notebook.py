"""The studio in a Jupyter cell (or any Python process): `rloo_studio.launch(...)` serves the app from this process
and returns at once; jobs run in this process, as in `app.py`. In Jupyter the app is shown in the cell's output;
the URL is printed for a full browser tab. `app.close()` stops the server, stops a job still running (its checkpoint
kept) and frees every model the studio holds.

    import rloo_studio
    app = rloo_studio.launch(workspace="ws", demo=True)     # the same settings as app.py's flags
    ...
    app.close()
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rloo_studio.core.errors import StudioError

_SERVING: dict = {}  # the one app this process serves: {"app": StudioApp}


@dataclass
class StudioApp:
    studio: object  # rloo_studio.studio.Studio: the workspace, its job runner, the device
    blocks: object  # the Gradio Blocks being served
    url: str

    @property
    def workspace(self) -> Path:
        return self.studio.ws.root

    def __repr__(self) -> str:
        return f"RLOO Studio on {self.url} (workspace {self.workspace})"

    def close(self, wait_s: float = 120) -> None:
        """Stop the server; a job still running is asked to stop (it saves a checkpoint and its model) and waited
        for up to `wait_s` seconds; every model the studio keeps is freed."""
        from rloo_studio.core import kept

        runner = self.studio.runner
        for rid, ctx in list(runner.contexts.items()):
            if not ctx.final:
                runner.stop(rid)
                try:
                    runner.wait(rid, wait_s)
                except TimeoutError:
                    print(f"Run {rid} is still stopping; it ends after its current step.")
        self.blocks.close()
        kept.unload_all()
        _SERVING.clear()


def launch(workspace: str | Path | None = None, demo: bool = False, host: str = "127.0.0.1", port: int = 7860,
           auth: tuple[str, str] | str | None = None, allow_paths: tuple = (), max_upload_mb: int = 500,
           height: int = 1000, inline: bool | None = None) -> StudioApp:
    """Serve RLOO Studio from this process and return (the settings of app.py: --workspace, --demo, --host,
    --port, --auth USER:PASSWORD, --allow-path, --max-upload-mb). `inline`: show it in the notebook cell (None:
    in Jupyter, yes). A second launch in the same process returns the app already served for the same workspace,
    and refuses another workspace, saying which app runs."""
    from rloo_studio.cli_views import parse_auth

    if _SERVING:
        app = _SERVING["app"]
        wanted = Path(workspace or app.workspace).expanduser().resolve()
        if wanted != app.workspace:
            raise StudioError(f"RLOO Studio already serves {app.workspace} at {app.url} in this process: "
                              "app.close() it first, then launch the other workspace.")
        print(f"RLOO Studio is already running: {app.url} (workspace {app.workspace})")
        return app
    from rloo_studio.core import bootstrap  # noqa: F401  (unsloth before transformers, as app.py)
    # isort: split
    from rloo_studio.core import paths
    from rloo_studio.core.paths import ASSETS
    from rloo_studio.label.demo_data import wants_demo
    from rloo_studio.python_api import use_runner
    from rloo_studio.studio import Studio
    from rloo_studio.ui.app import launch as serve

    studio = Studio(workspace, seed_demo=wants_demo(workspace, demo))
    paths.restrict_to([studio.ws.root, ASSETS, *allow_paths])
    use_runner(studio.ws, studio.runner)  # jobs started from Python queue with the app's
    credentials = parse_auth(auth) if isinstance(auth, str) or auth is None else tuple(auth)
    try:
        blocks = serve(studio, host, port, credentials, block=False, max_upload_mb=max_upload_mb, inline=inline,
                       height=height)
    except OSError as exc:
        raise StudioError(f"Could not serve on {host}:{port} ({exc}): another program uses the port; pass "
                          "port= another number.") from None
    app = StudioApp(studio, blocks, blocks.local_url or f"http://{host}:{port}/")
    _SERVING["app"] = app
    print(f"RLOO Studio on {app.url}  workspace {app.workspace}  {studio.device['device']}", flush=True)
    return app
