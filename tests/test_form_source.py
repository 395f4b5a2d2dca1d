"""The line above a job form (ui/form_source.py): whose settings the form holds beside the run shown, and Load this
run's settings, through its callbacks without a browser (tests/test_form_source_ui.py reads it in Chromium)."""
from rloo_shown_run import PRESET, finished_run

from rloo_studio.core import form
from rloo_studio.runs import lifecycle
from rloo_studio.runs.jobs import KINDS
from rloo_studio.ui import form_source
from rloo_studio.ui.job_section import fields_of


class FakeStudio:
    def __init__(self, ws):
        self.ws = ws


def values(cfg) -> list:
    return form_source.as_widgets(fields_of("rloo"), cfg, {})


def test_the_line_says_whose_settings_the_form_holds_and_load_fills_it(workspace):
    rid = finished_run(workspace)
    preset = KINDS["rloo"].preset_config("demo-cpu", workspace)
    text, differs = form_source.note(workspace, "rloo", rid, "demo-cpu", values(preset))
    assert differs and text == (f"The form holds a new run's settings (preset demo-cpu); the run shown is <b>{rid}</b> "
                                f"({PRESET} settings with max_steps and save_steps changed).")
    # the preset's 'latest' process reward run matches the run it named at launch: only the steps differ
    assert lifecycle.differing(KINDS["rloo"].preset_config(PRESET), lifecycle.saved_config(workspace, "rloo", rid)) \
        == ["max_steps", "save_steps"]

    filled = form_source.on_load(FakeStudio(workspace), "rloo", fields_of("rloo"), {}, rid)
    assert filled[-1] == PRESET  # the preset its settings are nearest
    saved = lifecycle.saved_config(workspace, "rloo", rid)
    assert form.parse(type(saved), filled[:-1]) == saved
    text, differs = form_source.note(workspace, "rloo", rid, PRESET, filled[:-1])
    assert not differs and text.startswith(f"The form holds the settings of the run shown, <b>{rid}</b> ({PRESET} "
                                           "settings with max_steps and save_steps changed): Launch starts a new run")

    edited = list(filled[:-1])
    edited[[f.key for f in fields_of("rloo")].index("beta")] = 0.5
    text, differs = form_source.note(workspace, "rloo", rid, PRESET, edited)
    assert differs and f"(the settings of {rid} with beta changed)" in text
    edited[[f.key for f in fields_of("rloo")].index("beta")] = "not a number"
    assert f"(preset {PRESET}, edited)" in form_source.note(workspace, "rloo", rid, PRESET, edited)[0]


def test_no_run_no_line_and_a_run_whose_settings_cannot_be_read_is_said(workspace):
    assert form_source.note(workspace, "rloo", None, "demo-cpu", []) == ("", False)
    workspace.upsert_run("rloo-old", kind="rloo", name="rloo-old", status="completed")
    (workspace.run_dir("rloo-old")).mkdir(parents=True)  # no config.yaml
    text, differs = form_source.note(workspace, "rloo", "rloo-old", "demo-cpu", [])
    assert not differs and text.startswith("The run shown, <b>rloo-old</b>, has settings this form cannot hold")


def test_names_read_as_a_sentence():
    assert [lifecycle.names(k) for k in (["a"], ["a", "b"], ["a", "b", "c"], list("abcde"))] == [
        "a", "a and b", "a, b and c", "a, b, c and 2 more"]
