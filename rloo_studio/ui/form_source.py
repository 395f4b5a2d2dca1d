"""Whose settings a job form holds, said on a line above it: the displayed run's, or a new run's (a preset's, as
edited) beside a run of other settings, with one click to load the run's settings into the form.

A page reloaded shows the form at its first preset beside the run the panel follows: without this line a person
read a demo-cpu form as the settings of a process-reward run of 160 steps. The line is worked out again when the run
shown changes (the run panel's `shown` state), when a preset or a run's settings fill the form, and when a setting is
typed; the comparison is runs.lifecycle's (`differing`: as the form holds values; a preset's 'latest' matches the run
it named at launch).
"""
from __future__ import annotations

import html

import gradio as gr

from rloo_studio.core import form
from rloo_studio.core.errors import StudioError, explain
from rloo_studio.runs import lifecycle
from rloo_studio.runs.jobs import KINDS
from rloo_studio.ui.fields import widget_value

LOAD = "Load this run's settings"
CSS = """
.form-source {align-items:center; gap:.5em !important}
.form-source > .form-note {flex:3 1 0% !important}
.form-source .form-note .html-container {padding:0 !important}
.form-source .form-note .prose {font-size:.84em; line-height:1.3}
.form-source > button {flex:1 1 0% !important}
.block.form-note:has(.prose:empty), .form-source:not(:has(.form-note .prose:not(:empty))) {display:none}
"""


def config_of(kind: str, values) -> object:
    """Widget values (the kind's form fields, in order) -> the kind's validated config; a ConfigError naming the
    field."""
    return form.parse(KINDS[kind].config_class(), list(values))


def as_widgets(fields: list, cfg, specials: dict) -> list:
    """A config's values as the form's widgets hold them (tick-boxes a list, an empty number box None)."""
    return [widget_value(f, v, specials.get(f.key)) for f, v in zip(fields, form.values(cfg))]


def note(ws, kind: str, rid, preset, values) -> tuple[str, bool]:
    """(the line in HTML, whether the form differs from run `rid`'s settings); ('', False) with no run shown."""
    if not rid:
        return "", False
    shown = f"<b>{html.escape(rid)}</b>"
    try:
        saved = lifecycle.saved_config(ws, kind, rid)
    except Exception as exc:  # noqa: BLE001 — an old or hand-edited config.yaml: said, nothing to load
        return f"The run shown, {shown}, has settings this form cannot hold: {html.escape(explain(exc))}", False
    run = html.escape(lifecycle.settings_words(ws, kind, saved))
    try:
        held = config_of(kind, values)
    except Exception:  # noqa: BLE001 — a setting typed that is not valid yet: Check settings says what
        held = None
    from_run = lifecycle.differing(held, saved) if held is not None else None
    if from_run == []:
        return f"The form holds the settings of the run shown, {shown} ({run}): Launch starts a new run with them.", \
            False
    return f"The form holds a new run's settings ({_form_words(ws, kind, preset, held, rid, from_run)}); the run " \
           f"shown is {shown} ({run}).", True


def _form_words(ws, kind: str, preset, held, rid: str, from_run: list | None) -> str:
    """Where the form's settings come from, whichever is nearer: 'preset demo-cpu', 'preset demo-cpu with max_steps
    changed', 'the run's settings with beta changed'; 'preset demo-cpu, edited' while a setting is not valid."""
    said = f"preset {html.escape(preset)}" if preset else "no preset"
    if held is None:
        return f"{said}, edited"
    try:
        changed = lifecycle.differing(KINDS[kind].preset_config(preset, ws), held) if preset else None
    except StudioError:
        changed = None
    if changed is None or len(from_run) < len(changed):
        said, changed = f"the settings of {html.escape(rid)}", from_run
    return said + (f" with {html.escape(lifecycle.names(changed))} changed" if changed else "")


def on_note(studio, kind: str, rid, preset, *values):
    """(the line, the Load button shown only when there is something to load)."""
    text, differs = note(studio.ws, kind, rid, preset, values)
    return f"<div>{text}</div>" if text else "", gr.update(visible=differs)


def on_load(studio, kind: str, fields: list, specials: dict, rid) -> list:
    """The form filled with run `rid`'s saved settings, and the preset they are nearest (the line above the form says
    what differs from it); the form as it was when the run's settings cannot be read (said in a toast)."""
    try:
        saved = lifecycle.saved_config(studio.ws, kind, rid)
    except Exception as exc:  # noqa: BLE001 — a run deleted meanwhile, a config.yaml that cannot be read
        gr.Warning(explain(exc))
        return [gr.skip()] * (len(fields) + 1)
    near = lifecycle.nearest_preset(studio.ws, kind, saved)
    return [*as_widgets(fields, saved, specials), near[0] if near else gr.skip()]


def build(kind: str) -> tuple[gr.HTML, gr.Button]:
    """The line and its Load button, where the form starts (both empty and hidden until a run is shown)."""
    with gr.Row(equal_height=True, elem_classes=["form-source"]):
        line = gr.HTML(elem_id=f"{kind}-form-note", elem_classes=["form-note"], padding=False, container=False)
        load = gr.Button(LOAD, size="sm", visible=False, scale=1, min_width=170, elem_id=f"{kind}-load-run")
    return line, load
