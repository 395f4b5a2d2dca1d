"""The Label tab's data area: import a file, load the demo data, generate candidates, export.

Every action here that redraws the labeling view also sets the current pair. An action that fails
or is refused, and an export, leave the view and its pair as they were (label_render.unchanged).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import gradio as gr

from rloo_studio.core.errors import DataError, explain
from rloo_studio.core.model_options import TRUST_SHORT, TRUST_WARNING
from rloo_studio.label.demo_data import demo_summary, seed_demo
from rloo_studio.label.exporting import FORMATS, export, export_steps
from rloo_studio.label.generate import GenerateConfig, generate_candidates
from rloo_studio.label.importing import import_upload
from rloo_studio.label.prompts import prompt_sets
from rloo_studio.studio import Studio
from rloo_studio.ui import fields, inputs, label_render
from rloo_studio.ui.label_render import LabelInputs, status_html
from rloo_studio.ui.uploads import discard_upload

EMPTY_NOTE = ("**This workspace has no pairs yet.** Import your own under *Import pairs or prompts* below, "
              "or load the bundled demo data (237 labeled pairs, 80 pairs to label, two prompt sets) to try the app.")


def _has_pairs(studio: Studio) -> bool:
    return bool(studio.ws.query("SELECT 1 FROM pairs LIMIT 1"))


def empty_notice(studio: Studio):
    """Shown above the labeling view while the workspace holds no pairs."""
    with gr.Row(visible=not _has_pairs(studio), elem_id="lbl-empty") as box:
        gr.Markdown(EMPTY_NOTE)
        b = gr.Button("Load the demo data", elem_id="lbl-demo-empty", scale=0, min_width=200)
    return box, b


def empty_update(studio: Studio):
    return gr.update(visible=not _has_pairs(studio))


@dataclass(frozen=True)
class ImportInputs(LabelInputs):
    """An import: the file, the duplicates box, and the labeling view it redraws."""
    path: str | None = None  # the uploaded file ('' or None: none chosen)
    keep_duplicates: bool = False


@dataclass(frozen=True)
class ExportInputs:
    format: str  # a key of label.exporting.FORMATS
    file_name: str  # a plain name, written under the workspace's exports/
    test_fraction: float
    ties_apart: bool  # ties to a separate file


@dataclass(frozen=True)
class StepExportInputs:
    file_name: str  # a plain name, written under the workspace's exports/
    who: str  # 'all', 'people', 'rollouts' or an annotator's name


@dataclass(frozen=True)
class GenerateInputs:
    """The Generate form, as typed (GenerateConfig checks it)."""
    prompt_set: str | None
    limit: int | None
    k: int
    typed: str  # prompts typed one per line
    model: str
    trust_remote_code: bool
    max_new_tokens: int | None
    temperature: float | None
    enable_thinking: bool


def do_import(studio: Studio, form: ImportInputs, progress=gr.Progress()):
    """Outputs: message, the view (prompt … current), sources, file box, empty notice."""
    if not form.path:
        return (status_html("No file was chosen, so nothing was imported: choose a file first.", True),
                *label_render.unchanged(), gr.update(), None, empty_update(studio))
    try:
        kw = {"keep_duplicates": True} if form.keep_duplicates else {}  # skipping rows already there is the default
        res = import_upload(studio.ws, form.path, progress=lambda frac, what: progress(frac, desc=what), **kw)
    except Exception as e:  # every failure is a message
        said = (f"Import refused, nothing was changed: {explain(e)}" if isinstance(e, DataError)  # found while checking
                else f"The import stopped: {explain(e)}. The rows it had written are kept; importing the file again "
                     "adds the rest, nothing twice.")  # while writing (a full disk): the chunks committed stay
        return (status_html(said, True), *label_render.unchanged(), gr.update(), None, empty_update(studio))
    finally:
        discard_upload(studio.ws, form.path)  # the workspace keeps its own copy (uploads/); Gradio's goes
    view = label_render.show_next(studio, form)
    return status_html(res.summary()), *view, label_render.sources_update(studio), None, empty_update(studio)


def load_demo(studio: Studio, form: LabelInputs):
    """Outputs: message, the view, sources, empty notice. Twice adds nothing the second time."""
    try:
        note, error = demo_summary(seed_demo(studio.ws)), False
    except Exception as e:
        note, error = f"The demo data could not be loaded, nothing was changed: {explain(e)}", True
    view = label_render.show_next(studio, form, note)  # said where the eyes are, and under Import
    return status_html(note, error), *view, label_render.sources_update(studio), empty_update(studio)


def do_export(studio: Studio, form: ExportInputs):
    """Outputs: message, files, the view (as it was: the pair on the page stays there, current)."""
    return _exported(studio, form.file_name, lambda out: export(
        studio.ws, out, form.format, ties_apart=form.ties_apart, test_fraction=float(form.test_fraction)))


def do_export_steps(studio: Studio, form: StepExportInputs):
    """The step labels in the stepwise shape. Outputs: message, files, the view (as it was)."""
    return _exported(studio, form.file_name, lambda out: export_steps(studio.ws, out, (form.who or "all").strip()))


def _exported(studio: Studio, file_name: str, write):
    fname = (file_name or "").strip()
    if not fname or "/" in fname or "\\" in fname or fname.startswith("."):
        return (status_html("Give a plain file name (no folders); files go to the workspace's exports/.", True), None,
                *label_render.unchanged())
    try:
        res = write(studio.ws.exports_dir / fname)
    except Exception as e:
        return status_html(explain(e), True), None, *label_render.unchanged()
    files = [str(p) for p in res.paths if p.is_file()]
    return status_html(res.summary() + f" Saved in {studio.ws.exports_dir}."), files or None, *label_render.unchanged()


def start_gen(studio: Studio, form: GenerateInputs):
    try:
        cfg = GenerateConfig(model=form.model, prompt_set=form.prompt_set, prompts=(form.typed or "").splitlines(),
                             limit=int(form.limit or 1), k=int(form.k), max_new_tokens=int(form.max_new_tokens or 1),
                             temperature=float(form.temperature or 0), trust_remote_code=bool(form.trust_remote_code),
                             enable_thinking=bool(form.enable_thinking))
        cfg.validate()
    except Exception as e:
        return "", status_html(explain(e), True)
    busy = (studio.runner.current or "the queued runs") if studio.runner.busy() else None
    rid = studio.runner.submit("generate", cfg, generate_candidates)
    return rid, status_html(f"Queued ({rid}) behind {busy}; it starts when that run ends." if busy
                            else f"Generating ({rid})…")


def poll_gen(studio: Studio, rid):
    if not rid:
        return status_html(""), gr.Timer(active=False)
    st = studio.runner.status(rid)
    pr = st.get("progress") or {}
    if st.get("status") == "queued":
        return status_html(f"queued ({rid}): it starts when the running job ends"), gr.Timer(active=True)
    if st.get("status") == "running":
        eta = f", about {pr['eta_s']:.0f} s left" if pr.get("eta_s") else ""
        done = f"{pr.get('done', 0)} / {pr.get('total', '?')} prompts" if pr else "loading the model"
        return status_html(f"{st['status']}: {done}{eta}"), gr.Timer(active=True)
    return (status_html(f"{st.get('status')}: {st.get('message', '')}", st.get("status") == "failed"),
            gr.Timer(active=False))


def generate_section(studio: Studio) -> None:
    """The 'Generate candidates' accordion: sample k responses per prompt as a job, followed while it runs."""
    sets = [s["name"] for s in prompt_sets(studio.ws)]
    d = GenerateConfig()
    with gr.Accordion("Generate candidates from a model", open=False):
        with gr.Row():
            prompt_set = gr.Dropdown(sets, value=d.prompt_set if d.prompt_set in sets else None, label="Prompt set")
            limit = gr.Number(d.limit, label="Prompts", precision=0, minimum=1, elem_id="lbl-gen-limit")
            k = gr.Slider(2, 8, d.k, step=1, label="Responses per prompt (k)")
        typed = gr.Textbox(label="…or type prompts, one per line", lines=3)
        with gr.Row():
            model = fields.model_dropdown(d.model, "Model (local folder or cached hub id)", "lbl-gen-model",
                                          studio.ws.root, scale=3)
            trust = gr.Checkbox(d.trust_remote_code, label="trust_remote_code", info=TRUST_SHORT, scale=1,
                                elem_id="lbl-gen-trust")
            tokens = gr.Number(d.max_new_tokens, label="Max new tokens", precision=0, minimum=1)
            temperature = gr.Number(d.temperature, label="Temperature", minimum=0.01)
            thinking = gr.Checkbox(d.enable_thinking, label="enable_thinking", elem_id="lbl-gen-thinking",
                                   info="Hybrid templates (Qwen3): off answers without reasoning; others ignore it")
        with gr.Row():
            b_gen = gr.Button("Generate", variant="primary")
            b_stop = gr.Button("Stop")
        run = gr.State("")
        msg = gr.HTML()
        timer = gr.Timer(1.0, active=False)
    trust.input(lambda on: status_html(TRUST_WARNING, True) if on else status_html(""), trust, msg)
    b_gen.click(**inputs.bind(partial(start_gen, studio), GenerateInputs, prompt_set=prompt_set, limit=limit, k=k,
                              typed=typed, model=model, trust_remote_code=trust, max_new_tokens=tokens,
                              temperature=temperature, enable_thinking=thinking),
                outputs=[run, msg]).then(lambda rid: gr.Timer(active=bool(rid)), run, timer)
    timer.tick(partial(poll_gen, studio), run, [msg, timer], show_progress="hidden")
    b_stop.click(lambda rid: studio.runner.stop(rid) and None, run, None)


def build(studio: Studio, queue: dict, outs: list, src, empty_box, b_demo_empty, then: dict | None = None) -> None:
    """The data area, under the labeling view: `queue` names the widgets whose next pair an import shows
    (LabelInputs' fields), `outs` the view's outputs; `then` an event (fn, inputs, outputs) that follows an import
    or the demo's load (the step mode's view)."""
    with gr.Accordion("Import pairs or prompts", open=False):
        gr.Markdown("JSONL, CSV or Parquet: preference pairs (`prompt`, `chosen`, `rejected`; standard or "
                    "conversational; without `prompt` the shared prefix is the prompt), candidates "
                    "(`prompt` + `responses` list or `response_1..N`), stepwise step labels (`prompt`, "
                    "`completions`: the steps, `labels`: true / false per step), or a prompt set (`prompt` + other "
                    "columns). "
                    "An import is all or nothing; rows already in the workspace are skipped unless you tick "
                    "*Keep duplicates*.")
        up = gr.File(label="File", file_types=[".jsonl", ".json", ".csv", ".parquet"], type="filepath")
        keep = gr.Checkbox(False, label="Keep duplicates: import rows already in the workspace again, as new pairs",
                           elem_id="lbl-keep-dups")
        with gr.Row():
            b_import = gr.Button("Import")
            b_demo = gr.Button("Load the demo data", elem_id="lbl-demo")
        import_msg = gr.HTML(elem_id="lbl-import-msg")
    generate_section(studio)
    with gr.Accordion("Export for other tools", open=False):
        with gr.Row():
            e_fmt = gr.Radio(list(FORMATS), value="standard", label="Format")
            e_name = gr.Textbox("pairs.jsonl", label="File name (.jsonl, .parquet, or a folder name for `datasets`)",
                                elem_id="lbl-export-name")
            e_split = gr.Slider(0, 0.5, 0, step=0.05, label="Test fraction")
            e_ties = gr.Checkbox(label="Write ties to a separate file")
        b_export = gr.Button("Export", elem_id="lbl-export-go")
        with gr.Row():  # step labels: prompt / completions / labels, the shape a stepwise import reads
            s_name = gr.Textbox("steps.jsonl", label="Step labels file name (.jsonl, .parquet, or a folder name)",
                                elem_id="lbl-export-steps-name")
            s_who = gr.Dropdown(["all", "people", "rollouts"], value="all", allow_custom_value=True,
                                label="Whose step labels (or an annotator's name)")
            b_steps = gr.Button("Export step labels", elem_id="lbl-export-steps-go")
        export_msg = gr.HTML(elem_id="lbl-export-msg")
        export_files = gr.File(label="Exported files", file_count="multiple", interactive=False)

    done = b_import.click(**inputs.bind(partial(do_import, studio), ImportInputs, path=up, keep_duplicates=keep,
                                        **queue), outputs=[import_msg, *outs, src, up, empty_box])
    events = [done] + [b.click(**inputs.bind(partial(load_demo, studio), LabelInputs, **queue),
                               outputs=[import_msg, *outs, src, empty_box]) for b in (b_demo, b_demo_empty)]
    for event in events if then else ():
        event.then(**then)
    b_export.click(**inputs.bind(partial(do_export, studio), ExportInputs, format=e_fmt, file_name=e_name,
                                 test_fraction=e_split, ties_apart=e_ties),
                   outputs=[export_msg, export_files, *outs])
    b_steps.click(**inputs.bind(partial(do_export_steps, studio), StepExportInputs, file_name=s_name, who=s_who),
                  outputs=[export_msg, export_files, *outs])
