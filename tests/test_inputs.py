"""ui/inputs.bind: a callback gets one dataclass of the widgets' values by field name, and Gradio still adds
its gr.Progress and still streams a generator (the tabs' browser tests drive the real events)."""
from dataclasses import dataclass
from functools import partial

import gradio as gr
import pytest
from gradio.helpers import special_args

from rloo_studio.ui.inputs import bind


@dataclass(frozen=True)
class Form:
    name: str = ""
    count: int = 0
    mode: str = "usual"


def test_values_arrive_by_field_name_in_the_order_the_widgets_are_named_and_unnamed_fields_keep_defaults():
    def callback(tag, form: Form, progress=gr.Progress()):
        progress(0.5, desc="half")
        return tag, form, isinstance(progress, gr.Progress)

    with gr.Blocks():
        count, name = gr.Number(), gr.Textbox()
        event = bind(partial(callback, "t"), Form, count=count, name=name)
    assert event["inputs"] == [count, name]  # a js= that rewrites the last value rewrites `name`
    values, progress_at, _, _ = special_args(event["fn"], [3, "ann"])  # as Gradio calls it: it adds the Progress
    assert progress_at == 2
    assert event["fn"](*values) == ("t", Form(name="ann", count=3, mode="usual"), True)


def test_a_generator_still_streams_and_a_misnamed_widget_is_refused():
    def stream(form: Form):
        for k in range(form.count):
            yield f"{form.name} {k}"

    with gr.Blocks():
        name, count = gr.Textbox(), gr.Number()
        event = bind(stream, Form, name=name, count=count)
        assert list(event["fn"]("ann", 2)) == ["ann 0", "ann 1"]
        with pytest.raises(TypeError, match="Form has no field colour"):
            bind(stream, Form, colour=name)
