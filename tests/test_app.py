import threading
import time
import urllib.error
import urllib.request

import psutil
import pytest
from browser import App, open_page, screenshot
from playwright.sync_api import expect

from rloo_studio.core.workspace import Workspace
from rloo_studio.runs.runner import JobRunner


@pytest.fixture(scope="module")
def app(demo_app):
    """The shared demo app, with a finished run of this module's own in its workspace."""
    r = JobRunner(Workspace(demo_app.ws_dir))
    rid = r.submit("reward", {"steps": 1}, lambda cfg, ctx: "a finished test run")
    assert r.wait(rid, 30) == "completed"
    demo_app.run_id = rid
    return demo_app


def test_serves_on_loopback_only(app):
    with urllib.request.urlopen(app.url, timeout=10) as r:
        assert r.status == 200
    addrs = {c.laddr.ip for c in psutil.Process(app.proc.pid).net_connections("inet") if c.status == "LISTEN"}
    assert addrs == {"127.0.0.1"}


def test_an_idle_app_leaves_the_cpu_alone(app):
    """With no page open and no job running the app uses about 1% of a core (Gradio's queue, looking for work every
    1 ms, took about 4%: ui/app.py calm_queue); a CPU training run and the other tests get the rest. The bar sits
    between the two: on a host running this machine's work 1.5-2x slower than usual the calm app read 2.7%."""
    proc = psutil.Process(app.proc.pid)
    time.sleep(2)  # past the end of any page the module's earlier tests closed
    before, t0 = proc.cpu_times(), time.monotonic()
    time.sleep(12)
    after, seconds = proc.cpu_times(), time.monotonic() - t0
    share = (after.user + after.system - before.user - before.system) / seconds
    assert share < 0.035, f"the idle app used {share:.1%} of a core"


def test_shell_shows_device_backend_workspace_and_runs(app):
    with open_page(app.url, height=900) as page:
        header = page.locator(".studio-header")
        expect(header).to_contain_text("CPU", timeout=60_000)  # a loaded host drew "Loading..." past 5 s
        expect(header).to_contain_text("Unsloth")
        expect(header).to_contain_text("workspace")
        for tab in ("Label", "Reward model", "Inspect", "RLOO", "Runs"):
            expect(page.get_by_role("tab", name=tab)).to_be_visible()
        page.get_by_role("tab", name="Runs").click()
        # the run was made after the app started: the table shows it from the tab's refresh as it opens
        expect(page.get_by_text(app.run_id).filter(visible=True).first).to_be_visible(timeout=30_000)
        expect(page.get_by_text("a finished test run").filter(visible=True).first).to_be_visible()
        screenshot(page, "shell-runs")


def test_a_page_left_open_asks_little_until_a_run_starts_elsewhere(app):
    """A page open on the Reward tab with nothing running asks the app for news every 5 s, not every second (each
    Gradio event costs the page about 0.15 CPU-s: ui/run_panel.IDLE_S). A run started by another process (here
    this one, as the CLI would) still shows within seconds and is followed every second until it ends. (Under
    load a tick still in flight when the next is due is skipped: 4 calls in 8 s, not 8.)"""
    ws = Workspace(app.ws_dir)
    assert not [r for r in ws.runs() if r["status"] in ("queued", "running")]
    with open_page(app.url) as page:
        calls = []
        page.on("request", lambda r: calls.append(time.monotonic()) if "queue/join" in r.url else None)
        page.get_by_role("tab", name="Reward model").click()
        status = page.locator("#reward-status")
        # the tab's first tick: on a loaded host (its pre-flight still processing at 30 s) it took over 30 s
        expect(status).to_contain_text(ws.runs("reward")[0]["id"], timeout=120_000)
        # The page's loading calls end (on a slow host, seconds after the status shows) before the count starts:
        # 3 s with no call, which a page ticking every second never has.
        deadline = time.monotonic() + 60
        while time.monotonic() - max(calls, default=0) < 3:
            assert time.monotonic() < deadline, "the page never went 3 s without a call"
            page.wait_for_timeout(500)
        calls.clear()
        page.wait_for_timeout(12_000)
        assert len(calls) <= 5, f"an idle page made {len(calls)} calls in 12 s"

        release = threading.Event()
        runner = JobRunner(ws)
        rid = runner.submit("reward", {"steps": 1}, lambda cfg, ctx: "done" if release.wait(120) else "timed out")
        try:
            expect(status).to_contain_text(rid, timeout=30_000)
            expect(status).to_contain_text("running")
            calls.clear()
            page.wait_for_timeout(8000)
            assert len(calls) >= 4, f"a page following a run made {len(calls)} calls in 8 s"
        finally:
            release.set()
        assert runner.wait(rid, 60) == "completed"
        expect(status).to_contain_text("completed", timeout=30_000)
        expect(status).to_contain_text(rid)


def test_an_open_page_draws_no_frames_while_nothing_changes(app):
    """Gradio's status tracker counts a pending event's time on animation frames, and the one a page shows while it
    loads is taken away still pending, its loop going on: 60 frames a second for as long as the page stays open
    (a tenth of a core in Chromium). The page's first script (ui/page_start.py) counts on a timer instead."""
    count = """(() => { window.framesAsked = 0; const ask = window.requestAnimationFrame.bind(window);
                        window.requestAnimationFrame = cb => { window.framesAsked++; return ask(cb); }; })()"""
    with open_page(app.url) as page:
        page.context.add_init_script(count)  # before the page's own scripts: on the next load
        page.reload()
        expect(page.locator("#lbl-status")).to_contain_text("Enter your name", timeout=30_000)
        asked = []
        for _ in range(8):  # the page's own short animations after loading end within seconds
            page.evaluate("window.framesAsked = 0")
            page.wait_for_timeout(3000)
            asked.append(page.evaluate("window.framesAsked"))
            if asked[-1] < 30:
                break
        assert asked[-1] < 30, f"an open page kept asking for frames: {asked} in each 3 s"


def test_the_page_tracks_progress_only_where_it_shows_it(app):
    """The page keeps a loading status for each component an event names for its progress and hands every one back
    to its component on every status message of any event. An event whose progress is hidden (a timer's tick, a
    tab's select) names none, and no event names a State, a Timer or a layout block that draws no progress, so a
    page that follows a run does not redo that for every output it ever updated; the rest still show it."""
    import json

    with urllib.request.urlopen(app.url + "config", timeout=10) as r:
        config = json.load(r)
    kind = {c["id"]: c["type"] for c in config["components"]}
    draws = {c["id"] for c in config["components"] if c["type"] not in ("state", "timer", "column", "row", "group",
             "accordion", "tabitem", "tabs") or c["props"].get("show_progress") is True}
    deps = [d for d in config["dependencies"] if d["backend_fn"]]
    hidden = [d for d in deps if d["show_progress"] == "hidden"]
    assert len(hidden) > 50 and any(t[1] == "tick" for d in hidden for t in d["targets"])
    assert [d["id"] for d in hidden if d["show_progress_on"] != []] == []
    shown = [d for d in deps if d["show_progress"] != "hidden"]
    targets = {d["id"]: d["outputs"] if d["show_progress_on"] is None else d["show_progress_on"] for d in shown}
    assert {kind[i] for t in targets.values() for i in t if i not in draws} == set()
    assert all(set(targets[d["id"]]) == set(d["outputs"]) & draws for d in shown)  # every output that draws it
    assert sum(len(t) for t in targets.values()) > 300


def test_auth_guards_page_and_api(tmp_path):
    a = App(tmp_path / "ws", "--auth", "ann:s3cret")
    try:
        a.wait_ready()
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(a.url + "config", timeout=10)
        assert e.value.code == 401
        req = urllib.request.Request(a.url + "gradio_api/info")
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=10)
        assert e.value.code == 401
    finally:
        a.stop()
