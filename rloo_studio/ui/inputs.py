"""Named inputs for the tabs' callbacks.

A tab declares what its callbacks read as a frozen dataclass (label_render.LabelInputs, records_tab.Search, …)
and `bind` wires widgets to its fields by name: the callback takes one object with named fields, never a long
list of positional values, and each event names the widgets it reads (the fields it leaves out keep their
defaults). Gradio passes widget values by position; `bind` is the one place that turns them into the dataclass.
"""
from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable


def bind(fn: Callable, form: type, /, **widgets) -> dict:
    """`fn=` and `inputs=` for an event listener: `button.click(**bind(fn, Form, name=box, ...), outputs=...)`.

    fn is called with one `form` built from these widgets' values, by field name; after it come what Gradio
    adds itself (a `progress=gr.Progress()` parameter of fn). The widgets are sent in the order given, so a
    `js=` that rewrites the last value rewrites the last widget named here. A generator fn streams as before."""
    names = list(widgets)
    unknown = sorted(set(names) - {f.name for f in dataclasses.fields(form)})
    if unknown:
        raise TypeError(f"{form.__name__} has no field {', '.join(unknown)}")

    def split(values: tuple):
        return form(**dict(zip(names, values))), values[len(names):]

    if inspect.isgeneratorfunction(fn):
        def call(*values):
            named, added = split(values)
            yield from fn(named, *added)
    else:
        def call(*values):
            named, added = split(values)
            return fn(named, *added)
    # Gradio reads the signature to count inputs and to find what it adds (a gr.Progress default): one parameter
    # per widget, then fn's own parameters after the form.
    per_widget = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names]
    after_form = list(inspect.signature(fn).parameters.values())[1:]
    call.__signature__ = inspect.Signature(per_widget + after_form)
    call.__name__ = call.__qualname__ = getattr(fn, "__name__", None) or getattr(fn, "func", call).__name__
    return {"fn": call, "inputs": list(widgets.values())}
