"""RLOO completions into labeling from the RLOO tab, in the real app driven in Chromium: after a short RLOO run,
a prompt's group sent from under the completions table becomes a new unlabeled pair in the store with the run's
source, and the Label tab shows it under that source."""
import re
import shutil

import pytest
from browser import App, open_page, screenshot
from playwright.sync_api import expect
from rloo_run_fixture import shared_root, trained_run

from rloo_studio.core.workspace import Workspace
from rloo_studio.label import store as labels
from rloo_studio.label.records import query


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    ws_dir, rid = trained_run(shared_root(tmp_path_factory) / "shared-rloo-run")
    mine = tmp_path_factory.mktemp("rloo-send") / "ws"
    shutil.copytree(ws_dir, mine)
    a = App(mine)
    a.wait_ready()
    a.ws, a.run_id = Workspace(mine), rid
    yield a
    a.stop()


def test_a_group_sent_from_the_rloo_tab_appears_as_a_pair_with_the_runs_source(app):
    source = f"rloo:{app.run_id}"
    before = labels.progress(app.ws)["total"]
    with open_page(app.url) as page:
        page.get_by_role("tab", name="RLOO").click()
        expect(page.locator("#rloo-status")).to_contain_text(app.run_id, timeout=60_000)
        expect(page.locator("#rloo-run input")).to_have_value(app.run_id)  # the run box names the run shown
        page.get_by_role("button", name=re.compile("^Send a group to labeling")).click()
        group = page.locator("#rloo-send-group input")
        expect(group).to_have_value(re.compile(r"step \d · .+ completions, rewards"), timeout=30_000)
        page.locator("#rloo-send-go").click()
        msg = page.locator("#rloo-send-msg")
        expect(msg).to_contain_text(f"1 pair sent to the Label queue as source {source}", timeout=30_000)
        rows = query(app.ws, source=source).rows
        assert len(rows) == 1 and rows[0]["labels"] is None and labels.progress(app.ws)["total"] == before + 1
        prompt = rows[0]["prompt"]
        assert " ".join(prompt.split())[:40] in group.input_value()  # the group picked is the prompt sent
        screenshot(page, "rloo-send-group")
        page.locator("#rloo-send-go").click()  # the same group again: nothing new
        expect(msg).to_contain_text("already in the Label queue", timeout=30_000)
        assert labels.progress(app.ws)["total"] == before + 1

        # the Label tab lists the new source and shows the pair under it
        page.get_by_role("tab", name="Label").click()
        page.get_by_label("Your name").fill("ann")
        page.get_by_label("Your name").press("Enter")
        expect(page.locator("#lbl-status")).to_contain_text("pair #", timeout=30_000)
        page.locator("#lbl-source input").click()
        page.get_by_role("option", name=source, exact=True).click()
        expect(page.locator("#lbl-status")).to_contain_text(f"pair #{rows[0]['pair_id']} · source {source}",
                                                           timeout=30_000)
        expect(page.locator("#lbl-prompt")).to_contain_text(prompt.strip().splitlines()[0][:40])
        screenshot(page, "rloo-send-label")
