"""A scripted annotator for the Label tab's step mode, in Chromium: a person who knows the exact verdicts of the demo's
additions (core/demo_task.step_labels: a step is right when it and every step before it is the demo's own; the final
answer is right when its number is the sum) and labels from the keyboard, with or without the process reward model.

Without the model: 1 on each right step, 3 on the first wrong one (it finishes the response), then the answer: 1 right,
3 wrong. With the model: `a` (accept its verdicts) when the model is sure of every verdict it proposes (p(right) at
least 1 - SURE for the steps it trusts, at most SURE for the one it doubts) without checking them, as a person trusting
a sure model would; otherwise the annotator checks: `a` when the proposal is what they know, else their own key on the
step on screen, then looks at the (new) proposal again. The answer is always their own key.

Counts: keys per response, and the accepted verdicts that were wrong (read back from the store)."""
from __future__ import annotations

from dataclasses import dataclass, field

from playwright.sync_api import expect

from rloo_studio.core import demo_task
from rloo_studio.core.answers import last_number
from rloo_studio.core.thinking import parse
from rloo_studio.core.workspace import Workspace

SURE = 0.1  # a verdict is sure when p(right) is within this of 0 or 1


def truth(ws: Workspace, response_id: int) -> tuple[list[bool], bool]:
    """(each <think> step right, the final answer right) of a demo addition."""
    prompt, text = ws.query("SELECT p.text, r.text FROM responses r JOIN prompts p ON p.id = r.prompt_id WHERE r.id=?",
                            (response_id,))[0]
    steps = demo_task.step_labels(prompt, text)
    a, b = (int(x) for x in demo_task._operands(prompt))
    return steps, last_number(parse(text).answer or "") == str(a + b)


@dataclass
class Tally:
    responses: int = 0
    keys: int = 0
    accepts: int = 0  # presses of a
    sure_accepts: int = 0  # of them, without checking (the model was sure)
    finished: list = field(default_factory=list)  # the responses finished, in order

    def per_response(self) -> float:
        return self.keys / self.responses if self.responses else float("nan")


def shown(page) -> tuple[int, int] | None:
    el = page.locator("#stp-view [data-response]")
    return (int(el.get_attribute("data-response")), int(el.get_attribute("data-step"))) if el.count() else None


def _proposal(page) -> list[tuple[int, str, float]]:
    """[(step, 'good' | 'bad', p)] the page pre-marks."""
    out = []
    for li in page.locator("#stp-view li[data-proposed]").all():
        out.append((int(li.get_attribute("data-step-index")), li.get_attribute("data-proposed"),
                    float(li.get_attribute("data-p"))))
    return out


def press(page, key: str, was: tuple[int, int]) -> None:
    """Press a key and wait until the page shows another step (the save committed and the view came back)."""
    page.keyboard.press(key)
    page.wait_for_function(
        "w => { const el = document.querySelector('#stp-view [data-response]'); if (window.lblSaving) return false;"
        " return !el || el.getAttribute('data-response') + ':' + el.getAttribute('data-step') !== w; }",
        arg=f"{was[0]}:{was[1]}", timeout=120_000)


def _choose(page, ws, rid, step, use_model: bool, tally: Tally) -> str:
    """The key this annotator presses now."""
    steps, answer_right = truth(ws, rid)
    if step >= len(steps):
        return "1" if answer_right else "3"
    proposal = _proposal(page) if use_model else []
    if proposal:
        sure = all(p >= 1 - SURE if v == "good" else p <= SURE for _, v, p in proposal)
        knows = all((v == "good") == steps[k] for k, v, _ in proposal)
        if sure or knows:
            tally.accepts += 1
            tally.sure_accepts += sure
            return "a"
    return "1" if steps[step] else "3"


def label(page, ws_dir, n: int, use_model: bool) -> Tally:
    """Label `n` responses from the one on the page (step mode, the name typed, the model chosen or not)."""
    ws, tally = Workspace(ws_dir), Tally()
    page.locator("#stp-progress").click()  # out of any text box: the keys label
    while tally.responses < n:
        expect(page.locator("#stp-view [data-response]")).to_be_visible(timeout=120_000)
        rid, step = shown(page)
        key = _choose(page, ws, rid, step, use_model, tally)
        press(page, key, (rid, step))
        tally.keys += 1
        now = shown(page)
        if now is None or now[0] != rid:
            tally.responses += 1
            tally.finished.append(rid)
    return tally


def accepted_figures(ws_dir, name: str) -> dict:
    """The annotator's accepted verdicts against the exact ones: {accepted, wrong, share_wrong, responses_wrong}."""
    ws = Workspace(ws_dir)
    rows = ws.query("SELECT sl.response_id, sl.step, sl.verdict FROM step_labels sl JOIN annotators a ON a.id = "
                    "sl.annotator_id WHERE a.name=? AND sl.superseded=0 AND sl.accepted=1", (name,))
    wrong = [(r[0], r[1]) for r in rows if (r[2] >= 0) != truth(ws, r[0])[0][r[1]]]
    return {"accepted": len(rows), "wrong": len(wrong), "share_wrong": len(wrong) / len(rows) if rows else None,
            "responses_wrong": len({w[0] for w in wrong})}


def start(page, name: str) -> None:
    """Type the name and turn to step mode, as a person would."""
    expect(page.locator("#lbl-status")).to_contain_text("Enter your name", timeout=60_000)
    page.get_by_label("Your name").fill(name)
    page.get_by_label("Your name").press("Enter")
    page.get_by_label("Steps").check()
    expect(page.locator("#stp-status")).to_contain_text("response #", timeout=60_000)


def no_model(page) -> None:
    """Choose (none) as the model beside the steps."""
    page.locator("#stp-run input").click()
    page.get_by_role("option", name="(none)").click()
    expect(page.locator("#stp-view .stp-model-line")).to_have_count(0, timeout=60_000)
    expect(page.locator("#stp-accept")).to_be_disabled()
