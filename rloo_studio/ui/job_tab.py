"""A job kind's section as a tab lays it out, and the default tab of a kind whose entry names no tab module of its own
(runs.jobs.JobKind.tab None, tab_title set): the form from its config and presets, Check settings, Launch / Stop /
Resume, the run panel with its kind's charts, and the runs list of its runs with each run's config and command.
The Process reward tab lays out its two sections with the same `section`; the Reward model and RLOO tabs add what is
theirs around JobSection's parts.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import gradio as gr

from rloo_studio.runs.jobs import JobKind
from rloo_studio.studio import Studio
from rloo_studio.ui import job_section
from rloo_studio.ui.job_section import JobSection, Shown

IN_VIEW = 6  # a default tab keeps this many settings in view, two to a row; the rest fold into "Other settings"


def section(studio: Studio, kind: str, layout: list, preset: str | None, empty: str, launch: str, title: str):
    """A job section: form beside the live run (actions, the run panel with the kind's charts), then its runs list
    folded under `title`; returns (section, follow-hooks)."""
    s = JobSection.start(studio, kind)
    watched = gr.State(None)
    with gr.Row():
        with gr.Column(scale=2, min_width=420):
            s.preset_dropdown(preset)
            start = s.kind.preset_config(preset, studio.ws) if preset else s.kind.config_class()()
            s.accordions(layout, start, min_width=140)
        with gr.Column(scale=3):  # the live run beside the form, in view while it trains
            s.actions(launch=launch)
            panel = s.run_panel(empty)
            charts = s.kind.chart_fn()
            if charts:
                panel.add_charts([(c.title, c.title) for c in charts([])], per_row=2, height=280)
    with gr.Accordion(title, open=False):
        s.runs_list(title)
    actions = job_section.wire(s, watched)
    job_section.clear_messages(s, actions, [])
    follow = panel.follow(partial(job_section.on_tick, s), 2.0, Shown, {"watched": watched},
                          [s.runs, s.config, s.cli], also=(watched,), after=(s.resumed,))
    return s, follow


def default_layout(fields: list) -> list:
    """The first IN_VIEW settings in view, two to a row (a mapping such as `trl` folds with the rest)."""
    keys = [f.key for f in fields if f.kind != "mapping"][:IN_VIEW]
    return [(None, tuple(tuple(keys[i:i + 2]) for i in range(0, len(keys), 2)), True)]


@dataclass(frozen=True)
class DefaultTab:
    """What ui/app.py takes from a tab module (build, CSS), for a kind that has none of its own."""

    kind: JobKind
    CSS: str = ""

    def build(self, studio: Studio):
        k = self.kind
        names = k.preset_names(studio.ws)
        what = f"{k.title} run"
        gr.Markdown(f"### {k.tab_title}\nRuns of the kind *{k.name}*: pick a preset or change the settings, check "
                    "them, then launch; the run's progress and charts follow beside the form.")
        _, follow = section(studio, k.name, default_layout(job_section.fields_of(k.name)),
                            names[0] if names else None, f"No {what} yet. Check the settings, then press "
                            "<b>Launch</b>.", "Launch", f"{k.tab_title} runs: config and command")
        return follow
