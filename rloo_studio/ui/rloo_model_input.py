"""Under the RLOO completions table: pick one completion (a click on its row, or the list) and see it as the
policy and, when the run used one, the reward model read it: the exact templated text with token ids."""
from __future__ import annotations

from functools import partial

import gradio as gr

from rloo_studio.core.errors import explain
from rloo_studio.rloo import completions, health, launch_form
from rloo_studio.runs.catalog import find_run
from rloo_studio.studio import Studio
from rloo_studio.ui import render


def _run(ws, rid) -> str | None:
    try:
        return find_run(ws, rid, "rloo")["id"]
    except Exception:  # noqa: BLE001 — a run id typed into the Run box that names no run: nothing to show
        return None


def _window(studio: Studio, rid: str) -> list[dict]:
    return completions.read_samples(studio.ws.run_dir(rid), last_steps=health.WINDOW)  # what the table shows


def _shown_run(studio: Studio, rid) -> str | None:
    typed = str(rid or "").strip()
    return _run(studio.ws, typed) if typed else launch_form.latest_run(studio.ws)


def on_pick_choices(studio: Studio, rid):
    """The picker lists the completions of the run shown, in the table's order."""
    rid = _shown_run(studio, rid)
    return gr.Dropdown(choices=completions.completion_picks(_window(studio, rid)) if rid else [])


def on_row(studio: Studio, rid, evt: gr.SelectData):
    """A click on a row of the completions table picks that completion."""
    rid, label = _shown_run(studio, rid), completions.pick_label(evt.row_value or [])
    picks = completions.completion_picks(_window(studio, rid)) if rid else []
    key = next((v for lab, v in picks if lab == label), None)
    return gr.Dropdown(choices=picks, value=key) if key else gr.skip()


def on_pick(studio: Studio, rid, key):
    """The picked completion as the policy (and the reward model, if the run used one) read it."""
    rid = _shown_run(studio, rid)
    if not key or not rid:
        return ""
    sample = completions.picked_sample(_window(studio, rid), key)
    if sample is None:
        return render.message_html(f"That completion is no longer among the last {health.WINDOW} steps shown; "
                                   "pick another.")
    try:
        return render.model_views_html(completions.model_views(studio.ws, rid, sample))
    except Exception as exc:  # noqa: BLE001 — a run whose model is gone: say so
        return render.message_html(explain(exc))


def build(studio: Studio, run_dd, table) -> None:
    with gr.Accordion("What the model sees: one completion as the policy and the reward model read it", open=True):
        pick = gr.Dropdown([], label="Completion (click a row of the table, or pick one)", elem_id="rloo-pick")
        view = gr.HTML(elem_id="rloo-model-view")
    pick.focus(partial(on_pick_choices, studio), run_dd, pick, show_progress="hidden")
    def select(rid, evt: gr.SelectData):  # gradio passes the click only to a plain function, not to a partial
        return on_row(studio, rid, evt)

    table.select(select, run_dd, pick)
    pick.change(partial(on_pick, studio), [run_dd, pick], view)
