"""Form widgets shared by the tabs: one widget per config field (core.form.FormField), and the model
dropdown (the demo model first, then local folders and cached hub models; any other value may be typed)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import partial

import gradio as gr

from rloo_studio.core import model_choices
from rloo_studio.core.form import FormField

HELP = {  # one line where the field's documentation runs long
    "enable_thinking": "Hybrid chat templates (Qwen3): reason in <think> first; off makes the template close an "
                       "empty block. Templates without the switch ignore it.",
    "answer_format": "How the answer after </think> is read: last_number (the demo), boxed (\\boxed{}), "
                     "hash (#### N, GSM8K).",
    "model": "The demo model, a local folder or a Hugging Face cache entry; type any other folder or cached hub id.",
}
MODEL_KEYS = ("model", "policy", "completer", "teacher")  # settings that name a model: the model dropdown
MODEL_LIST_NOTE = "Listed: the demo model, local folders and cached hub models (name · size · where)."


@dataclass(frozen=True)
class Pick:
    """A dropdown of these choices (values or (label, value) pairs); custom: any other value may be typed."""
    choices: list
    custom: bool = True


@dataclass(frozen=True)
class Ticks:
    """Tick-boxes; the form's value 'a, b' becomes the list of ticked names."""
    choices: list


@dataclass(frozen=True)
class Range:
    """A slider for a whole number from low to high."""
    low: int
    high: int


def elem_id(prefix: str, key: str) -> str:
    return f"{prefix}-" + key.replace(".", "-").replace("_", "-")


def widget_value(f: FormField, value, special=None):
    """A form value as its widget holds it: tick-boxes take a list, not 'a, b'; a number box None, not ''."""
    if isinstance(special, Ticks):
        return value.split(", ") if value else []
    if f.kind == "optional_float" and value == "":
        return None
    return value


def models(workspace_root=None) -> list[tuple[str, str]]:
    return model_choices.dropdown_choices(workspace_root)


def model_dropdown(value, label: str, elem_id: str, workspace_root=None, info: str | None = HELP["model"], **kw):
    """The model field of a tab: discovered models to pick from (refreshed on focus), any value typed."""
    listed = models(workspace_root)
    dd = gr.Dropdown(listed, value=value, label=label, info=info, allow_custom_value=True, elem_id=elem_id, **kw)
    shown = gr.State(listed)
    dd.focus(partial(_refresh_models, workspace_root), shown, [dd, shown], show_progress="hidden", queue=False)
    dd.input(warn_unavailable, dd, None, show_progress="hidden")
    return dd


def warn_unavailable(value) -> None:
    """Said as soon as a model is typed or picked that this machine does not have (not cached, no such
    folder), before anything is started with it."""
    problem = model_choices.availability(str(value or "").strip()) if str(value or "").strip() else None
    if problem:
        gr.Warning(problem)


def _refresh_models(workspace_root, shown):
    """New choices only when the models on disk changed: an update redraws the field from the server's value
    and would drop text being typed into it."""
    now = models(workspace_root)
    if now == shown:
        return gr.skip(), gr.skip()
    return gr.Dropdown(choices=now), now


def help_text(f: FormField) -> str:
    return HELP.get(f.key, f.help) or ""


def brief(text: str) -> str:
    """A help text's first clause (up to its first '. ', ': ' or '; '): what a setting is, in one line, where the
    settings must stay in view; the whole text is one click away (ui/job_section.py)."""
    first = re.split(r"(?<!e\.g)(?:\. |: |; )", text, maxsplit=1)[0].rstrip(".")
    if first.count("(") > first.count(")"):  # cut inside a bracket: the clause before it
        first = first[:first.rindex("(")].rstrip()
    return first


def widget(f: FormField, value, prefix: str, special=None, workspace_root=None, short: bool = False, **kw):
    """The widget of one config field. `special` (Pick, Ticks, Range) overrides what the field's kind
    gives; a field that names a model (MODEL_KEYS) is always the model dropdown. `short`: its help cut to
    the first clause (`brief`)."""
    info = brief(help_text(f)) if short else help_text(f)
    kw = dict(label=f.key, info=info or None, elem_id=elem_id(prefix, f.key), **kw)
    value = widget_value(f, value, special)
    if f.key in MODEL_KEYS:
        return model_dropdown(value, workspace_root=workspace_root, **kw)
    if isinstance(special, Pick):
        return gr.Dropdown(special.choices, value=value, allow_custom_value=special.custom, **kw)
    if isinstance(special, Ticks):
        return gr.CheckboxGroup(special.choices, value=value, **kw)
    if isinstance(special, Range):
        return gr.Slider(special.low, special.high, step=1, value=value, **kw)
    if f.kind == "bool":
        return gr.Checkbox(value=value, **kw)
    if f.kind == "choice":
        return gr.Dropdown(list(f.choices), value=value, **kw)
    if f.kind in ("int", "float", "optional_float"):
        return gr.Number(value=value, precision=0 if f.kind == "int" else None, **kw)
    if f.kind == "mapping":  # YAML, one setting a line
        return gr.Textbox(value=value, lines=3, max_lines=12, placeholder="warmup_ratio: 0.1", **kw)
    return gr.Textbox(value=value, max_lines=1, **kw)
