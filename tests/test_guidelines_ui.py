"""The shared demo app (tests/conftest.py), driven in Chromium: labeling guidelines typed on the Label tab are
shown above the pair and still shown after a reload; the annotator's progress (today and in all, and per
annotator) moves after a label. The Playground without an RLOO run says to train one first, and unloads its model."""
import re

import pytest
from playwright.sync_api import expect

from browser import fill, open_page, screenshot
from rloo_studio.core.paths import DEMO_MODEL
from rloo_studio.core.workspace import Workspace
from rloo_studio.label import guidelines as G
from rloo_studio.label import store as labels

NAME = "guidelines-reader"  # an annotator of this test's own: the workspace is shared (tests/conftest.py)
TEXT = "# Prefer the right sum\n\n- check every digit line\n- a tie only when both answers are right"


# The page's events sent in its first 3 s are held 2 s (in the browser): the page-load events land after the
# guidelines were typed, as on a busy machine. A value the load event sent for the edit box replaced the typed
# text, and Save then said "Guidelines removed" (seen under two test workers at 95% load).
LOAD_LANDS_LATE = """(() => {
  const real = window.fetch;
  window.heldEvents = 0;
  window.fetch = (url, opts) => String(url).includes('/queue/join') && performance.now() < 3000
    ? (window.heldEvents++, new Promise(r => setTimeout(r, 2000)).then(() => real(url, opts))) : real(url, opts);
})();"""


@pytest.fixture(scope="module")
def app(demo_app):
    return demo_app  # no test on it sets guidelines or starts an RLOO run


def test_guidelines_stay_after_a_reload_and_progress_moves_after_a_label(app):
    ws = Workspace(app.ws_dir)
    with open_page("about:blank") as page:
        page.add_init_script(LOAD_LANDS_LATE)
        page.goto(app.url)
        expect(page.locator("#lbl-guidelines")).to_contain_text("No labeling guidelines", timeout=30_000)
        page.get_by_role("button", name=re.compile("^Edit the guidelines")).click()
        page.locator("#lbl-guidelines-edit textarea").fill(TEXT)
        page.wait_for_timeout(3000)  # the held page-load events have landed
        assert page.evaluate("window.heldEvents") > 0
        expect(page.locator("#lbl-guidelines-edit textarea")).to_have_value(TEXT)
        page.locator("#lbl-guidelines-save").click()
        expect(page.locator("#lbl-guidelines-msg")).to_contain_text("Guidelines saved", timeout=30_000)
        expect(page.locator("#lbl-guidelines h1")).to_have_text("Prefer the right sum")
        assert G.get(ws) == TEXT
        page.reload()
        expect(page.locator("#lbl-guidelines h1")).to_have_text("Prefer the right sum", timeout=30_000)
        expect(page.locator("#lbl-guidelines li")).to_have_text(["check every digit line",
                                                                 "a tie only when both answers are right"])
        page.get_by_role("button", name=re.compile("^Edit the guidelines")).click()  # the stored text, to edit
        expect(page.locator("#lbl-guidelines-edit textarea")).to_have_value(TEXT, timeout=30_000)

        page.get_by_label("Your name").fill(NAME)
        page.get_by_label("Your name").press("Enter")
        progress = page.locator("#lbl-progress")
        expect(progress).to_contain_text("you: 0 labeled, 0 skipped · 0 today", timeout=30_000)
        expect(page.locator("#lbl-prompt [data-pair]")).to_have_count(1)
        page.keyboard.press("1")  # the keys label as before
        expect(progress).to_contain_text("you: 1 labeled, 0 skipped · 1 today", timeout=30_000)
        assert labels.progress(ws, NAME)["mine_today"] == 1
        page.get_by_role("button", name=re.compile("^Annotators and agreement")).click()
        row = page.locator("#lbl-annotators table").first.locator("tbody tr", has_text=NAME)  # this annotator's
        expect(row.locator("td")).to_have_text([NAME, "1", "1", "0"], timeout=30_000)  # today, in all, skips
        expect(page.locator("#lbl-guidelines h1")).to_have_text("Prefer the right sum")  # still above the pair
        screenshot(page, "label-guidelines")


def test_playground_without_an_rloo_run_says_to_train_one_and_unloads_its_model(app):
    with open_page(app.url) as page:
        page.get_by_role("tab", name="Playground").click()
        expect(page.locator("#playground-no-run")).to_contain_text("Train an RLOO run first (RLOO tab)",
                                                                   timeout=30_000)
        expect(page.locator("#playground-run")).to_be_hidden()
        fill(page, "playground-base-model", str(DEMO_MODEL))
        page.locator("#playground-prompt textarea").fill("What is 123+456?")
        page.locator("#playground-go").click()
        expect(page.locator("#playground-base")).to_contain_text(re.compile(r"tokens, (done|cut at max new tokens)"),
                                                                 timeout=120_000)
        screenshot(page, "playground-no-run")
        page.locator("#playground-unload").click()
        expect(page.locator("#playground-msg")).to_contain_text("Unloaded", timeout=30_000)
        expect(page.locator("#playground-msg")).to_contain_text("its memory is free")
        page.locator("#playground-unload").click()
        expect(page.locator("#playground-msg")).to_contain_text("No model was loaded: nothing to free",
                                                                timeout=30_000)
