"""Step labeling with a process reward model beside it, in Chromium, measured: a scripted annotator who knows the exact
verdicts (tests/step_annotator.py) labels 30 responses of the demo (its responses and the slipping policy's, sources in
turn) without the model and 30 with it, from the keyboard. Printed: keys per response each way, and how many of the
verdicts accepted from the model were wrong. The model is a quick probe (tests/prm_probe_fixture.py), imperfect on
purpose; docs/PRM.md has the same measure with the demo's trained process reward model (bench/label_with_prm.py)."""
import pytest
from browser import open_page, running_app, screenshot
from playwright.sync_api import expect
from prm_probe_fixture import probe_prm_run
from step_annotator import accepted_figures, label, no_model, press, shown, start, truth

from rloo_studio.core.workspace import Workspace
from rloo_studio.label import steps as S
from rloo_studio.label.demo_data import open_workspace, seed_demo_steps

RESPONSES = 30


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """A demo workspace with the slipping policy's responses and a process reward run (the newest, so chosen by
    default)."""
    ws_dir = tmp_path_factory.mktemp("steps-model-app") / "ws"
    ws = open_workspace(ws_dir, demo=True)
    seed_demo_steps(ws)
    probe_prm_run(ws)
    with running_app(ws_dir, seed=False) as a:
        yield a


def answers_judged(ws_dir, name: str, finished: list[int]) -> bool:
    """Every finished response whose steps are all right has the person's own verdict on its answer, the right one."""
    ws = Workspace(ws_dir)
    for rid in finished:
        steps, right = truth(ws, rid)
        view = S.response_view(ws, name, rid)
        if all(steps) and view["labels"][view["answer_step"]] != (1 if right else -1):
            return False
    return True


def test_with_the_model_a_person_presses_fewer_keys_and_wrong_accepted_verdicts_are_counted(app):
    with open_page(app.url) as page:
        start(page, "keys-alone")
        no_model(page)
        alone = label(page, app.ws_dir, RESPONSES, use_model=False)
    with open_page(app.url) as page:
        start(page, "keys-with-model")
        expect(page.locator("#stp-run input")).to_have_value("prm-probe (completed)")  # the newest, by default
        expect(page.locator("#stp-view .stp-model-line")).to_contain_text("The process reward model (prm-probe)")
        expect(page.locator("#stp-view li[data-p]")).not_to_have_count(0)  # each step's p(right)
        screenshot(page, "label-steps-model")
        helped = label(page, app.ws_dir, RESPONSES, use_model=True)
        page.get_by_role("button", name="Annotators and agreement").click()
        panel = page.locator("#lbl-annotators")
        expect(panel).to_contain_text("accepted from the model", timeout=60_000)
        expect(panel).to_contain_text("keys-with-model")
        expect(panel).to_contain_text("Person vs model")
        expect(panel).not_to_contain_text("No labels from people yet")
        panel.scroll_into_view_if_needed()
        screenshot(page, "label-steps-panel")
    wrong = accepted_figures(app.ws_dir, "keys-with-model")
    print(f"\nscripted annotator, {RESPONSES} responses each way (the probe model): keys per response "
          f"{alone.per_response():.2f} alone, {helped.per_response():.2f} with the model; a pressed {helped.accepts} "
          f"times ({helped.sure_accepts} without checking: the model was sure); accepted verdicts {wrong['accepted']}, "
          f"wrong {wrong['wrong']} ({wrong['share_wrong'] or 0:.1%}) in {wrong['responses_wrong']} responses")
    assert alone.finished == helped.finished  # the same responses, in the same order (sources in turn)
    assert helped.per_response() < alone.per_response()
    assert wrong["accepted"] > 0 and isinstance(wrong["wrong"], int) and wrong["wrong"] <= wrong["accepted"]
    assert answers_judged(app.ws_dir, "keys-alone", alone.finished)
    assert answers_judged(app.ws_dir, "keys-with-model", helped.finished)
    assert len({Workspace(app.ws_dir).query("SELECT source FROM responses WHERE id=?", (r,))[0][0]
                for r in alone.finished[:3]}) == 3  # sources take turns: the slipping policy's among the first


def test_the_answer_can_be_marked_wrong_under_right_steps_and_undo_takes_back_an_acceptance(app):
    """Keys: a (the model trusts every step) puts the answer on screen; 3 marks it wrong; u twice takes the answer's
    label back, then the whole acceptance."""
    ws = Workspace(app.ws_dir)
    name = "answer-keys"
    with open_page(app.url) as page:
        start(page, name)
        page.locator("#stp-progress").click()
        for _ in range(40):  # the first response whose steps the model trusts
            if page.locator("#stp-view li[data-proposed='bad']").count() == 0:
                break
            press(page, "3", shown(page))  # the first step bad: the next response
        rid = int(page.locator("#stp-view [data-response]").get_attribute("data-response"))
        n = S.response_view(ws, name, rid)["total_steps"]
        page.keyboard.press("a")
        expect(page.locator(f"#stp-view [data-response='{rid}'][data-step='{n}']")).to_be_visible(timeout=120_000)
        expect(page.locator("#stp-view .stp-answer.stp-current")).to_contain_text("judge the final answer")
        expect(page.locator("#stp-view li.stp-good")).to_have_count(n)
        expect(page.locator("#stp-view li.stp-good").first).to_contain_text("accepted from the model")
        screenshot(page, "label-steps-answer")
        page.keyboard.press("3")
        expect(page.locator("#stp-status")).to_contain_text(f"Response #{rid} finished (answer judged)",
                                                            timeout=120_000)
        got = S.response_view(ws, name, rid)
        assert got["labels"] == [1] * n + [-1] and got["accepted"] == [True] * n + [False]
        page.keyboard.press("u")
        expect(page.locator("#stp-status")).to_contain_text("Undid your label of the final answer", timeout=120_000)
        page.keyboard.press("u")
        expect(page.locator(f"#stp-view [data-response='{rid}'][data-step='0']")).to_be_visible(timeout=120_000)
    assert S.response_view(ws, name, rid)["labels"] == [None] * (n + 1)
