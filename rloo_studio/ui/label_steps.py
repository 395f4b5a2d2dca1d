"""The Label tab's step mode: label the <think> steps of a response, one at a time, mostly from the keyboard, with a
process reward model's verdicts beside them when one is chosen.

Keys (outside text boxes; label_browser.HEAD presses the visible button of the mode shown): 1 good, 2 neutral,
3 bad = the first wrong step (it finishes the response), a accept the model's verdicts (the steps it trusts good, the
first it doubts bad; stored as the person's labels, marked accepted), u undo. After the last step, the final answer:
1 right, 3 wrong. A press saves a label only for the step on the page at that moment: the page sends the
(response, step) it shows with the press, and the server saves nothing when that is not the step it drew last. The
place is kept by the store, not the page: a reload shows the response the annotator left unfinished, at its first
unlabeled step (steps.next_response).
"""
from __future__ import annotations

import html
from dataclasses import dataclass
from functools import partial

import gradio as gr

from rloo_studio.core.errors import explain
from rloo_studio.inspect import step_assist
from rloo_studio.label import steps, store
from rloo_studio.studio import Studio
from rloo_studio.ui import inputs
from rloo_studio.ui.label_browser import SAVED_JS
from rloo_studio.ui.label_render import NO_NAME, PAIRS, STEPS, status_html
from rloo_studio.ui.label_steps_html import CSS, steps_html  # noqa: F401  (CSS: the tab adds it to the page)

KEYS = ("good", "neutral", "bad", "accept")  # the buttons a step on the page enables, in the view's last outputs
EMPTY = ("<i>No response with &lt;think&gt; steps is left for you to label. Import a stepwise file (prompt, "
         "completions, labels) or responses that reason, or generate candidates.</i>")
NOTHING_SAVED = "No step was on screen, so nothing was saved."
ORDER_HELP = "least certain: its least sure step nearest p = 0.5 (the key legend says more)"

# Runs in the browser when a verdict button is pressed: the last input becomes 'response:step' of the step the page
# shows right now ('' when none is).
ON_SCREEN_JS = """(...args) => {
  const el = document.querySelector('#stp-view [data-response]');
  args[args.length - 1] = el ? el.getAttribute('data-response') + ':' + el.getAttribute('data-step') : '';
  return args;
}"""


@dataclass(frozen=True)
class StepInputs:
    """What the step mode's events read from the page (ui.inputs.bind)."""
    name: str = ""  # the annotator's name, as typed (the Label tab's one name box)
    mode: str = PAIRS  # the Label tab's mode
    session: str = ""  # this browser's id: its pair claims are given back when it turns to steps
    run: str = step_assist.NONE  # the process reward run beside the steps (step_assist.NONE: none)
    order: str = "sources"  # the queue's order (step_assist.ORDERS)
    shown: dict | None = None  # {response_id, step, run, p, proposal} drawn last (None: no step on the page)
    screen: str = ""  # 'response:step' the page showed when the key was pressed (filled in the browser)


# -- what the page shows -------------------------------------------------------------------------------------------

def progress_md(studio: Studio, name: str, r: dict | None) -> str:
    if not name:
        return ""
    p = steps.progress(studio.ws, name)
    here = ""
    if r and r["step"] is not None:
        here = ("The final answer of this response · " if r["step"] == r["answer_step"] else
                f"Step **{r['step'] + 1}** of **{r['total_steps']}** of this response, then its answer · ")
    return (f"{here}your responses finished: **{p['finished_today']}** today, **{p['finished']}** in all (of "
            f"{p['responses']} with steps) · your steps labeled: {p['steps_today']} today, {p['steps']} in all")


def _judged(studio: Studio, run: str | None, r: dict | None) -> tuple[list[float] | None, str]:
    """(the model's P(right) per step of the response, what went wrong): (None, '') without a model."""
    if r is None or run is None:
        return None, ""
    try:
        return step_assist.scores(studio.ws, run, [r["response_id"]])[r["response_id"]], ""
    except Exception as e:  # a broken or deleted run: label without it, and say so
        return None, f"The process reward model could not judge this response: {explain(e)}"


def view(studio: Studio, r: dict | None, name: str, note: str = "", error: bool = False, run: str | None = None):
    """Outputs for: the view (#stp-view), status line, progress, the step on the page (None: none), then each button
    of KEYS, enabled only while a step is on the page (accept: while the model proposes a verdict)."""
    name = (name or "").strip()
    on = r is not None and r["step"] is not None and bool(name)
    probs, trouble = _judged(studio, run, r)
    proposal = step_assist.proposal(r, probs) if on else []
    if not name:
        body, status = "", status_html(f"{note} {NO_NAME}".strip(), error)
    elif r is None:
        body, status = EMPTY, status_html(note, error)
    else:
        said = html.escape(f"response #{r['response_id']} · source {r['source']} · {r['total_steps']} steps and the "
                           "final answer")
        status = status_html(note, True) if error else (f"{html.escape(note)} · {said}" if note else said)
        if trouble:
            status += " · " + status_html(trouble, True)
        label = f"The process reward model ({run})" if run and not trouble else ""
        body = steps_html(r, probs, proposal, label, run or "")
    shown = None
    if on:
        p = probs[r["step"]] if probs is not None and r["step"] < len(probs) else None
        shown = {"response_id": r["response_id"], "step": r["step"], "run": run if probs is not None else None,
                 "p": p, "proposal": proposal}
    enabled = {"good": on, "neutral": on, "bad": on, "accept": bool(proposal)}
    return (body, status, progress_md(studio, name, r), shown, *(gr.update(interactive=enabled[k]) for k in KEYS))


def unchanged():
    return (gr.skip(),) * (4 + len(KEYS))


def _run(studio: Studio, form: StepInputs) -> tuple[str | None, str]:
    """(the run to show, or None; what went wrong choosing it)."""
    try:
        return step_assist.check_run(studio.ws, form.run), ""
    except ValueError as e:
        return None, explain(e)


def _next(studio: Studio, form: StepInputs, name: str, run: str | None) -> tuple[dict | None, str]:
    """(the annotator's next response in the order chosen, a note when the model's order could not be used)."""
    prefer, note = None, ""
    if form.order == step_assist.UNCERTAIN:
        if run is None:
            note = "Choose a process reward model to order by its certainty; meanwhile sources take turns."
        else:
            try:
                prefer = step_assist.least_certain(studio.ws, run, name)
            except Exception as e:  # the model failed: the usual order, said
                note = f"The model could not order the queue ({explain(e)}); sources take turns."
    order = form.order if form.order in steps.ORDERS else "sources"
    return steps.next_response(studio.ws, name, order=order, prefer=prefer), note


def show_next(studio: Studio, form: StepInputs, note: str = ""):
    """The view of the annotator's next step (their unfinished response, else the next one in the order chosen)."""
    name = (form.name or "").strip()
    if not name:
        return view(studio, None, "", note)
    run, trouble = _run(studio, form)
    try:
        r, said = _next(studio, form, name, run)
    except ValueError as e:
        return view(studio, None, name, explain(e), True)
    return view(studio, r, name, " ".join(x for x in (note, said, trouble) if x), bool(trouble), run=run)


# -- events --------------------------------------------------------------------------------------------------------

def _on_screen(shown: dict | None, screen) -> bool:
    return shown is not None and str(screen or "").strip() == f"{shown['response_id']}:{shown['step']}"


def _finished(studio: Studio, form: StepInputs, name: str, rid: int, saved: str, end: str):
    """After a save: the same response at its next step, or (finished) the next response, saying what happened."""
    run, _ = _run(studio, form)
    r = steps.response_view(studio.ws, name, rid)
    if r["step"] is not None:
        return view(studio, r, name, saved, run=run)
    return show_next(studio, form, f"Response #{rid} finished ({end}).")


def press(studio: Studio, verdict: int, form: StepInputs):
    """A verdict key: save it for the step on the page (form.shown, if it is form.screen) as the person's own, with
    the model's p shown for it; then show the next step, or (the answer, or a bad step) the next response."""
    name = (form.name or "").strip()
    shown = form.shown
    if shown is None and form.screen and name:  # a step on the page the server does not know: the app restarted
        r = steps.next_response(studio.ws, name, order=form.order if form.order in steps.ORDERS else "sources")
        shown = {"response_id": r["response_id"], "step": r["step"]} if r else None
    if not name or not _on_screen(shown, form.screen):  # nothing (or another step) on the page: save nothing, say so
        return show_next(studio, form, NOTHING_SAVED if name else "")
    rid, step = shown["response_id"], shown["step"]
    try:
        steps.label_step(studio.ws, rid, step, verdict, name, model_p=shown.get("p"), model_run=shown.get("run"))
    except ValueError as e:
        return view(studio, steps.response_view(studio.ws, name, rid), name, explain(e), True)
    answer = step == steps.response_view(studio.ws, name, rid)["answer_step"]
    what = (f"the final answer {({1: 'right', 0: 'neutral', -1: 'wrong'})[verdict]}" if answer
            else f"step {step + 1} {steps.WORDS[verdict]}")
    end = "first wrong step marked" if verdict == -1 and not answer else "answer judged"
    return _finished(studio, form, name, rid, f"Saved: {what}.", end)


def accept(studio: Studio, form: StepInputs):
    """The accept key: store the verdicts the model proposed on the page (form.shown's proposal) as the person's labels
    marked accepted; then the answer, or (the model's first doubted step) the next response."""
    name = (form.name or "").strip()
    shown = form.shown
    if not name or not _on_screen(shown, form.screen) or not shown.get("proposal"):
        return show_next(studio, form, NOTHING_SAVED if name else "")
    rid, proposal = shown["response_id"], [tuple(x) for x in shown["proposal"]]
    try:
        steps.accept_steps(studio.ws, rid, name, proposal, shown["run"])
    except ValueError as e:
        return view(studio, steps.response_view(studio.ws, name, rid), name, explain(e), True)
    first, last = proposal[0][0] + 1, proposal[-1][0] + 1
    span = f"step {first}" if first == last else f"steps {first}–{last}"
    return _finished(studio, form, name, rid, f"Accepted the model's verdicts on {span}; now judge the final answer.",
                     f"the model's first doubted step, step {last}, accepted as bad")


def undo(studio: Studio, form: StepInputs):
    """Take back the annotator's last step label (or acceptance) and show that step again."""
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
    run, _ = _run(studio, form)
    r = steps.response_view(studio.ws, name, rid)
    what = "the final answer" if step == r["answer_step"] else f"step {step + 1}"
    return view(studio, r, name, f"Undid your label of {what} of response #{rid}; label it again.", run=run)


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
    """The step view again in step mode (after an import, back on the tab, another model or order); nothing
    otherwise."""
    return show_next(studio, form) if form.mode == STEPS and (form.name or "").strip() else unchanged()


def runs_now(studio: Studio, current: str, picked: bool):
    """On tab open: a fresh list of process reward runs; the newest, unless the person picked one (or none)."""
    c = step_assist.runs(studio.ws)
    keep = picked and current in [v for _, v in c]
    return gr.update(choices=c, value=current if keep else step_assist.newest(studio.ws))


# -- layout --------------------------------------------------------------------------------------------------------

def _choosers(studio: Studio):
    """The model beside the steps and the queue's order: (run, picked by hand, order)."""
    with gr.Row(elem_id="stp-choosers"):
        run = gr.Dropdown(step_assist.runs(studio.ws), value=step_assist.newest(studio.ws), scale=2, elem_id="stp-run",
                          label="Process reward model beside you",
                          info="its p(right) on each step; a accepts its verdicts")
        order = gr.Dropdown([(v, k) for k, v in step_assist.ORDERS.items()], value="sources", scale=2,
                            label="Order", elem_id="stp-order", info=ORDER_HELP)
    return run, gr.State(False), order


def _buttons():
    titles = {"good": "Good  [1]", "neutral": "Neutral  [2]", "bad": "Bad: first wrong  [3]",
              "accept": "Accept the model  [a]"}
    with gr.Row(elem_id="stp-keys-row"):
        buttons = {k: gr.Button(titles[k], interactive=False, elem_id=f"stp-{k}") for k in KEYS}  # colours: CSS
        b_undo = gr.Button("Undo  [u]", elem_id="stp-undo")
    gr.HTML("<div class='lbl-keys'>Keys: 1 good, 2 neutral, 3 bad (the first wrong step: it finishes the response), "
            "a accept the model's verdicts (the steps it trusts good, the first it doubts bad; stored as yours, marked "
            "accepted, and left out of agreement figures), u undo. After the last step, the final answer: 1 right, "
            "3 wrong (the model does not judge it). A response is finished at its answer or its first wrong step; "
            "the next one follows. Order: sources in turn (the next response comes from the source you labeled "
            "fewest of), stored order, or the model's least certain first (of the next "
            f"{step_assist.POOL} in sources' turn, the response whose least sure step, up to the first one the model "
            "doubts, is nearest p = 0.5); a response you started stays first.</div>")
    return buttons, b_undo


def build(studio: Studio, name, mode, session) -> tuple:
    """The step mode's column (hidden until the mode is Steps) and its wiring: (box, outputs of `view`, the inputs of
    redraw / mode_shown as a dict for inputs.bind, the tab-open refresh of the run list as .then() arguments)."""
    current = gr.State(None)
    screen = gr.Textbox(visible=False)
    with gr.Column(visible=False, elem_id="stp-box") as box:
        run, picked, order = _choosers(studio)
        status = gr.HTML(elem_id="stp-status")
        progress = gr.Markdown(elem_id="stp-progress")
        body = gr.HTML(elem_id="stp-view")
        buttons, b_undo = _buttons()
    outs = [body, status, progress, current, *buttons.values()]
    who = dict(name=name, mode=mode, session=session, run=run, order=order)
    for key, btn in buttons.items():  # screen last: ON_SCREEN_JS fills the last input
        fn = partial(accept, studio) if key == "accept" else partial(press, studio, steps.VERDICTS[key])
        btn.click(**inputs.bind(fn, StepInputs, **who, shown=current, screen=screen),
                  outputs=outs, js=ON_SCREEN_JS, show_progress="hidden",
                  trigger_mode="multiple").then(None, js=SAVED_JS)
    b_undo.click(**inputs.bind(partial(undo, studio), StepInputs, **who), outputs=outs, show_progress="hidden",
                 trigger_mode="multiple").then(None, js=SAVED_JS)
    run.input(lambda: True, None, picked)
    for chooser in (run, order):
        chooser.input(**inputs.bind(partial(redraw, studio), StepInputs, **who), outputs=outs)
    on_tab = dict(fn=partial(runs_now, studio), inputs=[run, picked], outputs=run)
    return box, outs, who, on_tab
