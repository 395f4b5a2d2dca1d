"""The Label tab's side panels: the workspace's labeling guidelines above the pair (shared, editable by anyone
labeling) and the annotators panel (counts today and in all, overlap, agreement; step labels and person vs model)."""
from __future__ import annotations

import html
from functools import partial

import gradio as gr

from rloo_studio.core.errors import explain
from rloo_studio.label import agreement, guidelines, store
from rloo_studio.studio import Studio
from rloo_studio.ui.label_browser import FILL_EDIT_JS
from rloo_studio.ui.label_render import status_html


def annotators_md(studio: Studio) -> str:
    """Who labeled how much (today and in all), and how well they agree (refreshed while the panel is open): pairs,
    then step labels."""
    ws = studio.ws
    lines = [f"Overlap: **{store.overlap(ws)}** annotator(s) per pair."]
    stats = agreement.annotator_stats(ws, today=True)
    step_lines = steps_md(studio)
    if stats:
        lines.append("| annotator | labels today | labels | skips |\n|---|---|---|---|" + "".join(
            f"\n| {html.escape(a['name'])} | {a['today']} | {a['labels']} | {a['skips']} |" for a in stats))
    else:
        lines.append("No pair labels from people yet." if step_lines else "No labels from people yet.")
    ag = agreement.agreement(ws)
    if not ag["pairs"]:
        lines.append("No pair has labels from two annotators yet (raise the overlap to measure agreement).")
    elif ag["kappa"] is not None:
        lines.append(f"Cohen's kappa **{ag['kappa']:.2f}**, raw agreement **{ag['raw']:.0%}** over "
                     f"{ag['shared_pairs']} shared pairs.")
    else:
        lines.append(f"Raw agreement **{ag['raw']:.0%}** over {ag['shared_pairs']} shared labels "
                     "(all annotator pairs).")
    if ag["pairs"]:
        lines.append("| annotators | shared | raw | kappa |\n|---|---|---|---|" + "".join(
            f"\n| {html.escape(p['a'])} / {html.escape(p['b'])} | {p['shared']} | {p['raw']:.0%} | "
            f"{p['kappa']:.2f} |" for p in ag["pairs"]))
    return "\n\n".join(lines + step_lines)


def _share(x) -> str:
    return "–" if x is None else f"{x:.0%}"


def steps_md(studio: Studio) -> list[str]:
    """The step labels' part of the panel ([] when no person labeled a step): each person's own verdicts, answers,
    verdicts accepted from a model, responses; then person vs model on their own verdicts."""
    stats = agreement.step_stats(studio.ws)
    if not stats:
        return []
    out = ["**Step labels** (accepted: the process reward model's verdicts taken with the a key; theirs, but not "
           "their own judgement, so left out of every agreement figure)",
           "| annotator | own step verdicts | final answers | accepted from the model | responses |"
           "\n|---|---|---|---|---|" + "".join(
               f"\n| {html.escape(s['name'])} | {s['steps']} | {s['answers']} | {s['accepted']} | {s['responses']} |"
               for s in stats)]
    vs = agreement.model_agreement(studio.ws)
    if not vs:
        out.append("No own step verdict given with a process reward model beside it yet: person vs model agreement "
                   "shows once someone labels with a model chosen.")
        return out
    out.append("**Person vs model** on each person's own step verdicts given with the model's p on the page (the "
               "model says right at p ≥ 0.5; good and neutral are right). First wrong step: responses they labeled "
               "themselves to their first bad step or the last step, where the model's first doubted step is the "
               "same (or both none). Own verdicts are often given where the person disagreed, so these read low "
               "when they accept whenever they agree."
               "\n\n| annotator | own verdicts beside the model | agree | responses | first wrong step agrees |"
               "\n|---|---|---|---|---|" + "".join(
                   f"\n| {html.escape(v['name'])} | {v['steps']} | {_share(v['agree'])} | {v['responses']} | "
                   f"{_share(v['first_agree'])} |" for v in vs))
    return out


def set_overlap(studio: Studio, n):
    try:
        store.set_overlap(studio.ws, int(n))
        return annotators_md(studio)
    except (ValueError, TypeError) as e:
        return f"**{e}**"


NO_GUIDELINES = ("*No labeling guidelines for this workspace yet. Write them under “Edit the guidelines”: "
                 "everyone labeling here sees them above the pair.*")


def guidelines_md(studio: Studio) -> str:
    return guidelines.get(studio.ws) or NO_GUIDELINES


def save_guidelines(studio: Studio, text):
    """(guidelines shown, message, stored text): stored for the whole workspace, or a plain message and nothing
    saved."""
    try:
        kept = guidelines.save(studio.ws, text)
    except Exception as e:  # too long, or the disk refused: say so, the stored text stays as it was
        return gr.skip(), status_html(explain(e), True), gr.skip()
    return kept or NO_GUIDELINES, status_html("Guidelines saved: everyone labeling in this workspace sees them." if kept
                                              else "Guidelines removed."), kept


def guidelines_now(studio: Studio) -> tuple[str, str]:
    """(guidelines shown, stored text) as the workspace holds them now."""
    return guidelines_md(studio), guidelines.get(studio.ws)


def guidelines_section(studio: Studio):
    """Shown above the pair: the workspace's guidelines (markdown), editable by anyone labeling. Returns (shown,
    stored). The page's first paint has them as the app found them at its start; the Label tab's select brings them
    as they are now (`guidelines_now`; the page selects its first tab as it loads, so no load event is needed)."""
    shown_now, stored_now = guidelines_now(studio)
    with gr.Accordion("Labeling guidelines", open=True, elem_id="lbl-guidelines-box"):
        shown = gr.Markdown(shown_now, elem_id="lbl-guidelines")
        stored = gr.Textbox(stored_now, visible=False)  # as stored when the tab was last opened, or saved here
        with gr.Accordion("Edit the guidelines (markdown, shared by everyone labeling in this workspace)",
                          open=False) as edit:
            text = gr.Textbox(lines=5, max_lines=30, show_label=False, elem_id="lbl-guidelines-edit",
                              placeholder="# What makes a response better\n- the right answer first\n- ...")
            with gr.Row():
                save = gr.Button("Save guidelines", scale=0, min_width=180, elem_id="lbl-guidelines-save")
                note = gr.HTML(elem_id="lbl-guidelines-msg")
    edit.expand(None, [stored, text], text, js=FILL_EDIT_JS)
    save.click(partial(save_guidelines, studio), text, [shown, note, stored])
    return shown, stored


def annotators_panel(studio: Studio):
    """Per-annotator counts (today and in all), overlap and agreement; followed while the panel is open."""
    with gr.Accordion("Annotators and agreement", open=False) as panel:
        with gr.Row():
            overlap = gr.Number(store.overlap(studio.ws), label="Annotators per pair (overlap)", precision=0, minimum=1,
                                maximum=10)
            b_overlap = gr.Button("Set overlap")
        agree = gr.Markdown(elem_id="lbl-annotators")
        b_agree = gr.Button("Refresh agreement")
        agree_timer = gr.Timer(3.0, active=False)  # while the panel is open, it follows labels as they arrive
    b_overlap.click(partial(set_overlap, studio), overlap, agree)
    b_agree.click(partial(annotators_md, studio), None, agree)
    panel.expand(lambda: (annotators_md(studio), gr.Timer(active=True)), None, [agree, agree_timer])
    panel.collapse(lambda: gr.Timer(active=False), None, agree_timer)
    agree_timer.tick(partial(annotators_md, studio), None, agree, show_progress="hidden")
    return agree


