"""The Label tab's import control with the shapes people download: UltraFeedback-binarized and Anthropic HH.

Uploaded through the page as a person would; the imported pair is then read off the page: its prompt
and its two replies, with no 'Human:' / 'Assistant:' transcript text left in them.
"""
import json

import pytest
from browser import open_page, running_app, screenshot
from playwright.sync_api import expect
from test_import_export import HH_MULTI, ultrafeedback, write_jsonl

from rloo_studio.core.workspace import Workspace

MARKERS = ("Human:", "Assistant:")


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with running_app(tmp_path_factory.mktemp("shapes") / "ws", seed=False) as a:  # only what is uploaded here
        yield a


def upload(page, path):
    page.locator("input[type=file]").first.set_input_files(str(path))
    # Import once the file is up and listed (an import clears the list). Under a heavy load (three workers on two
    # cores) an Import clicked while the upload was on its way once got no answer at all: likely the listing, drawn
    # between Playwright's check of the button and its click, moved the button from under the click.
    expect(page.get_by_role("cell", name=path.name)).to_be_visible(timeout=60000)
    page.get_by_role("button", name="Import", exact=True).click()


def shown(page) -> tuple[str, set[str]]:
    """The prompt and the two responses' answers as the page shows them; no transcript markers anywhere in them."""
    boxes = [page.locator(f"#{i}") for i in ("lbl-prompt", "lbl-left-text", "lbl-right-text")]
    for box in boxes:
        t = box.inner_text()
        assert not any(m in t for m in MARKERS), t
    answers = {box.locator(".answer").inner_text().strip() for box in boxes[1:]}
    return boxes[0].inner_text().strip(), answers


def label_and_wait(page, prompt_now: str):
    page.locator("#lbl-left").focus()
    page.keyboard.press("1")
    expect(page.locator("#lbl-prompt")).not_to_contain_text(prompt_now, timeout=20000)


def test_ultrafeedback_and_hh_uploads_show_plain_prompts_and_replies(app, tmp_path):
    uf = write_jsonl(tmp_path / "ultrafeedback.jsonl", [ultrafeedback("How many legs has a spider?", "Eight.", "Six.")])
    hh = write_jsonl(tmp_path / "hh-rlhf.jsonl", [
        {"chosen": "\n\nHuman: What is the capital of France?\n\nAssistant: Paris.",
         "rejected": "\n\nHuman: What is the capital of France?\n\nAssistant: London, I think."},
        {"chosen": HH_MULTI + "About 4 to 12 hours, until it has doubled.", "rejected": HH_MULTI + "Ten minutes."}])
    with open_page(app.url) as page:
        expect(page.locator("#lbl-status")).to_contain_text("Enter your name", timeout=20000)
        page.get_by_label("Your name").fill("reader")
        page.get_by_label("Your name").press("Enter")
        # the empty workspace's notice names the section too; the section's own header comes last on the page
        page.get_by_text("Import pairs or prompts", exact=True).last.click()

        upload(page, uf)
        expect(page.get_by_text("Imported 1 rows from ultrafeedback.jsonl")).to_be_visible(timeout=30000)
        expect(page.locator("#lbl-prompt")).to_contain_text("How many legs has a spider?", timeout=20000)
        assert shown(page) == ("How many legs has a spider?", {"Eight.", "Six."})
        label_and_wait(page, "spider")

        upload(page, hh)
        expect(page.get_by_text("Imported 2 rows from hh-rlhf.jsonl")).to_be_visible(timeout=30000)
        expect(page.locator("#lbl-prompt")).to_contain_text("capital of France", timeout=20000)
        assert shown(page) == ("What is the capital of France?", {"Paris.", "London, I think."})
        label_and_wait(page, "capital of France")
        # the multi-turn conversation: its last user turn is the prompt shown, the final replies the responses
        expect(page.locator("#lbl-prompt")).to_contain_text("How long should it rise?", timeout=20000)
        prompt, answers = shown(page)  # shown as turns, each named by its role, the last user turn last
        assert answers == {"About 4 to 12 hours, until it has doubled.", "Ten minutes."}
        assert prompt.splitlines() == ["user: I want to bake bread.", "assistant: What kind of bread?",
                                       "user: Sourdough. How long should it rise?"], prompt
        screenshot(page, "import-shapes-hh")

        upload(page, hh)  # the same file again adds nothing and says so
        expect(page.get_by_text("skipped 2 rows already in the workspace")).to_be_visible(timeout=30000)

    ws = Workspace(app.ws_dir)
    assert ws.query("SELECT COUNT(*) FROM pairs")[0][0] == 3
    turns = [json.loads(r[0]).get("messages") for r in ws.query("SELECT extra FROM prompts ORDER BY id")]
    assert [len(t) if t else 0 for t in turns] == [0, 0, 3]  # only the multi-turn prompt keeps its turns
