"""The Label tab's step mode: label the <think> steps of a response, one at a time, mostly from the keyboard.

Keys (outside text boxes; label_browser.HEAD presses the visible button of the mode shown): 1 good, 2 neutral,
3 bad = the first wrong step (it finishes the response and shows the next one), u undo. A press saves a label only
for the step on the page at that moment: the page sends the (response, step) it shows with the press, and the
server saves nothing when that is not the step it drew last. The place is kept by the store, not the page: a
reload shows the response the annotator left unfinished, at its first unlabeled step (steps.next_response).
"""
from __future__ import annotations

import html
from dataclasses import dataclass
from functools import partial

import gradio as gr

from rloo_studio.core.errors import explain
from rloo_studio.label import steps, store
from rloo_studio.studio import Studio
from rloo_studio.ui import inputs, render
from rloo_studio.ui.label_browser import SAVED_JS
from rloo_studio.ui.label_render import NO_NAME, PAIRS, STEPS, status_html

KEYS = ("good", "neutral", "bad")  # the verdict buttons, in the order of the view's last outputs
EMPTY = ("<i>No response with &lt;think&gt; steps is left for you to label. Import a stepwise file (prompt, "
         "completions, labels) or responses that reason, or generate candidates.</i>")
NOTHING_SAVED = "No step was on screen, so nothing was saved."

# Runs in the browser when a verdict button is pressed: the last input becomes 'response:step' of the step the page
# shows right now ('' when none is).
ON_SCREEN_JS = """(...args) => {
  const el = document.querySelector('#stp-view [data-response]');
  args[args.length - 1] = el ? el.getAttribute('data-response') + ':' + el.getAttribute('data-step') : '';
  return args;
}"""

CSS = """
#stp-view .stp-prompt {font-size: 1.05em; padding: .5em .8em; border-radius: 6px;
    background: var(--block-background-fill); margin-bottom: .6em}
#stp-view ol.stp-steps {margin: 0 0 .6em; padding-left: 2.6em}
#stp-view li.stp-step {margin: .25em 0; padding: .35em .6em; border-radius: 6px; border: 1px solid transparent;
    border-left-width: 5px}
#stp-view .stp-text {font-family: var(--font-mono); white-space: pre-wrap; overflow-wrap: anywhere}
#stp-view .stp-tag {display: inline-block; margin-top: .2em; font-size: .8em; font-weight: 700; padding: 0 .5em;
    border-radius: 9px}
#stp-view li.stp-current {border-color: #2563eb; background: rgba(37,99,235,.12);
    box-shadow: 0 0 0 2px rgba(37,99,235,.35)}
#stp-view li.stp-current .stp-tag {background: #2563eb; color: #fff}
#stp-view li.stp-good {border-left-color: #16a34a; background: rgba(22,163,74,.08)}
#stp-view li.stp-good .stp-tag {background: #16a34a; color: #fff}
#stp-view li.stp-neutral {border-left-color: #a16207; background: rgba(202,138,4,.10)}
#stp-view li.stp-neutral .stp-tag {background: #a16207; color: #fff}
#stp-view li.stp-bad {border-left-color: #dc2626; background: rgba(220,38,38,.10)}
#stp-view li.stp-bad .stp-tag {background: #dc2626; color: #fff}
#stp-view li.stp-after-bad {opacity: .55}
#stp-view .stp-answer {border-top: 2px solid var(--border-color-primary); padding: .5em .2em 0}
#stp-good {background: #16a34a; border-color: #15803d; color: #fff}
#stp-neutral {background: #a16207; border-color: #854d0e; color: #fff}
#stp-bad {background: #dc2626; border-color: #b91c1c; color: #fff}
#stp-good:disabled, #stp-neutral:disabled, #stp-bad:disabled {opacity: .45}
#stp-view .stp-answer-title {font-size: .8em; font-weight: 700; text-transform: uppercase;
    color: var(--body-text-color-subdued)}
"""


@dataclass(frozen=True)
class StepInputs:
    """What the step mode's events read from the page (ui.inputs.bind)."""
    name: str = ""  # the annotator's name, as typed (the Label tab's one name box)
    mode: str = PAIRS  # the Label tab's mode
    session: str = ""  # this browser's id: its pair claims are given back when it turns to steps
    shown: dict | None = None  # {response_id, step} drawn last (None: no step on the page)
    screen: str = ""  # 'response:step' the page showed when the key was pressed (filled in the browser)


# -- what the page shows -------------------------------------------------------------------------------------------

def steps_html(r: dict) -> str:
    """The prompt, the numbered steps (the current one highlighted, each labeled one with its verdict in colour and
    in words), and the final answer apart."""
    prompt = "".join(f"<div><b>{html.escape(str(t.get('role', '')))}</b>: {render.esc(str(t.get('content', '')))}</div>"
                     for t in r["turns"]) if r["turns"] else render.esc(r["prompt"])
    items = []
    for k, (text, verdict) in enumerate(zip(r["steps"], r["labels"])):
        if k == r["step"]:
            cls, tag = "stp-current", "▶ label this step"
        elif verdict is not None:
            cls, tag = f"stp-{steps.WORDS[verdict]}", steps.WORDS[verdict]
        elif r["first_bad"] is not None and k > r["first_bad"]:
            cls, tag = "stp-after-bad", "after the first wrong step: not labeled"
        else:
            cls, tag = "", ""
        tag_html = f"<div class='stp-tag'>{html.escape(tag)}</div>" if tag else ""
        items.append(f"<li class='stp-step {cls}' data-step-index='{k}'><div class='stp-text'>{html.escape(text)}</div>"
                     f"{tag_html}</li>")
    answer = render.esc(r["answer_text"]) if r["answer_text"] else "<i>no answer after the reasoning</i>"
    where = f" data-response='{r['response_id']}' data-step='{r['step']}'" if r["step"] is not None else ""
    return (f"<div class='stp-shown'{where}><div class='stp-prompt'>{prompt}</div>"
            f"<ol class='stp-steps'>{''.join(items)}"
            f"</ol><div class='stp-answer'><div class='stp-answer-title'>Final answer</div>{answer}</div></div>")


def progress_md(studio: Studio, name: str, r: dict | None) -> str:
    if not name:
        return ""
    p = steps.progress(studio.ws, name)
    here = (f"Step **{r['step'] + 1}** of **{r['total_steps']}** of this response · "
            if r and r["step"] is not None else "")
    return (f"{here}your responses finished: **{p['finished_today']}** today, **{p['finished']}** in all (of "
            f"{p['responses']} with steps) · your steps labeled: {p['steps_today']} today, {p['steps']} in all")


def view(studio: Studio, r: dict | None, name: str, note: str = "", error: bool = False):
    """Outputs for: the view (#stp-view), status line, progress, the step on the page (None: none), then each verdict
    button (KEYS), enabled only while a step is on the page."""
    name = (name or "").strip()
    on = r is not None and r["step"] is not None and bool(name)
    if not name:
        body, status = "", status_html(f"{note} {NO_NAME}".strip(), error)
    elif r is None:
        body, status = EMPTY, status_html(note, error)
    else:
        said = html.escape(f"response #{r['response_id']} · source {r['source']} · {r['total_steps']} steps")
        status = status_html(note, True) if error else (f"{html.escape(note)} · {said}" if note else said)
        body = steps_html(r)
    shown = {"response_id": r["response_id"], "step": r["step"]} if on else None
    return (body, status, progress_md(studio, name, r), shown, *(gr.update(interactive=on) for _ in KEYS))


def unchanged():
    return (gr.skip(),) * (4 + len(KEYS))


def show_next(studio: Studio, form: StepInputs, note: str = ""):
    """The view of the annotator's next step (their unfinished response, else the next one with steps)."""
    name = (form.name or "").strip()
    if not name:
        return view(studio, None, "", note)
    try:
        return view(studio, steps.next_response(studio.ws, name), name, note)
    except ValueError as e:
        return view(studio, None, name, explain(e), True)


# -- events --------------------------------------------------------------------------------------------------------

def _on_screen(shown: dict | None, screen) -> bool:
    return shown is not None and str(screen or "").strip() == f"{shown['response_id']}:{shown['step']}"


def press(studio: Studio, verdict: int, form: StepInputs):
    """A verdict key: save it for the step on the page (form.shown, if it is form.screen), then show the next step,
    or (the last step, or a bad one) the next response."""
    name = (form.name or "").strip()
    shown = form.shown
    if shown is None and form.screen and name:  # a step on the page the server does not know: the app restarted
        r = steps.next_response(studio.ws, name)
        shown = {"response_id": r["response_id"], "step": r["step"]} if r else None
    if not name or not _on_screen(shown, form.screen):  # nothing (or another step) on the page: save nothing, say so
        return show_next(studio, form, NOTHING_SAVED if name else "")
    rid = shown["response_id"]
    try:
        steps.label_step(studio.ws, rid, shown["step"], verdict, name)
        r = steps.response_view(studio.ws, name, rid)
    except ValueError as e:
        return view(studio, steps.response_view(studio.ws, name, rid), name, explain(e), True)
    if r["step"] is not None:
        return view(studio, r, name, f"Saved: step {shown['step'] + 1} {steps.WORDS[verdict]}.")
    end = "first wrong step marked" if verdict == -1 else "every step labeled"
    return show_next(studio, form, f"Response #{rid} finished ({end}).")


def undo(studio: Studio, form: StepInputs):
    """Take back the annotator's last step label and show that step again."""
    name = (form.name or "").strip()
    if not name:
        return view(studio, None, "")
    try:
        back = steps.undo_step(studio.ws, name)
    except ValueError as e:
        return (*unchanged()[:1], status_html(explain(e), True), *unchanged()[2:])
    if back is None:
        return (*unchanged()[:1], status_html("Nothing to undo yet."), *unchanged()[2:])
    rid, step = back
    return view(studio, steps.response_view(studio.ws, name, rid), name,
                f"Undid your label of step {step + 1} of response #{rid}; label it again.")


def mode_shown(studio: Studio, form: StepInputs):
    """Outputs for the mode: the step box's and the pair widgets' visibility (pair_widgets: box, filter, source,
    raw, order row), then the step view (drawn in step mode, left as it is otherwise)."""
    on = form.mode == STEPS
    shown = (gr.update(visible=on), *(gr.update(visible=not on) for _ in range(5)))
    if not on:
        return (*shown, *unchanged())
    if form.session:
        store.release(studio.ws, form.session)  # the pair this browser held goes back to the queue for others
    return (*shown, *show_next(studio, form))


def redraw(studio: Studio, form: StepInputs):
    """The step view again in step mode (after an import, back on the tab); nothing otherwise."""
    return show_next(studio, form) if form.mode == STEPS and (form.name or "").strip() else unchanged()


# -- layout --------------------------------------------------------------------------------------------------------

def build(studio: Studio, name, mode, session) -> tuple:
    """The step mode's column (hidden until the mode is Steps) and its wiring: (box, outputs of `view`, the inputs of
    redraw / mode_shown as a dict for inputs.bind)."""
    current = gr.State(None)
    screen = gr.Textbox(visible=False)
    with gr.Column(visible=False, elem_id="stp-box") as box:
        status = gr.HTML(elem_id="stp-status")
        progress = gr.Markdown(elem_id="stp-progress")
        body = gr.HTML(elem_id="stp-view")
        titles = {"good": "Good  [1]", "neutral": "Neutral  [2]", "bad": "Bad: first wrong step  [3]"}
        with gr.Row(elem_id="stp-keys-row"):
            buttons = {k: gr.Button(titles[k], interactive=False, elem_id=f"stp-{k}") for k in KEYS}  # colours: CSS
            b_undo = gr.Button("Undo  [u]", elem_id="stp-undo")
        gr.HTML("<div class='lbl-keys'>Keys: 1 good, 2 neutral, 3 bad (the first wrong step: it finishes the "
                "response), u undo. A response is finished at its last step or its first wrong one; the next one "
                "follows.</div>")
    outs = [body, status, progress, current, *buttons.values()]
    who = dict(name=name, mode=mode, session=session)
    for key, btn in buttons.items():  # screen last: ON_SCREEN_JS fills the last input
        btn.click(**inputs.bind(partial(press, studio, steps.VERDICTS[key]), StepInputs, **who, shown=current,
                                screen=screen),
                  outputs=outs, js=ON_SCREEN_JS, show_progress="hidden",
                  trigger_mode="multiple").then(None, js=SAVED_JS)
    b_undo.click(**inputs.bind(partial(undo, studio), StepInputs, **who), outputs=outs, show_progress="hidden",
                 trigger_mode="multiple").then(None, js=SAVED_JS)
    return box, outs, who
