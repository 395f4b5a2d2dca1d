"""The Label tab's step mode in Chromium: a person labels the <think> steps of a response from the keyboard, takes
a label back, and finds the same step after a reload; a press saves only the step the page shows."""
import pytest
from browser import open_page, screenshot
from playwright.sync_api import expect

from rloo_studio.core.workspace import Workspace
from rloo_studio.label import steps as S
from rloo_studio.ui import label_steps
from rloo_studio.ui.label_steps import StepInputs


@pytest.fixture(scope="module")
def app(demo_app):
    return demo_app  # shared: each test labels under a name of its own


def on_page(page) -> tuple[int, int] | None:
    """(response, step) the page shows to be labeled, or None."""
    el = page.locator("#stp-view [data-response]")
    return (int(el.get_attribute("data-response")), int(el.get_attribute("data-step"))) if el.count() else None


def wait_for(page, response, step, timeout=30000):
    expect(page.locator(f"#stp-view [data-response='{response}'][data-step='{step}']")).to_be_visible(timeout=timeout)


def mine(ws_dir, name) -> dict:
    return {(r[0], r[1]): r[2] for r in Workspace(ws_dir).query(
        "SELECT sl.response_id, sl.step, sl.verdict FROM step_labels sl JOIN annotators a ON a.id = sl.annotator_id "
        "WHERE a.name=? AND sl.superseded=0", (name,))}


def test_keys_label_steps_to_the_first_wrong_one_undo_and_reload(app):
    name = "step-keys"
    with open_page(app.url) as page:
        expect(page.locator("#lbl-status")).to_contain_text("Enter your name", timeout=30000)
        page.get_by_label("Your name").fill(name)
        page.get_by_label("Your name").press("Enter")
        page.get_by_label("Steps").check()
        expect(page.locator("#stp-status")).to_contain_text("response #", timeout=30000)
        expect(page.locator("#lbl-left-text")).to_be_hidden()  # the pair view is away in step mode
        rid, step = on_page(page)
        first = S.response_view(Workspace(app.ws_dir), name, rid)
        assert step == 0 and first["total_steps"] == 3  # a demo response: one step per digit
        expect(page.locator("#stp-view li.stp-current")).to_have_text(first["steps"][0] + "▶ label this step")
        expect(page.locator("#stp-view .stp-answer")).to_contain_text(first["answer_text"])
        page.locator("#stp-progress").click()  # out of the name box: keys label
        page.keyboard.press("1")
        wait_for(page, rid, 1)
        expect(page.locator("#stp-view li.stp-good")).to_have_count(1)
        expect(page.locator("#stp-view li.stp-good")).to_contain_text("good")
        page.keyboard.press("1")
        wait_for(page, rid, 2)
        page.keyboard.press("3")  # the last step, and bad: the response is finished, the next one shows
        page.wait_for_function("r => { const el = document.querySelector('#stp-view [data-response]');"
                               " return el && el.getAttribute('data-response') !== r; }", arg=str(rid), timeout=30000)
        assert on_page(page)[1] == 0
        expect(page.locator("#stp-status")).to_contain_text(f"Response #{rid} finished (first wrong step marked)")
        expect(page.locator("#stp-progress")).to_contain_text("your responses finished: 1 today, 1 in all")
        assert mine(app.ws_dir, name) == {(rid, 0): 1, (rid, 1): 1, (rid, 2): -1}
        page.keyboard.press("u")  # the bad verdict taken back: that step again
        wait_for(page, rid, 2)
        expect(page.locator("#stp-status")).to_contain_text(f"Undid your label of step 3 of response #{rid}")
        assert mine(app.ws_dir, name) == {(rid, 0): 1, (rid, 1): 1}
        expect(page.locator("#stp-view li.stp-current")).to_contain_text(first["steps"][2])
        screenshot(page, "label-steps")
        page.reload()  # the place comes from the store: the same response, at the same step, in step mode
        expect(page.get_by_label("Your name")).to_have_value(name, timeout=30000)
        wait_for(page, rid, 2)
        expect(page.get_by_label("Steps")).to_be_checked()
        expect(page.locator("#stp-progress")).to_contain_text("Step 3 of 3 of this response")
        page.get_by_label("Pairs").check()  # back to pairs: the pair keys work again, no step is labeled
        expect(page.locator("#lbl-status")).to_contain_text("pair #", timeout=30000)
        expect(page.locator("#stp-view")).to_be_hidden()
        pair = page.locator("#lbl-prompt [data-pair]").get_attribute("data-pair")
        page.locator("#lbl-progress").click()
        page.keyboard.press("1")
        page.wait_for_function("p => { const el = document.querySelector('#lbl-prompt [data-pair]');"
                               " return el && el.getAttribute('data-pair') !== p; }", arg=pair, timeout=30000)
    assert mine(app.ws_dir, name) == {(rid, 0): 1, (rid, 1): 1}
    ws = Workspace(app.ws_dir)
    assert ws.query("SELECT COUNT(*) FROM labels l JOIN annotators a ON a.id = l.annotator_id WHERE a.name=?",
                    (name,))[0][0] == 1


def test_a_press_saves_only_the_step_on_screen(app):
    """The server side of a press (no browser): a step the page does not show, or none, is never labeled."""
    from rloo_studio.studio import Studio

    studio = Studio(app.ws_dir)
    name = "step-screen"
    r = S.next_response(studio.ws, name)
    shown = {"response_id": r["response_id"], "step": 0}
    for screen in ("", f"{r['response_id']}:1", f"{r['response_id'] + 1}:0"):
        out = label_steps.press(studio, 1, StepInputs(name=name, mode="Steps", shown=shown, screen=screen))
        assert "nothing was saved" in out[1]
    assert mine(app.ws_dir, name) == {}
    label_steps.press(studio, 1, StepInputs(name=name, mode="Steps", shown=shown, screen=f"{r['response_id']}:0"))
    assert mine(app.ws_dir, name) == {(r["response_id"], 0): 1}
    # After a restart the server holds no step: the store's next step is the one the page shows.
    out = label_steps.press(studio, 0, StepInputs(name=name, mode="Steps", screen=f"{r['response_id']}:1"))
    assert mine(app.ws_dir, name) == {(r["response_id"], 0): 1, (r["response_id"], 1): 0} and "Saved" in out[1]


def test_a_stepwise_file_uploaded_in_the_label_tab_is_recognised(app, tmp_path):
    import json

    rows = [{"prompt": "What is 40 + 2? (upload)", "completions": ["0+2=2", "4+0=4", "So 42."],
             "labels": [True, True, False], "answer": "42"}]
    path = tmp_path / "prm-upload.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with open_page(app.url) as page:
        page.get_by_role("button", name="Import pairs or prompts").click()
        page.locator("input[type=file]").first.set_input_files(str(path))
        page.get_by_role("button", name="Import", exact=True).click()
        expect(page.locator("#lbl-import-msg")).to_contain_text(
            "Imported 1 stepwise rows from prm-upload.jsonl: 1 response with 3 step labels (annotator 'import'), "
            "1 prompt",
            timeout=30000)
    [got] = [e for e in S.labeled_responses(Workspace(app.ws_dir), "import") if e["prompt"] == rows[0]["prompt"]]
    assert (got["steps"], got["labels"]) == (rows[0]["completions"], [1, 1, -1])
