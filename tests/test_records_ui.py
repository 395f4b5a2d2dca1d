"""Records tab in the real app, driven in Chromium: an RLOO run's group sent to labeling appears as a new pair with
its source. (Records as the Label tab's annotator sees them, and relabeling from a row: test_records_viewer_ui.py.)"""

import pytest
from browser import open_page, screenshot
from playwright.sync_api import expect

from rloo_studio.core.workspace import Workspace
from rloo_studio.label import store as labels
from rloo_studio.label.records import query


@pytest.fixture(scope="module")
def app(trained_app):
    trained_app.ws = Workspace(trained_app.ws_dir)
    return trained_app  # shared with the export and playground tests


def _rows(page):
    return page.locator("#records-table").get_by_role("row").filter(visible=True)


def _row(page, pid):
    rows = _rows(page)
    for i in range(rows.count()):
        cells = rows.nth(i).get_by_role("gridcell")
        if cells.count() and cells.first.inner_text().strip() == str(pid):
            return rows.nth(i)
    raise AssertionError(f"pair {pid} is not in the table: "
                         f"{[rows.nth(i).inner_text()[:40] for i in range(rows.count())]}")


def test_an_rloo_group_sent_to_labeling_appears_as_new_pairs_with_their_source(app):
    source = f"rloo:{app.run_id}"
    before = labels.progress(app.ws)["total"]
    with open_page(app.url) as page:
        page.get_by_role("tab", name="Records").click()
        page.get_by_text("Send RLOO completions to labeling").click()
        expect(page.locator("#records-rloo-run input")).to_have_value(app.run_id, timeout=30_000)
        expect(page.locator("#records-rloo-group input")).to_have_value(
            __import__("re").compile(r"step \d · .+ completions, rewards"), timeout=30_000)
        page.locator("#records-rloo-send").click()
        expect(page.locator("#records-rloo-msg")).to_contain_text(f"1 pair sent to the Label queue as source {source}",
                                                                  timeout=30_000)
        expect(page.locator("#records-count")).to_contain_text("1 pair match", timeout=30_000)
        expect(_rows(page).nth(1)).to_contain_text(source)
        rows = query(app.ws, source=source).rows
        assert len(rows) == 1 and labels.progress(app.ws)["total"] == before + 1
        assert rows[0]["labels"] is None  # for people to label
        screenshot(page, "records-rloo-sent")
        page.locator("#records-rloo-send").click()  # the same group again: nothing new
        expect(page.locator("#records-rloo-msg")).to_contain_text("already in the Label queue", timeout=30_000)
        assert labels.progress(app.ws)["total"] == before + 1
