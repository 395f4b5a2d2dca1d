"""Label tab: pick the better of two responses, or (step mode, ui/label_steps.py) label the <think> steps of one
response, mostly from the keyboard. The mode is kept by the browser (localStorage), as the name is.

Keys (outside text boxes): 1 / ← left better, 2 / → right better, 3 tie, 4 skip, f flag, u undo;
Esc leaves the comment box. A label key saves a label only for the pair whose texts are on the
page at that moment: the page sends the id it shows with every press, and the server saves
nothing when that is not the page's current pair (say, after an action cleared the view).
A press made while the last one is being saved is refused on the page, in words.

The page's claimed pair belongs to the annotator and this browser (an id kept in localStorage),
not to the page: a reload, a second tab or an app restart shows the same pair in the same order.
"""
from __future__ import annotations

import secrets
from dataclasses import replace
from functools import partial

import gradio as gr

from rloo_studio.core.errors import explain
from rloo_studio.label import store
from rloo_studio.reward.uncertainty import uncertainty_queue
from rloo_studio.runs.catalog import scorer_runs
from rloo_studio.studio import Studio
from rloo_studio.ui import inputs, label_browser, label_data, label_steps
from rloo_studio.ui.label_browser import ON_SCREEN_JS, SAVED_JS, load_inputs_js, remember_js, start_js
from rloo_studio.ui.label_panels import annotators_panel, guidelines_now, guidelines_section
from rloo_studio.ui.label_render import (
    KEYS,
    NO_NAME,
    NOTHING_SAVED,
    PAIRS,
    STEPS,
    LabelInputs,
    progress_md,
    show_next,
    sources_update,
    status_html,
    unchanged,
    view,
)
from rloo_studio.ui.label_steps import StepInputs

CSS, HEAD = label_browser.CSS + label_steps.CSS, label_browser.HEAD  # the page's styles and keys (ui/app.py adds them)
FILL_NAME_JS = "(typed, kept) => (typed || '').trim() ? typed : kept"  # a name typed meanwhile stays
RESTARTED = "The app restarted; your name and your pair were kept."
NAME_ID = "lbl-name"  # the name box: the one place a person types their name (the Records tab reads it too)
BOOT = secrets.token_hex(8)  # this start of the app


def browser_secret(ws) -> str:
    """The key of the page's localStorage values: one per workspace, so that they survive an app restart and two
    workspaces' pages do not share a name or a claim. It guards nothing secret: the page holds it too."""
    key = ws.setting("browser_secret", "")
    if not key:
        key = secrets.token_hex(16)
        ws.set_setting("browser_secret", key)
    return key


def first_view(studio: Studio, form: LabelInputs):
    """The page load's view, then this start of the app (remembered by the browser). Nothing is drawn while no
    name is typed, nor once a name typed meanwhile has drawn its own pair (form.shown): this view's raw-text
    setting was read as the page loaded, and drawn after a Raw text toggle it would undo it. A page open across a
    restart says so."""
    if form.shown is not None:
        return *unchanged(), BOOT
    if not (form.name or "").strip():
        skip = unchanged()
        return *skip[:4], progress_md(studio, ""), *skip[5:], BOOT
    return *show_next(studio, form, RESTARTED if form.boot not in ("", BOOT) else ""), BOOT


def back_on_tab(studio: Studio, form: LabelInputs):
    """The tab selected: the session's pair again. The page also selects its first tab as it loads, before the load
    event has filled the name and this browser's id; a view drawn then (no name) could reach the page after the
    load's view and wipe its pair, so it draws nothing until both are known."""
    if not (form.name or "").strip() or not form.session:
        return unchanged()
    held = held_pair(studio, form) if form.shown is not None else None
    if held is not None and held.pair_id == form.shown.pair_id:  # the page shows it already: keep its note (a
        return unchanged()  # select answered after the load's view would wipe "The app restarted", seen under load)
    return show_next(studio, form)


def relabel(studio: Studio, form: LabelInputs):
    store.release(studio.ws, form.session)
    return show_next(studio, form)


def label(studio: Studio, side: str, form: LabelInputs):
    """A label key: save for the pair on the page (form.shown, if it is form.screen), then show the next one.
    Outputs: the view, then the comment box (kept unless the label was saved)."""
    name = (form.name or "").strip()
    if not name:
        return (*view(studio, None, "", form.raw), form.comment)
    note = ""
    if form.shown is None and form.screen:  # a pair on the page the server does not know: the app restarted
        form, note = replace(form, shown=held_pair(studio, form)), RESTARTED
    if not store.on_screen(form.shown, form.screen):  # nothing (or another pair) on the page: save nothing, say so
        return (*show_next(studio, form, f"{note} {NOTHING_SAVED}".strip()), form.comment)
    try:
        if side == "flag":
            store.flag_pair(studio.ws, form.shown, name, form.session, form.comment)
            note = f"{note} Flagged #{form.shown.pair_id} for re-labeling (recorded as your skip).".strip()
        else:
            store.save_on_screen(studio.ws, form.shown, form.screen, name, form.session, side, form.comment)
        return (*show_next(studio, form, note), "")
    except (ValueError, KeyError) as e:
        return (*view(studio, form.shown, name, form.raw, explain(e), True), form.comment)


def held_pair(studio: Studio, form: LabelInputs):
    """The pair this browser holds for the annotator (what its pages show), or None."""
    try:
        return store.next_pair(studio.ws, form.name.strip(), form.session, form.filter, form.source,
                               prefer=(form.active or {}).get("order"))
    except ValueError:
        return None


def undo(studio: Studio, form: LabelInputs):
    name = (form.name or "").strip()
    if not name:
        return view(studio, None, "", form.raw)
    back = store.undo(studio.ws, name, form.session)
    if back is None:
        return view(studio, form.shown, name, form.raw, "Nothing to undo yet.")
    return view(studio, back, name, form.raw, f"Undid your label on pair #{back.pair_id}; choose again.",
                active=form.active)


def rerender(studio: Studio, form: LabelInputs):
    return view(studio, form.shown, form.name, form.raw, active=form.active)


def choose_order(studio: Studio, form: LabelInputs, progress=gr.Progress()):
    """Order the queue by form.order_by's uncertainty: (active labeling state, message, the view)."""
    if not form.order_by:
        return None, status_html("Pairs in their usual order."), *relabel(studio, replace(form, active=None))
    progress(0.1, desc="scoring unlabeled pairs with the reward model")
    try:
        queue = uncertainty_queue(studio.ws, form.order_by)
    except Exception as e:  # a broken or deleted run: say so, keep labeling in the usual order
        return None, status_html(explain(e), True), *relabel(studio, replace(form, active=None))
    active = {"order": [q[0] for q in queue], "info": {str(q[0]): (q[1], q[2]) for q in queue}}
    note = f"{len(queue)} unlabeled pairs ordered by the reward model's uncertainty (smallest margin first)."
    return active, status_html(note), *relabel(studio, replace(form, active=active))


def name_box(demo: gr.Blocks) -> gr.Textbox | None:
    """The Label tab's name box in a built app (None without a Label tab): other tabs read the annotator's name
    from it, the name this browser keeps (localStorage), so that a person types it once."""
    return next((b for b in demo.blocks.values() if isinstance(b, gr.Textbox) and b.elem_id == NAME_ID), None)


# -- layout --------------------------------------------------------------------------------------

def pair_view():
    """The prompt, and the two responses side by side: (prompt, left, right)."""
    prompt = gr.HTML(elem_id="lbl-prompt")
    with gr.Row(equal_height=True):
        with gr.Column():
            gr.HTML("<div class='lbl-side-title'>A</div>")
            left = gr.HTML(elem_classes="lbl-side", elem_id="lbl-left-text")
        with gr.Column():
            gr.HTML("<div class='lbl-side-title'>B</div>")
            right = gr.HTML(elem_classes="lbl-side", elem_id="lbl-right-text")
    return prompt, left, right


def label_buttons():
    """({side: its button}, undo, comment): the buttons under the pair, each with its key. The label buttons
    start disabled: the view enables them while a pair is on the page (label_render.view)."""
    titles = {"left": "A is better  [1]", "right": "B is better  [2]", "tie": "Tie  [3]", "skip": "Skip  [4]",
              "flag": "Flag for re-labeling  [f]"}
    with gr.Row(elem_id="lbl-keys-row"):
        buttons = {k: gr.Button(titles[k], variant="primary" if k in ("left", "right") else "secondary",
                                interactive=False, elem_id=f"lbl-{k}") for k in KEYS}
        b_undo = gr.Button("Undo  [u]", elem_id="lbl-undo")
    comment = gr.Textbox(label="Comment (optional, saved with the label; Esc leaves the box)", max_lines=2,
                         elem_id="lbl-comment")
    gr.HTML("<div class='lbl-keys'>Keys: 1 or ← for A, 2 or → for B, 3 tie, 4 skip, f flag for re-labeling, "
            "u undo (not while typing; Esc leaves the comment box).</div>")
    return buttons, b_undo, comment


def _pair_column():
    """The pair mode's column (hidden in step mode): (the column, [prompt, left, right, status, progress], the label
    buttons, undo, comment)."""
    with gr.Column() as box:
        progress = gr.Markdown(elem_id="lbl-progress")
        status = gr.HTML(status_html(NO_NAME), elem_id="lbl-status")  # which pair, or what went wrong: where eyes are
        prompt, left, right = pair_view()
        buttons, b_undo, comment = label_buttons()
    return box, [prompt, left, right, status, progress], buttons, b_undo, comment


def _choosers(ws) -> tuple:
    """The name box, the mode, the queue's filter and source, raw text, and the active-labeling order (its row)."""
    with gr.Row():
        name = gr.Textbox(label="Your name", placeholder="annotator name", scale=2, max_lines=1, elem_id=NAME_ID)
        mode = gr.Radio([PAIRS, STEPS], value=PAIRS, label="Label", scale=1, elem_id="lbl-mode",
                        info="pairs: the better response; steps: each <think> step")
        flt = gr.Dropdown(list(store.FILTERS), value="unlabeled", label="Show", scale=1)
        src = gr.Dropdown([("all sources", "")] + [(s, s) for s in store.sources(ws)], value="", label="Source",
                          scale=1, elem_id="lbl-source")
        raw = gr.Checkbox(label="Raw text", value=False, scale=1, min_width=110)  # whole words in a notebook cell
    with gr.Row() as order_row:
        order_by = gr.Dropdown([("usual order", "")] + scorer_runs(ws, ("outcome",)), value="", scale=2,
                               label="Active labeling: most uncertain first, by reward model")
        order_msg = gr.HTML()
    return name, mode, flt, src, raw, order_row, order_by, order_msg


def _wire_keys(studio: Studio, buttons: dict, b_undo, comment, queue: dict, current, screen, outs: list) -> None:
    """Each label button (and its key) saves for the pair on screen, then shows the next; undo takes it back."""
    for side, btn in buttons.items():  # screen last: ON_SCREEN_JS fills the last input
        # every press reaches the page's guard (HEAD), which refuses in words one made while the last is saved
        btn.click(**inputs.bind(partial(label, studio, side), LabelInputs, **queue, shown=current, comment=comment,
                                screen=screen),
                  outputs=[*outs, comment], js=ON_SCREEN_JS, show_progress="hidden", trigger_mode="multiple").then(
            None, js=SAVED_JS)
    b_undo.click(**inputs.bind(partial(undo, studio), LabelInputs, **queue, shown=current), outputs=outs,
                 show_progress="hidden", trigger_mode="multiple").then(None, js=SAVED_JS)


def _lists_now(studio: Studio) -> tuple:
    """What other tabs or pages may have changed since the Label tab was drawn: the reward models to order by, the
    sources, the guidelines (shown, stored). The tab's select brings them; the page fires it as it loads too."""
    return (gr.update(choices=[("usual order", "")] + scorer_runs(studio.ws, ("outcome",))), sources_update(studio),
            *guidelines_now(studio))


def build(studio: Studio):
    ws = studio.ws
    key = "rloo-studio:" + browser_secret(ws)[:16]  # this workspace's values in the browser's localStorage
    session = gr.Textbox(visible=False)  # this browser's id (start_js)
    boot = gr.Textbox(visible=False)  # the app start this browser saw last
    remembered = gr.Textbox(visible=False)  # the name this browser used, until the first view shows it (FILL_NAME_JS)
    current = gr.State(None)  # the pair on the page (None: none is); set by every event that draws the view
    active = gr.State(None)  # active labeling: {"order": [pair ids], "info": {pair id: (margin, 'a'|'b')}}
    screen = gr.Textbox(visible=False)  # filled in the browser with the pair id on the page (ON_SCREEN_JS)
    name, mode, flt, src, raw, order_row, order_by, order_msg = _choosers(ws)
    empty_box, b_demo_empty = label_data.empty_notice(studio)
    guides, stored_guides = guidelines_section(studio)
    gr.HTML("<div id='lbl-busy-text' class='lbl-msg-error'></div>", elem_id="lbl-busy")  # HEAD fills it
    pair_box, drawn, buttons, b_undo, comment = _pair_column()
    step_box, step_outs, who, step_runs = label_steps.build(studio, name, mode, session)
    mode_outs = [step_box, pair_box, flt, src, raw, order_row, *step_outs]  # label_steps.mode_shown's outputs
    outs = [*drawn, current, *buttons.values()]  # label_render.view's outputs
    queue = dict(name=name, session=session, filter=flt, source=src, raw=raw, active=active, mode=mode)  # next pair
    redraw_steps = inputs.bind(partial(label_steps.redraw, studio), StepInputs, **who)

    def next_pair(callback):  # an event that shows the annotator's next pair
        return inputs.bind(partial(callback, studio), LabelInputs, **queue)

    _wire_keys(studio, buttons, b_undo, comment, queue, current, screen, outs)
    # Enter leaves the name box (so that the keys label), and leaving it loads that annotator's queue.
    name.submit(None, js="() => { document.activeElement.blur(); }")
    name.blur(**next_pair(relabel), outputs=outs)
    name.blur(None, name, None, js=remember_js(key, "name"))  # remembered at once: a reload right after keeps it
    name.blur(**redraw_steps, outputs=step_outs)
    mode.input(None, mode, None, js=remember_js(key, "mode"))  # kept by the browser, as the name
    mode.input(**inputs.bind(partial(label_steps.mode_shown, studio), StepInputs, **who), outputs=mode_outs).then(
        **next_pair(relabel), outputs=outs)  # back to pairs: the session's pair (nothing in step mode: show_next)
    flt.change(**next_pair(relabel), outputs=outs)
    src.change(**next_pair(relabel), outputs=outs)
    raw.change(**inputs.bind(partial(rerender, studio), LabelInputs, name=name, raw=raw, shown=current, active=active),
               outputs=outs, show_progress="hidden")
    order_by.change(**inputs.bind(partial(choose_order, studio), LabelInputs, **queue, order_by=order_by),
                    outputs=[active, order_msg, *outs])

    label_data.build(studio, queue=queue, outs=outs, src=src, empty_box=empty_box, b_demo_empty=b_demo_empty,
                     then=dict(**redraw_steps, outputs=step_outs))

    annotators_panel(studio)  # filled when opened (closed as the page loads)

    def on_load(demo: gr.Blocks, tab: gr.Tab) -> None:
        # Restore the name this browser used and its id, continue where the annotator left off (its claimed pair).
        # The mode first (a page in step mode draws its step and claims no pair), as the browser remembers it.
        # The remembered name goes into the name box only with the first view: a page showing the name without its
        # pair reads as "nothing to label" (the views read the name from localStorage meanwhile: load_inputs_js).
        load_view = {**queue, "boot": boot, "shown": current}
        demo.load(None, name, [remembered, session, boot, mode], js=start_js(key)).then(
            **inputs.bind(partial(label_steps.mode_shown, studio), StepInputs, **who), outputs=mode_outs,
            js=load_inputs_js(key, list(who))).then(
            **inputs.bind(partial(first_view, studio), LabelInputs, **load_view), outputs=[*outs, boot],
            js=load_inputs_js(key, list(load_view))).then(
            None, [name, remembered], name, js=FILL_NAME_JS).then(
            None, boot, None, js=remember_js(key, "boot")).then(
            partial(label_data.empty_update, studio), None, empty_box)
        # Back on the tab: draw the session's pair again, so that the page and the current pair agree.
        on_tab = inputs.bind(partial(back_on_tab, studio), LabelInputs, **queue, shown=current)
        tab.select(**on_tab, outputs=outs).then(**step_runs).then(**redraw_steps, outputs=step_outs).then(
            partial(_lists_now, studio), None, [order_by, src, guides, stored_guides])

    return on_load
