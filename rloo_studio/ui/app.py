"""The app shell: header, tabs, launch."""
from __future__ import annotations

import html
import importlib

import gradio as gr
from starlette.middleware import Middleware

from rloo_studio.runs import jobs
from rloo_studio.studio import Studio
from rloo_studio.ui import (
    api,
    inspect_tab,
    job_section,
    job_tab,
    label_tab,
    playground_tab,
    records_tab,
    run_panel,
    runs_tab,
)
from rloo_studio.ui.page_start import ActFirst
from rloo_studio.ui.uploads import IncomingGuard, use_workspace_temp

CSS = """
.studio-header {display:flex; gap:1.5em; align-items:baseline; flex-wrap:wrap; padding:.2em 0 .4em}
.studio-header h1 {margin:0; font-size:1.5em}
.studio-header .meta {color:var(--body-text-color-subdued); font-size:.9em}
.studio-header .meta b {color:var(--body-text-color)}
/* explanatory text readable on white (the theme's neutral-400 is about 1.9:1; neutral-500 is 4.8:1) */
:root:not(.dark) {--body-text-color-subdued: #71717a; --block-info-text-color: #71717a}
/* a long field name (mask_truncated_completions) breaks rather than being cut by its column */
label, label span, [data-testid="block-info"], .info-text {overflow-wrap: anywhere}
/* a button that cannot be pressed looks it */
button:disabled, button[disabled] {opacity: .45 !important; cursor: not-allowed !important; filter: grayscale(.6);
    box-shadow: none !important}
"""

# Gradio's page reloads itself after the app restarts only when an event was in flight as the connection broke. A page
# whose event stream was open with none in flight keeps the dead stream marked open, and its next event (a label key)
# waits forever (Gradio's client does not reopen a broken stream: gradio-app/gradio#13584). So every page asks which
# start of the app it talks to, at once and every 3 s, and reloads when that changes; the tabs keep their place
# across a reload. tests/test_label_reload_ui.py checks it.
RELOAD_ON_RESTART = """
<script>
(() => {
  const url = new URL('gradio_api/app_id', location.href);
  let seen = null;
  const check = async () => {
    try {
      const r = await fetch(url, {cache: 'no-store'});
      if (!r.ok) return;
      const id = await r.text();  // as text: the id is a 64-bit number
      if (seen === null) seen = id; else if (id !== seen) location.reload();
    } catch (e) {}  // the app is away: ask again later
  };
  check();
  setInterval(check, 3000);
})();
</script>
"""

BASE_TABS = [("Label", label_tab), ("Records", records_tab), ("Inspect", inspect_tab), ("Runs", runs_tab),
             ("Playground", playground_tab)]


def tabs() -> list[tuple[str, object]]:
    """(title, module) of every tab: the base tabs, with each job kind's tab (runs.jobs.JobKind.tab) after the tab
    its entry names (kinds after the same tab keep the registry's order; a tab named nowhere goes last)."""
    out = list(BASE_TABS)
    for job in jobs.tabbed():
        titles = [t for t, _ in out]
        at = titles.index(job.tab_after) + 1 if job.tab_after in titles else len(out)
        while at < len(out) and out[at][0] in {k.tab_title for k in jobs.tabbed()}:
            at += 1  # after the job tabs already placed there
        out.insert(at, (job.tab_title, importlib.import_module(job.tab) if job.tab else job_tab.DefaultTab(job)))
    return out



def header_html(studio: Studio) -> str:
    h = studio.header()
    return (
        "<div class='studio-header'><h1>RLOO Studio</h1>"
        f"<span class='meta'>device <b>{html.escape(h['device'])}</b></span>"
        f"<span class='meta'>backend <b>{html.escape(h['backend'])}</b></span>"
        f"<span class='meta'>workspace <b>{html.escape(h['workspace'])}</b></span></div>"
    )


def _polling(demo: gr.Blocks, before: set[int]) -> list[gr.Timer]:
    """The timers a tab made that run from the start (a tab's live status); not those it starts itself."""
    return [b for i, b in demo.blocks.items() if i not in before and isinstance(b, gr.Timer) and b.active]


def poll_only_the_open_tab(demo: gr.Blocks, tabs: list[tuple[gr.Tab, list[gr.Timer]]]) -> None:
    """Each tab's status timers tick only while the tab is open: the hidden tabs' ticks would otherwise
    share the server with every key press of the labeling (one tab redraws itself when opened anyway)."""
    timers = [t for _, own in tabs for t in own]
    if not timers:
        return

    def only(own: list[gr.Timer]):  # the timers' new states, in the order of `timers`
        return lambda: [gr.Timer(active=any(t is o for o in own)) for t in timers]

    for tab, own in tabs:  # the page also selects its first tab as it loads: no load event is needed
        tab.select(only(own), None, timers, show_progress="hidden")


def build_ui(studio: Studio) -> gr.Blocks:
    # Files this app made in its temp folder (copies of exports handed out, uploads never imported)
    # go after a day; Gradio also empties it when the app starts.
    with gr.Blocks(title="RLOO Studio", delete_cache=(3600, 86400)) as demo:
        endpoints = api.register(demo, studio)  # the scripting API, first: its names are taken before any tab's
        gr.HTML(header_html(studio))
        built = []
        with gr.Tabs():
            for name, module in tabs():
                before = set(demo.blocks)
                with gr.Tab(name, id=name.lower().replace(" ", "-")) as tab:
                    hooks = module.build(studio)  # a tab may return hooks(demo, tab) for load / select events
                built.append((tab, _polling(demo, before)))
                # First of the tab's select events (the page runs them in order): in the browser, every tab's
                # live parts go stale; the tab shown gets its own back from its fresh tick (ui/run_panel.py).
                tab.select(None, js=run_panel.LEAVE_JS)
                if callable(hooks):
                    hooks(demo, tab)
        poll_only_the_open_tab(demo, built)
    api.hide_the_rest(demo, endpoints)  # the tabs' own events serve the page, not scripts
    track_progress_only_where_shown(demo)
    return demo


def track_progress_only_where_shown(demo: gr.Blocks) -> None:
    """Each event tracks its progress only on the outputs that show it: none when its progress is hidden (timer
    ticks, tab selects, a form's checks), and never on a State, a Timer or a layout block that draws no progress.
    Gradio 6.31's page keeps a loading status for each output of every event it has run, and on each status message
    of any event hands every one of them back to its component, each found by a search of the whole tree of about
    800 (a layout block's whole subtree is walked again): most of the script of a page that follows a run
    (docs/BENCHMARKS.md, An idle page)."""
    for fn in demo.fns.values():
        if fn.show_progress_on is not None:
            continue
        if fn.show_progress == "hidden":
            fn.show_progress_on = []
            continue
        shows = [b for b in fn.outputs if _draws_progress(b)]
        if len(shows) < len(fn.outputs):
            fn.show_progress_on = shows


def _draws_progress(block) -> bool:
    if isinstance(block, (gr.State, gr.Timer)):
        return False
    if isinstance(block, gr.components.Component):  # gr.HTML is a component and a layout block: it draws it
        return True
    return getattr(block, "show_progress", False) is True  # a Column or Row asked to; other layouts never do


def served_paths(studio: Studio) -> tuple[list[str], list[str]]:
    """(allowed, blocked) for Gradio's file route: of the workspace, exports/ is served, and of incoming/
    only the files Gradio put there itself.

    Gradio serves its own temp folder, which use_workspace_temp puts in <workspace>/incoming: an
    upload not yet imported (Gradio refuses to pass a file from a blocked folder to the import) and
    the copy of an export it hands out (the download link points there), each at
    `<sha256 of its bytes>/<name>`; IncomingGuard refuses every other path there. Every other file,
    in the workspace or elsewhere, is refused. The blocked list names what must never leave,
    whatever else changes."""
    ws = studio.ws
    blocked = [ws.db_path, ws.root / "studio.db-wal", ws.root / "studio.db-shm", ws.runs_dir, ws.uploads_dir]
    return [str(ws.exports_dir)], [str(p) for p in blocked]


# Gradio's queue looks for work every 1 ms while it has none, and for progress to send every 10 ms
# (gradio/queueing.py, Queue.__init__): about 4% of a core for an app nobody is using, taken from a CPU training run
# (and, in the test suite, from every other test while a shared app idles). Every 10 ms and 50 ms: about 1%, for at
# most 10 ms more before an event starts. Gradio has no public setting for them;
# tests/test_app.py::test_an_idle_app_leaves_the_cpu_alone checks the outcome.
QUEUE_IDLE_S = {"sleep_when_free": 0.01, "progress_update_sleep_when_free": 0.05}


def calm_queue(demo) -> None:
    queue = getattr(demo, "_queue", None)
    for name, seconds in QUEUE_IDLE_S.items():
        if hasattr(queue, name):
            setattr(queue, name, seconds)


def launch(studio: Studio, host: str = "127.0.0.1", port: int = 7860, auth: tuple[str, str] | None = None,
           block: bool = True, max_upload_mb: int = 500, inline: bool | None = None, height: int = 1000):
    """Serve the app; `block` waits until the server stops (app.py), else returns at once (a notebook, where
    `inline` shows it in the cell: None lets Gradio decide, which is yes in Jupyter), `height` pixels high."""
    use_workspace_temp(studio.ws)  # before the Blocks are built: they read it then
    demo = build_ui(studio)
    demo.queue(default_concurrency_limit=4)
    calm_queue(demo)
    allowed, blocked = served_paths(studio)
    demo.launch(
        server_name=host, server_port=port, auth=auth, prevent_thread_lock=not block, inline=inline, height=height,
        # each tab's own styles, and scripts (keys)
        css=CSS + run_panel.css() + job_section.CSS + "".join(getattr(m, "CSS", "") for _, m in tabs()),
        head=RELOAD_ON_RESTART + "".join(getattr(m, "HEAD", "") for _, m in tabs()),
        show_error=True, max_file_size=f"{max_upload_mb}mb", footer_links=[],
        allowed_paths=allowed, blocked_paths=blocked,  # downloads of exported files; nothing else on disk
        app_kwargs={"middleware": [Middleware(IncomingGuard, incoming=str(studio.ws.incoming_dir)),
                                   Middleware(ActFirst)]},  # a script before Gradio's: ui/page_start.py
        ssr_mode=False,  # files are served by this process, past IncomingGuard (no Node front, no static workers)
    )
    return demo
