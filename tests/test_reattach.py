"""Closing the browser never stops a job; reopening the page re-attaches to it."""
import re
import time

from browser import fill, open_page
from playwright.sync_api import expect

from rloo_studio.core.workspace import Workspace
from rloo_studio.runs.runner import read_metrics

LONG = 600_000


def test_close_browser_mid_run_then_reopen(demo_app):
    app, ws_dir = demo_app, demo_app.ws_dir  # shared: this test's run is the one it starts
    before = {r["id"] for r in Workspace(ws_dir).runs("reward")}
    with open_page(app.url) as page:
        page.get_by_role("tab", name="Reward model").click()
        expect(page.locator("#reward-preflight")).to_contain_text("labeled pairs", timeout=LONG)
        fill(page, "reward-max-steps", 400)
        page.locator("#reward-launch").click()
        expect(page.locator("#reward-status")).to_contain_text("running", timeout=LONG)
    # here the page and its browser context are gone: nothing of the browser is attached to the job
    ws = Workspace(ws_dir)
    (run,) = [r for r in ws.runs("reward") if r["id"] not in before]
    d = ws.run_dir(run["id"])
    n = len(read_metrics(d))
    end = time.time() + LONG / 1000
    while len(read_metrics(d)) <= n + 2 and time.time() < end:
        time.sleep(0.5)
    assert len(read_metrics(d)) > n + 2  # still training with no browser attached
    with open_page(app.url) as page:
        page.get_by_role("tab", name="Reward model").click()
        status = page.locator("#reward-status")
        expect(status).to_contain_text(run["id"], timeout=LONG)
        expect(status).to_contain_text("running", timeout=LONG)
        expect(status).to_contain_text(re.compile(r"step \d+/400"), timeout=LONG)
        # the step read where it is matched (a second read of the line once found it without its step, at load 8)
        first = page.wait_for_function(
            "() => +((document.querySelector('#reward-status')?.innerText || '').match(/step (\\d+)\\/400/) || [])[1]",
            timeout=LONG).json_value()
        page.wait_for_function(
            "s => { const m = (document.querySelector('#reward-status')?.innerText || '').match(/step (\\d+)\\//);"
            " return m && +m[1] > s; }", arg=first, timeout=LONG)
        page.locator("#reward-stop").click()
        expect(status).to_contain_text("stopped", timeout=LONG)
