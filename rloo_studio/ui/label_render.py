"""What the Label tab draws for a pair: prompt, the two sides, status line, progress, current pair, and
whether the label buttons take a press.

Every event that draws the view also returns the current pair (None when the page shows none),
so that the page and the session's current pair never disagree; the label buttons are disabled
(and look it) while no pair is on the page.
"""
from __future__ import annotations

import html
from dataclasses import dataclass

import gradio as gr

from rloo_studio.label import store
from rloo_studio.studio import Studio
from rloo_studio.ui import render

NO_NAME = "Enter your name above to start labeling: each label records who gave it."
EMPTY = "<i>Nothing left under this filter. Import or generate pairs, or choose another filter.</i>"
KEYS = ("left", "right", "tie", "skip", "flag")  # the label buttons, in the order of the view's last outputs
NOTHING_SAVED = "No pair was on screen, so nothing was saved."
SAID = {"a": "A is better", "b": "B is better", "tie": "tie", "skip": "skip"}  # a choice, in the letters shown
PAIRS, STEPS = "Pairs", "Steps"  # the Label tab's modes: compare two responses, or label one response's steps


@dataclass(frozen=True)
class LabelInputs:
    """What the Label tab's events read from the page (ui.inputs.bind): each event binds the widgets it
    needs, the other fields keep these defaults."""
    name: str = ""  # the annotator's name, as typed
    session: str = ""  # this browser's id (kept in localStorage): the session its claimed pair belongs to
    filter: str = "unlabeled"  # which pairs to show (store.FILTERS)
    source: str = ""  # only pairs of this source ('' all)
    raw: bool = False  # the texts as typed, not rendered
    active: dict | None = None  # active labeling: {"order": [pair ids], "info": {pair id: (margin, 'a'|'b')}}
    shown: store.Shown | None = None  # the pair on the page (None: none is)
    comment: str = ""  # saved with the label
    screen: str = ""  # the id of the pair the page shows when a key is pressed (filled in the browser)
    order_by: str = ""  # the reward run that orders the queue by uncertainty ('' the usual order)
    boot: str = ""  # the app start this browser saw last (kept in localStorage; '' none): a new one says it restarted
    mode: str = PAIRS  # the tab's mode: in step mode no pair is drawn (or claimed)


def status_html(text: str, error: bool = False) -> str:
    """A line for the Label tab's status box: what happened, or (error) what went wrong."""
    return f"<span class='{'lbl-msg-error' if error else ''}'>{html.escape(text)}</span>" if text else ""


def progress_md(studio: Studio, name: str) -> str:
    p = store.progress(studio.ws, name or None)
    pace = f" · {p['per_minute']:.1f} labels/min" if p["per_minute"] else ""
    imported = f" · {p['imported_only']} more with imported labels only" if p["imported_only"] else ""
    skipped = f" · {p['skipped']} skipped" if p["skipped"] else ""
    mine = (f" · you: **{p['mine']}** labeled, {p['my_skips']} skipped · **{p['mine_today']}** today{pace}"
            if name else "")
    return f"**{p['human_labeled']} / {p['total']}** pairs labeled by people{imported}{skipped}{mine}"


def view(studio: Studio, shown: store.Shown | None, name: str, raw: bool, note: str = "", error: bool = False,
         active: dict | None = None, empty: str = EMPTY):
    """Outputs for: prompt, left, right, status line, progress, current pair (None: nothing on screen), then
    each label button (KEYS): enabled only while a pair is on screen."""
    return (*_drawn(studio, shown, name, raw, note, error, active, empty),
            *(gr.update(interactive=shown is not None and bool((name or "").strip())) for _ in KEYS))


def _drawn(studio: Studio, shown: store.Shown | None, name: str, raw: bool, note: str, error: bool,
           active: dict | None, empty: str):
    name = (name or "").strip()
    if not name:
        return "", "", "", status_html(f"{note} {NO_NAME}" if note else NO_NAME, error), progress_md(studio, ""), None
    if shown is None:
        return empty, "", "", status_html(note, error), progress_md(studio, name), None
    flag = f" · flagged: {shown.flag}" if shown.flag else ""
    mine = f" · your label: {SAID[shown.as_shown(shown.current)]}" if shown.current else ""
    hint = ""
    guess = (active or {}).get("info", {}).get(str(shown.pair_id))
    if guess:  # active labeling: the reward model's guess, in the sides as shown
        margin, side = guess
        shown_side = "A" if (side == "a") == shown.a_shown_left else "B"
        hint = f" · reward model suggests {shown_side} (margin {abs(margin):.3f})"
    status = f"pair #{shown.pair_id} · source {shown.source}{flag}{mine}{hint}"
    if note and not error:
        status = f"{html.escape(note)} · {status}"
    elif note:
        status = status_html(note, True)
    prompt = f"<div data-pair='{shown.pair_id}'>{prompt_html(shown)}</div>"
    return (prompt, render.response_html(shown.left, raw), render.response_html(shown.right, raw), status,
            progress_md(studio, name), shown)


def unchanged():
    """Outputs that leave the view as it is (prompt … current, the buttons): what an error does to the pair on
    screen."""
    return (gr.skip(),) * (6 + len(KEYS))


def show_next(studio: Studio, inputs: LabelInputs, note: str = ""):
    """The view of the next pair of the annotator's queue (name, session, filter, source, raw, active). In step mode
    the hidden pair view is left as it is: no pair is claimed that nobody sees."""
    if inputs.mode == STEPS:
        return unchanged()
    name = (inputs.name or "").strip()
    if not name:
        return view(studio, None, "", inputs.raw, note)
    try:
        shown = store.next_pair(studio.ws, name, inputs.session, inputs.filter, inputs.source,
                                prefer=(inputs.active or {}).get("order"))
        return view(studio, shown, name, inputs.raw, note, active=inputs.active)
    except ValueError as e:
        return view(studio, None, name, inputs.raw, str(e), True)


def sources_update(studio: Studio):
    return gr.update(choices=[("all sources", "")] + [(x, x) for x in store.sources(studio.ws)])


def prompt_html(shown) -> str:
    """The prompt; a multi-turn one as its turns, each named by its role, the last user turn last."""
    if not shown.turns:
        return render.esc(shown.prompt)
    return "".join(f"<div class='turn turn-{html.escape(str(t.get('role', '')))}'>"
                   f"<b>{html.escape(str(t.get('role', '')))}</b>: "
                   f"{render.esc(str(t.get('content', '')))}</div>" for t in shown.turns)
