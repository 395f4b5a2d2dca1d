import time
import urllib.error
import urllib.request

import psutil
import pytest
from playwright.sync_api import expect

from browser import App, open_page, screenshot
from rloo_studio.runs.runner import JobRunner
from rloo_studio.core.workspace import Workspace


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
    1 ms, took about 4%: ui/app.py calm_queue); a CPU training run and the other tests get the rest."""
    proc = psutil.Process(app.proc.pid)
    time.sleep(2)  # past the end of any page the module's earlier tests closed
    before, t0 = proc.cpu_times(), time.monotonic()
    time.sleep(12)
    after, seconds = proc.cpu_times(), time.monotonic() - t0
    share = (after.user + after.system - before.user - before.system) / seconds
    assert share < 0.025, f"the idle app used {share:.1%} of a core"


def test_shell_shows_device_backend_workspace_and_runs(app):
    with open_page(app.url, height=900) as page:
        header = page.locator(".studio-header")
        expect(header).to_contain_text("CPU")
        expect(header).to_contain_text("Unsloth")
        expect(header).to_contain_text("workspace")
        for tab in ("Label", "Reward model", "Inspect", "RLOO", "Runs"):
            expect(page.get_by_role("tab", name=tab)).to_be_visible()
        page.get_by_role("tab", name="Runs").click()
        # the run was made after the app started: the table shows it from its next refresh (a 2 s timer)
        expect(page.get_by_text(app.run_id).filter(visible=True).first).to_be_visible(timeout=30_000)
        expect(page.get_by_text("a finished test run").filter(visible=True).first).to_be_visible()
        screenshot(page, "shell-runs")


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
