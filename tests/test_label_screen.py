"""The Label tab on a new workspace, in Chromium: it starts empty and loads the demo on request; a key
press labels only the pair on the page; A/B order, the flag key, Esc and the annotators panel."""
import json
import re
import tempfile
from pathlib import Path
from urllib.parse import urljoin

import pytest
from browser import open_page, screenshot
from playwright.sync_api import expect

from rloo_studio.core.workspace import Workspace
from rloo_studio.label.prompts import load_prompt_set


@pytest.fixture(scope="module")
def app(upload_limit_app):
    # a new, empty workspace; uploads over 1 MB are blocked (the case of a key press after a blocked upload)
    return upload_limit_app


def count(ws_dir, table="labels") -> int:
    return Workspace(ws_dir).query(f"SELECT COUNT(*) FROM {table}")[0][0]


def open_accordion(page, title):
    page.get_by_role("button", name=re.compile("^" + re.escape(title))).click()


def shown_id(page) -> str:
    el = page.locator("#lbl-prompt [data-pair]")
    return el.get_attribute("data-pair") if el.count() else ""


def start_labeling(page, name):
    expect(page.locator("#lbl-status")).to_contain_text("Enter your name", timeout=30000)
    page.get_by_label("Your name").fill(name)
    page.get_by_label("Your name").press("Enter")
    expect(page.locator("#lbl-status")).to_contain_text("pair #", timeout=30000)


def test_a_new_workspace_is_empty_and_loads_the_demo_once(app):
    assert count(app.ws_dir, "pairs") == 0
    with open_page(app.url) as page:
        empty = page.locator("#lbl-empty")
        expect(empty).to_contain_text("This workspace has no pairs yet", timeout=30000)
        expect(page.locator("#lbl-status")).to_contain_text("Enter your name", timeout=30000)  # the page has loaded
        page.locator("#lbl-demo-empty").click()
        expect(page.locator("#lbl-status")).to_contain_text("Loaded the demo data: 237 labeled pairs", timeout=30000)
        expect(empty).to_be_hidden()
        expect(page.locator("#lbl-progress")).to_contain_text("0 / 317 pairs labeled by people")
        expect(page.locator("#lbl-progress")).to_contain_text("237 more with imported labels only")
        assert count(app.ws_dir, "pairs") == 317
        open_accordion(page, "Import pairs or prompts")
        page.locator("#lbl-demo").click()  # again: nothing is added
        expect(page.locator("#lbl-import-msg")).to_contain_text("already in this workspace; nothing was added")
        screenshot(page, "label-demo-loaded")
    assert count(app.ws_dir, "pairs") == 317 and count(app.ws_dir, "prompt_sets") == 3


def press_with_nothing_on_screen(page, ws_dir, key="1"):
    """A key while no pair is on the page: the label buttons are disabled, the store does not change, and the page
    says so."""
    assert shown_id(page) == ""
    expect(page.locator("#lbl-left")).to_be_disabled()
    before = count(ws_dir)
    page.keyboard.press(key)
    expect(page.locator("#lbl-busy-text")).to_contain_text("No pair is on screen, so this key saved nothing",
                                                           timeout=20000)
    assert count(ws_dir) == before


def test_a_key_labels_only_the_pair_on_screen(app, tmp_path):
    from rloo_studio.label.demo_data import seed_demo

    seed_demo(Workspace(app.ws_dir))  # whatever ran before: the demo is there (once)
    bad = tmp_path / "same.jsonl"
    bad.write_text(json.dumps({"prompt": "q", "chosen": "a", "rejected": "a"}) + "\n")
    good = tmp_path / "one.jsonl"
    good.write_text(json.dumps({"prompt": "screen test prompt", "chosen": "yes", "rejected": "no"}) + "\n")
    big = tmp_path / "big.jsonl"  # 2 MB, over the app's 1 MB upload limit
    big.write_text(json.dumps({"prompt": "big", "chosen": "x" * 2_000_000, "rejected": "y"}) + "\n")
    with open_page(app.url) as page:
        start_labeling(page, "screen")
        open_accordion(page, "Import pairs or prompts")
        # 0. An upload blocked for its size: the page says so and the pair stays on the page, current.
        before, on_page_at_block = count(app.ws_dir), shown_id(page)
        assert on_page_at_block
        page.locator("input[type=file]").first.set_input_files(str(big))
        expect(page.get_by_text("exceed the maximum allowed size")).to_be_visible(timeout=20000)
        assert shown_id(page) == on_page_at_block and count(app.ws_dir) == before
        assert not list((app.ws_dir / "incoming").rglob("big.jsonl"))  # nothing of it reached the server
        # 1. ... then Import, as a person who thinks the file is there would: no file was chosen, said under
        # Import; the pair stays on the page, current (tests/test_label_reload_ui.py labels it).
        page.get_by_role("button", name="Import", exact=True).click()
        expect(page.locator("#lbl-import-msg")).to_contain_text("No file was chosen")
        assert shown_id(page) == on_page_at_block and count(app.ws_dir) == before
        # 1b. A key right after a blocked upload labels the pair on the page, that one only.
        shown_after_block = shown_id(page)
        page.locator("input[type=file]").first.set_input_files(str(big))
        expect(page.get_by_text("exceed the maximum allowed size").last).to_be_visible(timeout=20000)
        assert shown_id(page) == shown_after_block
        page.keyboard.press("1")
        page.wait_for_function("b => { const el = document.querySelector('#lbl-prompt [data-pair]');"
                               " return el && el.getAttribute('data-pair') !== b; }", arg=shown_after_block,
                               timeout=20000)
        # 2. An import that is refused.
        page.locator("input[type=file]").first.set_input_files(str(bad))
        page.get_by_role("button", name="Import", exact=True).click()
        expect(page.get_by_text("Import refused, nothing was changed")).to_be_visible(timeout=20000)
        refused_on = shown_id(page)  # the pair stays on the page: the key labels it
        assert refused_on
        page.keyboard.press("2")
        page.wait_for_function("b => { const el = document.querySelector('#lbl-prompt [data-pair]');"
                               " return el && el.getAttribute('data-pair') !== b; }", arg=refused_on, timeout=20000)
        # 2b. An import that succeeds shows the next pair: a key labels exactly the pair it shows.
        page.locator("input[type=file]").first.set_input_files(str(good))
        page.get_by_role("button", name="Import", exact=True).click()
        expect(page.get_by_text(re.compile("Imported 1 rows? from one.jsonl"))).to_be_visible(timeout=20000)
        after_import = shown_id(page)
        assert after_import
        page.keyboard.press("2")
        page.wait_for_function("b => { const el = document.querySelector('#lbl-prompt [data-pair]');"
                               " return el && el.getAttribute('data-pair') !== b; }", arg=after_import, timeout=20000)
        # 3. Export: the pair stays on the page, current; the key labels it.
        open_accordion(page, "Export for other tools")
        at_export = shown_id(page)
        page.get_by_role("button", name="Export", exact=True).click()
        expect(page.get_by_text(re.compile(r"Saved in .*exports"))).to_be_visible(timeout=20000)
        assert shown_id(page) == at_export
        page.keyboard.press("1")
        page.wait_for_function("b => { const el = document.querySelector('#lbl-prompt [data-pair]');"
                               " return el && el.getAttribute('data-pair') !== b; }", arg=at_export, timeout=20000)
        # The export's download link points at Gradio's copy in incoming/<hash>/: served, and the file itself.
        link = page.locator("a[href*='pairs.jsonl']").first
        href = link.get_attribute("href")
        assert "/incoming/" in href, href
        got = page.request.get(urljoin(page.url, href))
        assert got.status == 200 and got.body() == (app.ws_dir / "exports" / "pairs.jsonl").read_bytes()
        # 4. A filter with nothing under it.
        page.get_by_label("Show").click()
        page.get_by_role("option", name="ties").click()
        expect(page.locator("#lbl-prompt")).to_contain_text("Nothing left under this filter")
        page.locator("#lbl-progress").click()  # leave the drop-down, as a person would before pressing keys
        press_with_nothing_on_screen(page, app.ws_dir, "4")
        page.get_by_label("Show").click()
        page.get_by_role("option", name="unlabeled").click()
        expect(page.locator("#lbl-status")).to_contain_text("pair #")
        page.locator("#lbl-progress").click()
        # 5. Another tab: the keys do nothing there; back on Label the page shows the current pair again.
        before = count(app.ws_dir)
        page.get_by_role("tab", name="Reward model").click()
        for key in ("1", "2", "f"):
            page.keyboard.press(key)
        page.wait_for_timeout(1500)
        assert count(app.ws_dir) == before
        page.get_by_role("tab", name="Label").click()
        expect(page.locator("#lbl-status")).to_contain_text("pair #")
        # A pair on the page: the key labels exactly that one.
        on_page = shown_id(page)
        assert on_page
        page.keyboard.press("1")
        page.wait_for_function("b => { const el = document.querySelector('#lbl-prompt [data-pair]');"
                               " return el && el.getAttribute('data-pair') !== b; }", arg=on_page, timeout=20000)
        screenshot(page, "label-screen-guard")
    rows = Workspace(app.ws_dir).query("SELECT l.pair_id FROM labels l JOIN annotators a ON a.id = l.annotator_id "
                                       "WHERE a.name='screen' ORDER BY l.id")
    # a label only for each pair on the page
    assert [r[0] for r in rows] == [int(shown_after_block), int(refused_on), int(after_import), int(at_export),
                                    int(on_page)]


def test_order_kept_flag_key_esc_and_live_annotators_panel(app, tmp_path):
    from rloo_studio.label.demo_data import seed_demo

    ws = Workspace(app.ws_dir)
    seed_demo(ws)
    f = tmp_path / "order.jsonl"
    f.write_text("".join(json.dumps({"prompt": f"Order prompt {i}?", "responses": [f"first {i}", f"second {i}"]}) + "\n"
                         for i in range(3)))
    with open_page(app.url) as page:
        start_labeling(page, "orderly")
        open_accordion(page, "Import pairs or prompts")
        page.locator("input[type=file]").first.set_input_files(str(f))
        page.get_by_role("button", name="Import", exact=True).click()
        expect(page.locator("#lbl-import-msg")).to_contain_text("Imported 3 rows", timeout=20000)
        # The upload went to the workspace's private folder and is gone once imported; the workspace keeps its copy.
        assert not [p for p in (app.ws_dir / "incoming").rglob("order.jsonl")]
        assert not list((Path(tempfile.gettempdir()) / "gradio").rglob("order.jsonl"))
        assert [p.name for p in (app.ws_dir / "uploads").rglob("order.jsonl")] == ["order.jsonl"]
        page.get_by_label("Source").click()
        page.get_by_role("option", name="order.jsonl").click()
        expect(page.locator("#lbl-status")).to_contain_text("source order.jsonl")
        page.locator("#lbl-progress").click()
        first, left = shown_id(page), page.locator("#lbl-left-text").inner_text()
        page.keyboard.press("4")  # skip it ...
        page.wait_for_function("b => document.querySelector('#lbl-prompt [data-pair]')"
                               "?.getAttribute('data-pair') !== b", arg=first, timeout=20000)
        page.get_by_label("Show").click()
        page.get_by_role("option", name="skipped").click()  # ... and come back to it: the same A/B order
        expect(page.locator(f"#lbl-prompt [data-pair='{first}']")).to_be_visible(timeout=20000)
        assert page.locator("#lbl-left-text").inner_text() == left
        # Esc leaves the comment box, so that f flags the pair, with the comment as the reason.
        comment = page.locator("#lbl-comment textarea")
        comment.click()
        comment.type("both answers look wrong")
        comment.press("Escape")
        page.keyboard.press("f")
        expect(page.locator("#lbl-status")).to_contain_text(f"Flagged #{first} for re-labeling", timeout=20000)
        assert ws.query("SELECT flag FROM pairs WHERE id=?", (int(first),))[0][0] == "both answers look wrong"
        # The annotators panel follows labels as they arrive, without a reload or a click.
        page.get_by_label("Show").click()
        page.get_by_role("option", name="unlabeled").click()
        expect(page.locator("#lbl-status")).to_contain_text("pair #", timeout=20000)
        open_accordion(page, "Annotators and agreement")
        panel = page.locator("#lbl-annotators")
        row = panel.locator("tr", has_text="orderly")
        expect(row.locator("td")).to_have_text(["orderly", "0", "0", "1"], timeout=20000)  # today, labels, skips
        page.locator("#lbl-progress").click()
        page.keyboard.press("1")
        expect(row.locator("td")).to_have_text(["orderly", "1", "1", "1"], timeout=20000)
        screenshot(page, "label-flag-annotators")


def test_importing_a_file_again_adds_its_rows_only_when_asked(app, tmp_path):
    f = tmp_path / "twice.jsonl"
    f.write_text("".join(json.dumps({"prompt": f"Twice {i}?", "chosen": f"yes {i}", "rejected": f"no {i}"}) + "\n"
                         for i in range(4)))
    swapped = tmp_path / "swapped.jsonl"
    swapped.write_text("".join(json.dumps({"prompt": f"Twice {i}?", "chosen": f"no {i}", "rejected": f"yes {i}"}) + "\n"
                               for i in range(2)))
    ps = tmp_path / "twice-prompts.jsonl"
    ps.write_text(json.dumps({"prompt": "Twice p1?", "answer": "1"}) + "\n"
                  + json.dumps({"prompt": "Twice p2?", "answer": "2"}) + "\n")
    with open_page(app.url) as page:
        expect(page.locator("#lbl-progress")).to_contain_text("pairs labeled by people", timeout=30000)
        open_accordion(page, "Import pairs or prompts")
        msg = page.locator("#lbl-import-msg")
        page.locator("input[type=file]").first.set_input_files(str(f))
        page.get_by_role("button", name="Import", exact=True).click()
        expect(msg).to_contain_text("Imported 4 rows from twice.jsonl", timeout=20000)
        n = count(app.ws_dir, "pairs")
        page.locator("input[type=file]").first.set_input_files(str(f))
        page.get_by_role("button", name="Import", exact=True).click()
        expect(msg).to_contain_text("Imported 0 of 4 rows", timeout=20000)
        expect(msg).to_contain_text("(keep duplicates to import them as new pairs)")  # the box's own words:
        expect(page.locator("#lbl-keep-dups")).to_contain_text("Keep duplicates")
        assert count(app.ws_dir, "pairs") == n
        page.get_by_label("Keep duplicates: import rows already in the workspace again").check()
        page.locator("input[type=file]").first.set_input_files(str(f))
        page.get_by_role("button", name="Import", exact=True).click()
        expect(msg).to_contain_text("Imported 4 rows from twice.jsonl", timeout=20000)
        assert count(app.ws_dir, "pairs") == n + 4
        # A prompt set: imported again with the box ticked, its prompts take the file's columns ...
        page.locator("input[type=file]").first.set_input_files(str(ps))
        page.get_by_role("button", name="Import", exact=True).click()
        expect(msg).to_contain_text("Imported 2 prompts into prompt set 'twice-prompts.jsonl'.", timeout=20000)
        ps.write_text(json.dumps({"prompt": "Twice p1?", "answer": "1"}) + "\n"
                      + json.dumps({"prompt": "Twice p2?", "answer": "22"}) + "\n")
        page.locator("input[type=file]").first.set_input_files(str(ps))
        page.get_by_role("button", name="Import", exact=True).click()
        expect(msg).to_contain_text("Imported 2 prompts into prompt set 'twice-prompts.jsonl' (2 already there: "
                                    "a prompt set holds each prompt once, so they took the file's columns)",
                                    timeout=20000)
        assert load_prompt_set(Workspace(app.ws_dir), "twice-prompts.jsonl") == [
            {"prompt": "Twice p1?", "answer": "1"}, {"prompt": "Twice p2?", "answer": "22"}]
        # ... and without it they are skipped, counted, and the file's other columns pointed out.
        page.get_by_label("Keep duplicates: import rows already in the workspace again").uncheck()
        ps.write_text(json.dumps({"prompt": "Twice p1?", "answer": "11"}) + "\n")
        page.locator("input[type=file]").first.set_input_files(str(ps))
        page.get_by_role("button", name="Import", exact=True).click()
        expect(msg).to_contain_text("Skipped 1 prompts already in that prompt set (1 with other column values",
                                    timeout=20000)
        assert load_prompt_set(Workspace(app.ws_dir), "twice-prompts.jsonl")[0] == {"prompt": "Twice p1?",
                                                                                    "answer": "1"}
        # Chosen and rejected the other way round: not dropped, the opposite label goes to the pair already there.
        page.locator("input[type=file]").first.set_input_files(str(swapped))
        page.get_by_role("button", name="Import", exact=True).click()
        expect(msg).to_contain_text("2 rows matched pairs already here: their labels were added (2 the opposite "
                                    "of the label imported before, so those pairs show a split vote)", timeout=20000)
        assert count(app.ws_dir, "pairs") == n + 4
        for i in range(2):  # the first pair of each prompt (the second came from the import on purpose)
            assert imported_choices(app.ws_dir, f"Twice {i}?") == [["a", "b"], ["a"]]
        assert imported_choices(app.ws_dir, "Twice 2?") == [["a"], ["a"]]
    for name in ("twice.jsonl", "order.jsonl", "same.jsonl", "swapped.jsonl", "twice-prompts.jsonl", "big.jsonl"):
        assert not list((app.ws_dir / "incoming").rglob(name)), name  # no upload left behind, imported or refused


def imported_choices(ws_dir, prompt) -> list[list[str]]:
    """The imported labels of each pair of a prompt, oldest pair first."""
    rows = Workspace(ws_dir).query(
        "SELECT p.id, l.choice FROM pairs p JOIN prompts pr ON pr.id = p.prompt_id LEFT JOIN labels l ON "
        "l.pair_id = p.id AND l.superseded = 0 AND l.annotator_id = (SELECT id FROM annotators WHERE name = 'import') "
        "WHERE pr.text = ? ORDER BY p.id, l.id", (prompt,))
    out: dict[int, list[str]] = {}
    for pid, choice in rows:
        out.setdefault(pid, []).extend([choice] if choice else [])
    return list(out.values())
