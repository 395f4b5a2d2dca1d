"""The job section of a kind's tab, built once from its registry entry (runs.jobs.JobKind): the preset and the
config form (from the kind's config class), Check settings, Launch / Stop / Resume with their answers, the run
panel, the kind's runs list with a run's config.yaml and command, and the accelerate launch files.

A kind's tab lays these parts out where it wants them and adds only what is its own (the RLOO completions, the
reward model's data pre-flight); the handlers below are the same for every kind. Element ids are
'<kind>-validate', '<kind>-launch', '<kind>-stop', '<kind>-resume', '<kind>-check' (what the buttons answer),
'<kind>-runs', '<kind>-preset' and '<kind>-<field>' for each setting.
"""
from __future__ import annotations

import html
from dataclasses import dataclass, field
from functools import partial

import gradio as gr
import yaml

from rloo_studio.core import form
from rloo_studio.core.errors import ConfigError, StudioError, explain
from rloo_studio.core.model_options import TRUST_WARNING
from rloo_studio.runs import catalog, lifecycle, plan, record
from rloo_studio.runs.jobs import KINDS, JobKind, load
from rloo_studio.runs.runner import ACTIVE
from rloo_studio.studio import Studio
from rloo_studio.ui import form_source, launch_panel, messages, render, run_panel
from rloo_studio.ui.fields import Ticks, help_text, widget
from rloo_studio.ui.form_source import as_widgets, config_of  # noqa: F401  (the tabs' form <-> config, here too)
from rloo_studio.ui.run_panel import RunPanel

CSS = form_source.CSS + """
.job-check .bad {color:var(--error-text-color, #c00); font-weight:600}
.job-check .ok {color:#15803d}
.block.job-check:has(.prose:empty), .block.run-failure:has(.prose:empty) {display:none}
.block.job-check, .job-check .html-container {padding:0 !important}
"""
RUN_HEADERS = ["run", "status", "started", "duration (s)", "key figures", "message"]
RUN_WIDTHS = ["20%", "9%", "13%", "10%", "23%", "25%"]


# -- the form, without layout: values as the widgets hold them ---------------------------------------------------

def fields_of(kind: str) -> list[form.FormField]:
    return form.fields(KINDS[kind].config_class())


def groups(fields: list, named: list) -> list:
    """`named` — (accordion title, rows of keys, open at start) — plus "Other settings" for the fields no group
    names, so that a setting added to a config always reaches the form."""
    seen = {k for _, rows, _ in named for keys in rows for k in keys}
    rest = tuple(f.key for f in fields if f.key not in seen)
    return named + ([("Other settings", (rest,), False)] if rest else [])


def answer(text: str, ok: bool) -> str:
    return render.message_html(text, ok)


def _trust(cfg) -> str:
    return answer(TRUST_WARNING, False) if getattr(cfg, "trust_remote_code", False) else ""


# -- handlers: the same for every kind (wired with functools.partial) ---------------------------------------------

def on_preset(studio: Studio, kind: str, fields: list, specials: dict, name):
    try:
        return as_widgets(fields, KINDS[kind].preset_config(name, studio.ws), specials)
    except StudioError as exc:  # a preset file of the user's that went wrong: said, the form kept
        gr.Warning(str(exc))
        return [gr.skip()] * len(fields)


def preset_choices(studio: Studio, kind: str) -> list[tuple[str, str]]:
    """(label, name) of the kind's presets, the workspace's own marked as the user's."""
    return [(p.label, p.name) for p in KINDS[kind].presets(studio.ws)]


def on_preset_list(studio: Studio, kind: str):
    """The preset list read again when it is opened: a preset file put in the workspace since shows at once."""
    return gr.update(choices=preset_choices(studio, kind))


def card_gib(value) -> float | None:
    """The "Plan for a card of" box: None (this machine) when empty, else a size in GiB, or a ConfigError."""
    text = str(value if value is not None else "").strip().removesuffix("GiB").removesuffix("GB").strip()
    if text in ("", "0"):
        return None
    try:
        size = float(text)
    except ValueError:
        size = 0.0
    if not 1 <= size <= 4096:
        raise ConfigError(f"Plan for a card of {value} GiB: type a card's memory between 1 and 4096 GiB, or leave "
                          "it empty to plan for this machine.")
    return size


def plan_html(p: plan.Plan) -> str:
    """Check settings' answer: the pre-flight's verdict, the memory line (red where it will not fit) and its parts."""
    if p.problem is None:
        head = answer("Settings are valid.", True)
    elif p.card_gib is not None:  # planning for another card: what this machine lacks is told, not judged
        head = note(f"On this machine: {p.problem}")
    else:
        head = answer(p.problem, False)
    parts = " · ".join(f"{k} {v}" for k, v in p.parts())
    return head + answer(p.line, p.fits is not False) + (note(parts) if parts else "")


def on_check(studio: Studio, kind: str, card, *values) -> str:
    """Check settings: the form as a config, the kind's pre-flight and the memory plan, for this machine or a card
    of the size typed beside it; nothing is started."""
    try:
        cfg = config_of(kind, values)
        return plan_html(plan.check(studio.ws, kind, cfg, card_gib(card))) + _trust(cfg)
    except Exception as exc:  # noqa: BLE001 — whatever was typed: one plain message, never a traceback
        return answer(explain(exc), False)


def on_fit(studio: Studio, kind: str, fields: list, specials: dict, card, *values) -> list:
    """Fit to this card: the form changed to the nearest settings the estimate says fit (core/memory_fit.py), and
    what changed; the form as it was where nothing needs or can change."""
    keep = [gr.skip()] * len(fields)
    try:
        cfg = config_of(kind, values)
        size = card_gib(card)
        fitted, e, changes = KINDS[kind].fit(cfg, studio.ws, size)
    except Exception as exc:  # noqa: BLE001 — a bad field or a model that is not there: said, nothing changed
        return [*keep, answer(explain(exc), False)]
    if e.fits is None:
        return [*keep, answer("There is no GPU here to fit: type the card's memory in GiB beside the button to plan "
                              "for it.", False)]
    if not changes or not e.fits:
        said = f"It fits {e.where} as it is: nothing to change." if e.fits else plan.words(e, e, changes)
        return [*keep, answer(said, bool(e.fits))]
    return [*as_widgets(fields, fitted, specials),
            answer(f"Fitted to {e.where} (estimated peak {e.total / 2**30:.1f} GiB): {'; '.join(changes)}. The "
                   "form now holds it: Launch, or Check settings to see the parts.", True)]


def on_launch(studio: Studio, kind: str, *values):
    """(run shown, answer): a new run started, or why not (nothing is created then)."""
    try:
        cfg = config_of(kind, values)
        rid = lifecycle.start(studio.ws, studio.runner, kind, cfg)
    except Exception as exc:  # noqa: BLE001 — a bad field, a missing model, too few examples, busy: a message
        return gr.skip(), answer(explain(exc), False)
    return rid, answer(f"Started run {rid}.", True) + _trust(cfg)


def on_stop(studio: Studio, kind: str, rid) -> str:
    try:
        rid = lifecycle.follow(studio.ws, kind, rid)
        return answer(lifecycle.stop(studio.ws, studio.runner, rid), True)
    except StudioError as exc:
        return answer(str(exc), False)


def on_resume(studio: Studio, kind: str, rid):
    """(run shown, answer): the run queued to continue from its last checkpoint with its own config."""
    try:
        rid = lifecycle.resume(studio.ws, studio.runner, kind, lifecycle.follow(studio.ws, kind, rid) or "")
    except StudioError as exc:
        return gr.skip(), answer(str(exc), False)
    return rid, answer(f"Resuming run {rid} {lifecycle.resume_plan(studio.runner.status(rid))}.", True)


def on_pick(evt: gr.SelectData):
    """A row clicked in the runs list: its run is shown."""
    return (evt.row_value or [None])[0]


def on_trust(on: bool) -> str:
    """Ticking trust_remote_code: warned at once, in a toast and in the answer box."""
    if not on:
        return ""
    gr.Warning(TRUST_WARNING)
    return answer(TRUST_WARNING, False)


# -- the runs list and a run's config: redrawn by the tab's tick when they changed -------------------------------

def runs_rows(ws, kind: str) -> tuple[list[str], list[list]]:
    """(headers, rows) of the kind's runs list: its own table when its entry names one, else the common one."""
    job = KINDS[kind]
    if job.runs_table:
        return load(job.runs_table)(ws)
    rows = [[s["id"], s["status"], s["started"], s["duration_s"], s["figures"], s["message"]]
            for s in catalog.summaries(ws) if s["kind"] == kind]
    return RUN_HEADERS, rows


def listed(section: JobSection, memo: dict) -> dict:
    """The runs list, worked out again when a run was added, deleted or changed state (at once), or an active one
    logged (at most every run_panel.CHARTS_S); sent only when its rows changed."""
    ws = section.studio.ws
    runs = ws.runs(section.kind.name)
    states = [(r["id"], r["status"], r["started"], r["ended"], r["message"]) for r in runs]
    logged = [section.panel.records(r["id"])[1] for r in runs if r["status"] in ACTIVE]
    if not run_panel.due(memo, "runs", states, logged, bool(logged)):  # a state at once; an active run's steps paced
        return {}
    _, rows = runs_rows(ws, section.kind.name)
    return {section.runs: rows} if run_panel.changed(memo, "rows", rows) else {}


def config_parts(section: JobSection, memo: dict, rid: str) -> dict:
    """The shown run's config (as its config.yaml holds it) and the command that repeats it, when the run shown
    changed."""
    if not run_panel.changed(memo, "config", rid):
        return {}
    ws = section.studio.ws
    cfg = catalog.run_config(ws, rid)
    return {section.config: yaml.safe_dump(cfg, sort_keys=False) if cfg else "",
            section.cli: record.set_command(section.kind.name, cfg, str(ws.root)) or ""}


@dataclass(frozen=True)
class Shown:
    """What a section's tick reads: the run clicked in its runs list (None: the active or newest), and what the
    page shows (run_panel.memo)."""
    watched: str | None = None
    memo: dict | None = None


def on_tick(section: JobSection, shown: Shown, fresh: bool = False, extra=None) -> dict:
    """A section's redraw: the run clicked in the runs list (a run deleted since: the newest again), else the
    active or newest; its status, its kind's charts (JobKind.charts), the runs list and the run's config.
    `extra(memo, run id or None, records)`: what the tab adds of its own (a dict of updates)."""
    panel = section.panel
    memo = run_panel.remembered(shown.memo, fresh)
    rid = panel.find(shown.watched)[0] or panel.find(None)[0]
    out = {panel.memo: memo, **(listed(section, memo) if section.runs is not None else {})}
    if not rid:
        return {**out, **panel.nothing(memo), **(extra(memo, None, []) if extra else {})}
    records, version = panel.records(rid)
    out |= panel.show(memo, rid, records)
    draw = section.kind.chart_fn()
    if draw and panel.plots:
        out |= panel.charts(memo, [rid], version, lambda: draw(records), rid)
    out |= config_parts(section, memo, rid) if section.config is not None else {}
    return out | (extra(memo, rid, records) if extra else {})


# -- the parts, built where the tab calls them -------------------------------------------------------------------

@dataclass
class JobSection:
    """A kind's job section: what its tab lays out, wires with `wire`, and reads in its tick."""

    studio: Studio
    kind: JobKind
    fields: list = field(default_factory=list)
    specials: dict = field(default_factory=dict)  # key -> ui.fields.Pick / Ticks / Range: a widget of its own
    widgets: dict = field(default_factory=dict)
    preset: gr.Dropdown | None = None
    check: gr.HTML | None = None  # what the buttons answer
    buttons: tuple = ()  # (Check settings, Launch, Stop, Resume)
    card: gr.Textbox | None = None  # "Plan for a card of … GiB" (kinds with a memory estimate)
    fit: gr.Button | None = None  # Fit to this card
    panel: RunPanel | None = None
    runs: gr.Dataframe | None = None
    config: gr.Code | None = None
    cli: gr.Code | None = None
    write: tuple = ()  # (button, answer) of the accelerate launch files
    resumed: object = None  # Resume's click event (the tab's tick follows it)
    source: tuple = ()  # (the line above the form, its Load button): ui/form_source.py
    loaded: object = None  # Load this run's settings' event (a tab follows it with what it keeps of the form)

    @classmethod
    def start(cls, studio: Studio, kind: str, specials: dict | None = None) -> JobSection:
        return cls(studio, KINDS[kind], fields_of(kind), dict(specials or {}))

    @property
    def inputs(self) -> list:
        return [self.widgets[f.key] for f in self.fields]

    def form(self, layout: list, preset: str, info: str = "", **row_kw) -> None:
        """The preset dropdown, then the form (`accordions`) starting from that preset's config."""
        self.preset_dropdown(preset, info)
        self.accordions(layout, self.kind.preset_config(preset, self.studio.ws), **row_kw)

    def preset_dropdown(self, preset: str, info: str = "", **kw) -> None:
        """The line that says whose settings the form holds (ui/form_source.py), then the preset list."""
        self.source = form_source.build(self.kind.name)
        self.preset = gr.Dropdown(preset_choices(self.studio, self.kind.name), value=preset, label="Preset",
                                  info=info or None,
                                  elem_id=f"{self.kind.name}-preset", **kw)

    def accordions(self, layout: list, values, wide: tuple = ("model",), inside: dict | None = None,
                   **row_kw) -> None:
        """The groups of `layout` (groups()), a row of widgets per row of keys, starting from the config
        `values`. A group titled None holds the settings kept in view: their help cut to its first clause, the
        whole of it in the folded section that follows. Any other group is an accordion that says what it
        holds. `inside`: title -> a function that adds the tab's own widgets at the end of that group. The
        `wide` fields get twice the room of the others in their row."""
        start = dict(zip([f.key for f in self.fields], form.values(values)))
        for title, rows, is_open in groups(self.fields, layout):
            if title is None:
                with gr.Group():
                    self._rows(rows, start, wide, short=True, **row_kw)
                self._whole_help([k for keys in rows for k in keys])
                continue
            with gr.Accordion(title, open=is_open):
                self._rows(rows, start, wide, **row_kw)
                if title in (inside or {}):
                    inside[title]()

    @property
    def by_key(self) -> dict:
        return {f.key: f for f in self.fields}

    def _rows(self, rows, start: dict, wide: tuple, **kw) -> None:
        by_key = self.by_key
        for keys in rows:
            with gr.Row():
                for key in [k for k in keys if k in by_key]:
                    self.widgets[key] = widget(by_key[key], start[key], self.kind.name, self.specials.get(key),
                                               self.studio.ws.root, **({"scale": 2} if key in wide else {}), **kw)

    def _whole_help(self, keys: list) -> None:
        by_key = self.by_key
        with gr.Accordion("What the settings above do", open=False):
            gr.Markdown("\n".join(f"- **{k}**: {html.escape(help_text(by_key[k]))}" for k in keys if k in by_key),
                        elem_id=f"{self.kind.name}-settings-help")

    def actions(self, check: str = "Check settings", launch: str = "Launch", stop: str = "Stop") -> None:
        """Check settings, Launch, Stop, Resume (Stop and Resume pressable only when they apply), their answer."""
        name = self.kind.name
        with gr.Row():
            self.buttons = (gr.Button(check, elem_id=f"{name}-validate"),
                            gr.Button(launch, variant="primary", elem_id=f"{name}-launch"),
                            gr.Button(stop, variant="stop", elem_id=f"{name}-stop", interactive=False),
                            gr.Button("Resume", elem_id=f"{name}-resume", interactive=False))
        if self.kind.memory:  # a card to plan for (empty: this machine), and the settings that would fit it
            with gr.Row(equal_height=True):  # one line, no label box: the charts below stay in view
                # a text box, not gr.Number: that shows an empty value as 0, and empty here means this machine
                self.card = gr.Textbox("", label="Plan for a card of … GiB (empty: this machine)", show_label=False,
                                       placeholder="Plan for a card of … GiB (empty: this machine)", container=False,
                                       max_lines=1, scale=3, elem_id=f"{name}-card")
                self.fit = gr.Button("Fit to this card", elem_id=f"{name}-fit", scale=1, min_width=140, size="sm")
        self.check = gr.HTML(elem_id=f"{name}-check", elem_classes=["job-check"])  # the timer never writes it

    def run_panel(self, empty: str) -> RunPanel:
        self.panel = RunPanel.build(self.studio, self.kind.name, empty)
        return self.panel

    def runs_list(self, title: str, widths: list | None = None) -> None:
        """The kind's runs (click one to show it), and the shown run's config.yaml and command."""
        headers, _ = runs_rows(self.studio.ws, self.kind.name)
        gr.Markdown(f"### {title}\nClick a run to see its charts, its config and the command that repeats it.")
        self.runs = gr.Dataframe(headers=headers, interactive=False, wrap=True, elem_id=f"{self.kind.name}-runs",
                                 column_widths=widths or RUN_WIDTHS, elem_classes=run_panel.live(self.kind.name))
        with gr.Row():
            self.config = gr.Code(label="config.yaml", language="yaml", interactive=False)
            self.cli = gr.Code(label="The same run from the command line", language="shell", interactive=False)

    def launch_files(self) -> None:
        self.write = launch_panel.build(self.studio, self.kind.name, self.inputs, partial(config_of, self.kind.name),
                                        self.kind.name)


def wire(section: JobSection, shown, own_answers: list | None = None) -> list:
    """Connect the section's handlers: the preset fills the form, the buttons answer in `check`, a run started,
    resumed or clicked in the runs list becomes `shown` (a gr.State, or the tab's own run picker). Returns the
    (event, boxes it writes) pairs for messages.clear_on, so the tab can add its own actions to them."""
    s, studio, name = section, section.studio, section.kind.name
    validate, launch, stop, resume = s.buttons
    ticks = {k: w for k, w in s.specials.items() if isinstance(w, Ticks)}
    # a person's pick only: Load this run's settings sets the preset its settings match, and keeps them
    say = s.preset.input(partial(on_preset, studio, name, s.fields, ticks), s.preset, s.inputs)
    s.preset.focus(partial(on_preset_list, studio, name), None, s.preset, show_progress="hidden")
    card = [s.card] if s.card is not None else [gr.State(None)]
    validate.click(partial(on_check, studio, name), card + s.inputs, s.check)
    fitted = s.fit.click(partial(on_fit, studio, name, s.fields, ticks), card + s.inputs, [*s.inputs, s.check]) \
        if s.fit is not None else None
    launch.click(partial(on_launch, studio, name), s.inputs, [shown, s.check])
    stop.click(partial(on_stop, studio, name), shown, s.check)
    s.resumed = resume.click(partial(on_resume, studio, name), shown, [shown, s.check])
    if s.runs is not None:
        s.runs.select(on_pick, None, shown)
    if "trust_remote_code" in s.widgets:
        s.widgets["trust_remote_code"].input(on_trust, s.widgets["trust_remote_code"], s.check)
    s.panel.add_controls(stop, resume)
    _wire_source(s, [say] + ([fitted] if fitted else []), ticks)
    return [(s.preset.input, []), (s.source[1].click, []), *((b.click, [s.check]) for b in s.buttons),
            *([(s.runs.select, [])] if s.runs is not None else []), *([(s.fit.click, [s.check])] if fitted else []),
            *([(s.write[0].click, [s.write[1]])] if s.write else [])]


def _wire_source(s: JobSection, fills: list, ticks: dict) -> None:
    """The line above the form, worked out again when the run shown changes, after each event in `fills` (they
    filled the form) and after Load, and when a setting is typed or picked."""
    line, load = s.source
    say = dict(fn=partial(form_source.on_note, s.studio, s.kind.name), inputs=[s.panel.shown, s.preset, *s.inputs],
               outputs=[line, load], show_progress="hidden")
    s.loaded = load.click(partial(form_source.on_load, s.studio, s.kind.name, s.fields, ticks), s.panel.shown,
                          [*s.inputs, s.preset])
    for event in [*fills, s.loaded]:
        event.then(**say)
    gr.on([s.panel.shown.change, *(w.input for w in s.inputs)], trigger_mode="always_last", **say)


def clear_messages(section: JobSection, actions: list, boxes: list) -> None:
    """Every action of the tab empties the answers it does not write (ui/messages.py)."""
    messages.clear_on(actions, [section.check, *([section.write[1]] if section.write else []), *boxes])


def note(text: str) -> str:
    return f"<div>{html.escape(text)}</div>"
