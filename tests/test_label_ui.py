"""The Label tab in Chromium, driven from the keyboard as a person would."""
import re

import pytest
from browser import App, open_page, screenshot
from playwright.sync_api import expect

from rloo_studio.core.workspace import Workspace
from rloo_studio.label.demo_data import open_workspace


@pytest.fixture(scope="module")
def app(demo_app):
    return demo_app  # shared: each test labels under a name of its own


def pair_id(page) -> str:
    m = re.search(r"pair #(\d+)", page.locator("#lbl-status").inner_text())
    return m.group(1) if m else ""


def press_and_wait(page, key):
    before = pair_id(page)
    page.keyboard.press(key)
    page.wait_for_function(
        "b => { const m = document.querySelector('#lbl-status').innerText.match(/pair #(\\d+)/);"
        " return m && m[1] !== b; }", arg=before, timeout=15000)


def test_keyboard_labeling_undo_and_reload(app):
    with open_page(app.url) as page:
        expect(page.locator("#lbl-status")).to_contain_text("Enter your name", timeout=15000)
        name = page.get_by_label("Your name")
        name.focus()
        page.keyboard.type("kb-user")
        page.keyboard.press("Enter")  # leaves the box and loads this annotator's queue
        expect(page.locator("#lbl-status")).to_contain_text("pair #", timeout=15000)
        expect(page.locator("#lbl-left-text .think, #lbl-left-text .think-none").first).to_be_visible()
        keys = ["1", "2", "3", "4", "ArrowLeft", "ArrowRight", "1", "2", "1", "2", "3", "1"]
        for k in keys:
            press_and_wait(page, k)
        # A skip is not a label: 11 labels and 1 skip.
        expect(page.locator("#lbl-progress")).to_contain_text("you: 11 labeled, 1 skipped")
        page.keyboard.press("u")
        expect(page.locator("#lbl-status")).to_contain_text("Undid your label")
        expect(page.locator("#lbl-progress")).to_contain_text("you: 10 labeled, 1 skipped")
        # Raw toggle shows the text as stored, tags included.
        page.get_by_label("Raw text").check()
        expect(page.locator("#lbl-left-text pre.raw-response")).to_be_visible()
        page.get_by_label("Raw text").uncheck()
        screenshot(page, "label-tab")
        page.reload()
        expect(page.get_by_label("Your name")).to_have_value("kb-user", timeout=15000)
        expect(page.locator("#lbl-progress")).to_contain_text("you: 10 labeled, 1 skipped", timeout=15000)
        expect(page.locator("#lbl-status")).to_contain_text("pair #")
    ws = Workspace(app.ws_dir)
    rows = ws.query("SELECT l.choice, l.a_shown_left FROM labels l JOIN annotators a ON a.id = l.annotator_id "
                    "WHERE a.name='kb-user' AND l.superseded=0")
    assert len(rows) == 11 and all(r["a_shown_left"] in (0, 1) for r in rows)
    assert {r["choice"] for r in rows} <= {"a", "b", "tie", "skip"} and len({r["choice"] for r in rows}) >= 3


def test_every_bad_file_through_the_ui_is_refused_with_a_message(app, tmp_path):
    from test_import_export import BAD

    ws = Workspace(app.ws_dir)
    before = {t: ws.query(f"SELECT COUNT(*) FROM {t}")[0][0] for t in ("pairs", "labels", "prompts", "responses")}
    kept = set((app.ws_dir / "uploads").rglob("*.*"))
    with open_page(app.url) as page:
        page.get_by_text("Import pairs or prompts").click()
        for name, make, message in BAD:
            if name in ("huge.jsonl", "notes.txt"):
                # 10 MB through the browser: the core test and the upload-limit test cover it; a .txt
                # file is refused by the file picker itself (only .jsonl/.json/.csv/.parquet are offered).
                continue
            path = tmp_path / name
            make(path)
            page.locator("input[type=file]").first.set_input_files(str(path))
            page.get_by_role("button", name="Import", exact=True).click()
            expect(page.get_by_text("Import refused, nothing was changed: " + message)).to_be_visible(timeout=20000)
        screenshot(page, "label-import-refused")
    after = {t: ws.query(f"SELECT COUNT(*) FROM {t}")[0][0] for t in before}
    assert after == before
    assert set((app.ws_dir / "uploads").rglob("*.*")) == kept  # refused files are not kept


def test_active_labeling_orders_by_reward_model_uncertainty(tmp_path):
    """On an app of its own: the reward run exists before the app starts (the tab lists runs as they were
    at start until it is opened again)."""
    from rloo_studio.reward.config import RewardJobConfig
    from rloo_studio.reward.job import train_reward
    from rloo_studio.reward.uncertainty import uncertainty_queue
    from rloo_studio.runs.runner import JobRunner

    ws_dir = tmp_path / "ws"
    ws = open_workspace(ws_dir, demo=True)
    r = JobRunner(ws)
    rid = r.submit("reward", RewardJobConfig(max_steps=3), train_reward)
    assert r.wait(rid, 600) == "completed"
    most_uncertain = uncertainty_queue(ws, rid)[0][0]
    a = App(ws_dir)
    try:
        a.wait_ready()
        with open_page(a.url) as page:
            expect(page.locator("#lbl-status")).to_contain_text("Enter your name", timeout=15000)
            page.get_by_label("Your name").fill("al")
            page.get_by_label("Your name").press("Enter")
            expect(page.locator("#lbl-status")).to_contain_text("pair #", timeout=15000)
            page.get_by_label("Active labeling: most uncertain first, by reward model").click()
            page.get_by_role("option", name=re.compile(rid)).click()
            expect(page.locator("#lbl-status")).to_contain_text(f"pair #{most_uncertain}", timeout=60000)
            expect(page.locator("#lbl-status")).to_contain_text("reward model suggests")
            screenshot(page, "label-active")
    finally:
        a.stop()
