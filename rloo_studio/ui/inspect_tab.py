"""Inspect tab: score a response with a reward model, step by step, beside a process reward model's verdict on each
step; pairs; the whole labeled set.

Thin: every callback reads widgets, calls rloo_studio.inspect.scoring, and formats the result as HTML
(heat maps and plots are inline SVG/HTML, so they render without a plotting library).
"""
from __future__ import annotations

import html
import secrets
import threading
from dataclasses import dataclass, replace
from functools import partial

import gradio as gr

from rloo_studio.core.errors import DataError, StudioError, explain
from rloo_studio.core.model_options import TRUST_SHORT, TRUST_WARNING
from rloo_studio.core.paths import DEMO_MODEL
from rloo_studio.core.thinking import SPLIT_MODES
from rloo_studio.inspect import model_input, scoring
from rloo_studio.inspect.dataset import Progress, Stopped, dataset_view, run_cache
from rloo_studio.inspect.lenses import compare
from rloo_studio.label.store import flag_for_relabel
from rloo_studio.runs import catalog
from rloo_studio.runs.lifecycle import describe_time
from rloo_studio.studio import Studio
from rloo_studio.ui import fields, inputs, inspect_process, inspect_render, messages, render
from rloo_studio.ui.inspect_render import (
    dataset_html,
    hist_svg,
    plot_svg,
    shared_span,
    side_html,
    steps_html,
    summary_html,
    untrained_banner,
)

CSS = inspect_render.CSS + inspect_process.CSS  # the tab's styles (ui/app.py adds them)
BASE = "__base__"
SPLIT_LABELS = [("blank line", "blank"), ("line", "line"), ("sentence", "sentence")]
SPLIT_KEY = "inspect_split"  # workspace setting: the step split last chosen
EXAMPLE_PROMPT = "Add 820 and 634."
EXAMPLE_RESPONSE = "<think>\n4+0+0=4\n\n2+3+0=5\n\n8+6+0=14\n</think>\n\nThe answer is 1454."
DIS_HEADERS = ["pair", "margin", "chosen score", "rejected score", "prompt"]
SCORE_HINT = ("<div class='rs-explain'>Score a response to see it through two lenses, step by step: the outcome "
              "model's score if the answer ended after each step, and the process model's probability that each step "
              "is right.</div>")

@dataclass(frozen=True)
class InspectInputs:
    """What the Inspect tab's events read (ui.inputs.bind): each binds the widgets it needs, the other fields
    keep these defaults."""
    reward_model: str | None = None  # a trained reward run's id, or BASE (the base model, untrained head)
    process_model: str = ""  # a process reward run's id, or inspect_process.NONE
    base_model: str = ""  # for the untrained head, and the policy's view
    trust_remote_code: bool = False
    split: str = "blank"  # where the reasoning is cut into steps (thinking.SPLIT_MODES)
    prompt: str = ""
    response: str = ""  # Single: the response scored
    chosen: str = ""  # Pair: the two responses compared
    rejected: str = ""
    pair_id: float | None = None  # a labeled pair of the store, as typed or picked
    scoring: str = ""  # the Dataset view's scoring in this page (a token Stop names; start_scoring)


def _error(exc: BaseException | str) -> str:
    return f"<div class='rs-error'>{html.escape(exc if isinstance(exc, str) else explain(exc))}</div>"


# ---------------------------------------------------------------- callbacks (wired with functools.partial(f, ws))

def choices(ws) -> list[tuple[str, str]]:
    """The trained reward runs, newest first, then the base model with an untrained head."""
    return list(catalog.scorer_runs(ws, ("outcome",))) + [("base model, untrained head", BASE)]


def refresh(ws, current):
    c = choices(ws)
    ids = [v for _, v in c]
    return gr.Dropdown(choices=c, value=current if current in ids else ids[0])


def saved_split(ws) -> str:
    v = ws.setting(SPLIT_KEY, "blank")
    return v if v in SPLIT_MODES else "blank"


def restore(ws, current, picked):
    """On page load and tab open: the newest trained reward model, unless the user picked one by hand."""
    return refresh(ws, current if picked else None), saved_split(ws)


def run_base(ws, choice) -> str:
    """The base model a reward run trained on ('' for the untrained head or an unknown run)."""
    if not choice or choice == BASE:
        return ""
    try:
        return str(catalog.run_config(ws, catalog.scorer_run(ws, choice)["id"]).get("model") or "")
    except StudioError:
        return ""


def follow_run_base(ws, choice):
    """Picking a reward run puts its base model in the base box: the policy's view then reads the text with the
    tokenizer that run was trained with (a Qwen3 run is not shown through the demo tokenizer)."""
    return run_base(ws, choice) or gr.skip()


def scorer_for(ws, form: InspectInputs):
    """The scorer of form.reward_model; for BASE, the base model with an untrained head."""
    if form.reward_model == BASE or not form.reward_model:
        base = (form.base_model or "").strip()
        if not base:
            raise DataError("Choose a base model for the untrained head (the model field above).")
        return scoring.load_scorer(reward_model=base, trust_remote_code=bool(form.trust_remote_code))
    return scoring.load_scorer(ws, reward_run=form.reward_model)


def do_score(ws, form: InspectInputs):
    """Single: (both lenses on each step, the verdict where they disagree and the outcome totals; the outcome model's
    heat map; the process model's block; the outcome model's token chart) of form.response."""
    try:
        prompt = scoring.check_text(form.prompt, "prompt", required=False)
        response = scoring.check_text(form.response, "response")
        scorer = scorer_for(ws, form)
        scored = scoring.score_response(scorer, prompt, response, form.split)
    except Exception as exc:  # noqa: BLE001 — shown on the page, nothing saved
        return _error(exc), "", "", ""
    judged, label, failed = inspect_process.judge(ws, form.process_model, prompt, response, form.split)
    lenses = inspect_process.lenses_html(compare(scored, judged), len(inspect_process.choices(ws)) > 1)
    return (untrained_banner(scorer) + lenses + summary_html(scored, scorer, banner=False), steps_html(scored),
            failed or inspect_process.block_html(judged, label), plot_svg(scored))


def do_pair(ws, form: InspectInputs):
    """Pair: (margin, chosen view, rejected view)."""
    try:
        prompt = scoring.check_text(form.prompt, "prompt", required=False)
        chosen = scoring.check_text(form.chosen, "chosen response")
        rejected = scoring.check_text(form.rejected, "rejected response")
        scorer = scorer_for(ws, form)
        good, bad = scoring.score_responses(scorer, [(prompt, chosen), (prompt, rejected)], form.split)
    except Exception as exc:  # noqa: BLE001
        return _error(exc), "", ""
    margin = good.total - bad.total
    verdict = "agrees with the label" if margin > 0 else "disagrees with the label"
    span = shared_span(good, bad)
    return (f"{untrained_banner(scorer)}<div class='rs-summary'><span>margin "
            f"<span class='num' data-testid='margin'>{margin:+.4f}</span></span><span>the model {verdict}</span></div>",
            side_html(good, "Chosen", span), side_html(bad, "Rejected", span))


def do_load(ws, form: InspectInputs):
    """Load the labeled pair form.pair_id and score it: (prompt, chosen, rejected, margin, chosen view, rejected view).
    An id that names no labeled pair empties the view and says so; nothing is scored."""
    try:
        texts = scoring.pair_texts(ws, scoring.parse_pair_id(form.pair_id))
    except Exception as exc:  # noqa: BLE001
        return "", "", "", _error(exc), "", ""
    return (texts["prompt"], texts["chosen"], texts["rejected"],
            *do_pair(ws, replace(form, prompt=texts["prompt"], chosen=texts["chosen"], rejected=texts["rejected"])))


_STOPS: dict[str, threading.Event] = {}  # one per scoring started (its token): Stop asks that one to end


def start_scoring():
    """(Stop enabled, this scoring's token): made before the scoring is queued, so a Stop pressed while it waits
    still counts, and a Stop in one page never ends another page's scoring."""
    token = secrets.token_hex(8)
    _STOPS[token] = threading.Event()
    return gr.update(interactive=True), token


def progress_text(p: Progress) -> str:
    left = f" · about {describe_time(p.eta)} left" if p.eta is not None else ""
    kept = f" ({p.kept:,} kept from an earlier look)" if p.kept else ""
    return f"Scoring {p.done:,} of {p.total:,} responses{kept}{left}"


def do_dataset(ws, form: InspectInputs, progress=gr.Progress()):
    """Score every labeled pair (a trained run's scores are kept in its folder: a second look is read) and
    summarize; a progress bar with the time left, and Stop (what was scored stays kept)."""
    stop, cache = _STOPS.get(form.scoring) or threading.Event(), None

    def tell(p: Progress) -> None:  # after each batch, scored and kept
        progress((p.done, p.total), desc=progress_text(p), unit="responses")
        if stop.is_set() and p.done < p.total:  # a Stop during the last batch: the view is complete, show it
            kept = "Their scores are kept: “Score all labeled pairs” goes on from there." if cache is not None \
                else "Scores of the base model's untrained head are not kept."
            raise Stopped(f"Stopped after {p.done:,} of {p.total:,} responses. {kept}")

    try:
        scorer = scorer_for(ws, form)
        if form.reward_model and form.reward_model != BASE:
            cache = run_cache(ws, form.reward_model, scorer)
        view = dataset_view(scorer, ws, top=20, cache=cache, progress=tell)
    except Stopped as exc:
        return f"<div class='rs-note' id='inspect-ds-stopped'>{html.escape(str(exc))}</div>", "", []
    except Exception as exc:  # noqa: BLE001
        return _error(exc), "", []
    finally:
        _STOPS.pop(form.scoring, None)
        if cache is not None:
            cache.close()
    rows = [[p.pair_id, round(p.margin, 4), round(p.chosen_score, 4), round(p.rejected_score, 4),
             p.prompt[:120]] for p in view.disagreements]
    return dataset_html(view, scorer), hist_svg(view), rows


def stop_dataset(token: str | None) -> None:
    if token in _STOPS:
        _STOPS[token].set()


def pick(evt: gr.SelectData):
    row = evt.row_value or []
    return int(row[0]) if row else None


def do_open(ws, form: InspectInputs):
    """The pair picked in the Dataset view, loaded and scored in the Pair view."""
    if not form.pair_id:
        return (*[gr.update()] * 5, "<div class='rs-error'>Click a row of the table first.</div>", *[gr.update()] * 3)
    prompt, chosen, rejected, margin, chosen_out, rejected_out = do_load(ws, form)
    return form.pair_id, prompt, chosen, rejected, gr.Tabs(selected="pair"), "", margin, chosen_out, rejected_out


def do_relabel(ws, pid):
    if not pid:
        return "<div class='rs-error'>Click a row of the table first.</div>"
    try:
        flag_for_relabel(ws, int(pid), "reward model disagrees")
    except Exception as exc:  # noqa: BLE001
        return _error(exc)
    return (f"<div>Pair {int(pid)} sent back for re-labeling: it comes first under the "
            "<b>flagged</b> filter in the Label tab.</div>")


def do_view(ws, form: InspectInputs):
    """What the policy (the base model's tokenizer) and the reward model read for this prompt and response."""
    try:
        prompt = scoring.check_text(form.prompt, "prompt", required=False)
        response = scoring.check_text(form.response, "response")
        scorer = scorer_for(ws, form)
        rm = model_input.reward_view(scorer.tok, prompt, response, scorer.enable_thinking, model=scorer.label)
    except Exception:  # noqa: BLE001 — the same inputs failed to score: the score's box says why
        return ""
    policy = (form.base_model or "").strip() or run_base(ws, form.reward_model)
    if not policy:
        return render.model_views_html([rm])
    try:
        pv = model_input.policy_view(model_input.tokenizer(policy, bool(form.trust_remote_code)), prompt, response,
                                    scorer.enable_thinking, model=policy)
    except Exception as exc:  # noqa: BLE001 — the reward model's view stands on its own
        return render.model_views_html([rm]) + _error(f"No policy view: {explain(exc)}")
    return render.model_views_html([pv, rm])


def remember_split(ws, v):
    if v in SPLIT_MODES:
        ws.set_setting(SPLIT_KEY, v)


def warn_trust(on):
    if on:
        gr.Warning(TRUST_WARNING)


# ---------------------------------------------------------------- the tab

def _chooser(ws):
    """Which reward model scores, the base model for an untrained head, the step split."""
    start = choices(ws)
    with gr.Row(equal_height=True):
        model = gr.Dropdown(start, value=start[0][1], label="Reward model", scale=3, elem_id="inspect-model")
        refresh_btn = gr.Button("↻ Refresh runs", scale=0, min_width=120)
        split = gr.Radio(SPLIT_LABELS, value=saved_split(ws), label="Step split", scale=2, elem_id="inspect-split")
    with gr.Row(equal_height=True):
        base = fields.model_dropdown(str(DEMO_MODEL), "Base model (for the untrained head, and the policy's view)",
                                     "inspect-base", ws.root, scale=3)
        trust = gr.Checkbox(False, label="trust_remote_code", info=TRUST_SHORT, scale=1, elem_id="inspect-trust")
        prm = gr.Dropdown(inspect_process.choices(ws), value=inspect_process.newest(ws), scale=2, elem_id="inspect-prm",
                          label="Process reward model (each step right or wrong)")
    return model, refresh_btn, split, base, trust, prm


def _single():
    # the text beside what the two lenses make of it: the verdict and each step's numbers fit the first screen
    with gr.Row():
        with gr.Column(scale=5, min_width=380):
            prompt = gr.Textbox(EXAMPLE_PROMPT, label="Prompt", lines=2, elem_id="inspect-prompt")
            response = gr.Textbox(EXAMPLE_RESPONSE, label="Response", lines=8, elem_id="inspect-response")
            score_btn = gr.Button("Score", variant="primary", elem_id="inspect-score")
        with gr.Column(scale=6, min_width=420):
            summary = gr.HTML(SCORE_HINT, elem_id="inspect-summary")
    # the outcome model's own views, then the process model's: each under its lens's title
    steps, plot = gr.HTML(elem_id="inspect-steps"), gr.HTML(elem_id="inspect-plot")
    lens = gr.HTML(elem_id="inspect-process")
    outs = [summary, steps, lens, plot]
    with gr.Accordion("What the model sees: the exact text, chat template and special tokens included", open=True):
        view = gr.HTML(elem_id="inspect-model-view")
    return prompt, response, score_btn, outs, view


def _pair():
    with gr.Row():
        # no `minimum`: gradio would answer -1 with a red "Error" toast; parse_pair_id says it in words
        pair_id = gr.Number(label="Labeled pair id (load from the store)", precision=None, scale=1,
                            elem_id="inspect-pair-id")
        load_btn = gr.Button("Load pair", scale=0, min_width=120, elem_id="inspect-load")
    pair_prompt = gr.Textbox(label="Prompt", lines=2, elem_id="inspect-pair-prompt")
    with gr.Row():
        chosen = gr.Textbox(label="Chosen", lines=6, elem_id="inspect-chosen-text")
        rejected = gr.Textbox(label="Rejected", lines=6, elem_id="inspect-rejected-text")
    pair_btn = gr.Button("Score pair", variant="primary", elem_id="inspect-score-pair")
    margin = gr.HTML(elem_id="inspect-margin")
    with gr.Row():
        chosen_out = gr.HTML(elem_id="inspect-chosen")
        rejected_out = gr.HTML(elem_id="inspect-rejected")
    return pair_id, load_btn, pair_prompt, chosen, rejected, pair_btn, [margin, chosen_out, rejected_out]


def _dataset():
    with gr.Row():
        ds_btn = gr.Button("Score all labeled pairs", variant="primary", elem_id="inspect-dataset")
        ds_stop = gr.Button("Stop", scale=0, min_width=120, interactive=False, elem_id="inspect-dataset-stop")
    ds_summary = gr.HTML(elem_id="inspect-ds-summary")
    ds_process = gr.HTML(elem_id="inspect-ds-process")  # the process reward model's figures on the step labels
    hist = gr.HTML(elem_id="inspect-hist")
    gr.Markdown("**Pairs the model disagrees with most** — click a row to choose it.")
    dis = gr.Dataframe(headers=DIS_HEADERS, interactive=False, wrap=True, elem_id="inspect-disagreements")
    with gr.Row():
        picked_pair = gr.Number(None, label="Selected pair (click a row)", precision=0, interactive=False,
                                scale=1, elem_id="inspect-picked")
        open_btn = gr.Button("Open in pair view", scale=0, min_width=160, elem_id="inspect-open")
        relabel_btn = gr.Button("Send to Label for re-labeling", scale=0, min_width=260, elem_id="inspect-relabel")
    ds_msg = gr.HTML(elem_id="inspect-ds-msg")
    return ds_btn, ds_stop, ds_summary, ds_process, hist, dis, picked_pair, open_btn, relabel_btn, ds_msg


def build(studio: Studio):
    ws = studio.ws
    picked = gr.State(False)  # the user chose a reward model by hand: keep it; else follow the newest run
    prm_picked = gr.State(False)  # the same for the process reward model (a chosen "(none)" stays too)
    scoring = gr.State("")  # the token of this page's Dataset scoring (start_scoring)
    model, refresh_btn, split, base, trust, prm = _chooser(ws)
    with gr.Tabs() as views:
        with gr.Tab("Single", id="single"):
            prompt, response, score_btn, single_out, view = _single()
        with gr.Tab("Pair", id="pair"):
            pair_id, load_btn, pair_prompt, chosen, rejected, pair_btn, pair_out = _pair()
        with gr.Tab("Dataset", id="dataset"):
            ds_btn, ds_stop, ds_summary, ds_process, hist, dis, picked_pair, open_btn, relabel_btn, ds_msg = _dataset()

    def scored(callback, **widgets):  # an event that scores with the chosen reward model
        return inputs.bind(partial(callback, ws), InspectInputs, reward_model=model, base_model=base,
                           trust_remote_code=trust, **widgets)

    single = dict(prompt=prompt, response=response, split=split)
    # both lenses, one event; one at a time, in the order asked: a scoring started by choosing a model ends before the
    # Score pressed after it, so the page shows the text in the box, not the one there when the model was chosen
    both = dict(**scored(do_score, process_model=prm, **single), outputs=single_out, concurrency_id="inspect-single",
                concurrency_limit=1)
    score_btn.click(**both).then(**scored(do_view, **single), outputs=view)
    split.input(partial(remember_split, ws), split, None).then(**both)
    prm.input(lambda: True, None, prm_picked).then(**both)
    pair_btn.click(**scored(do_pair, prompt=pair_prompt, chosen=chosen, rejected=rejected, split=split),
                   outputs=pair_out)
    load_btn.click(**scored(do_load, pair_id=pair_id, split=split), outputs=[pair_prompt, chosen, rejected, *pair_out])
    ds_btn.click(start_scoring, None, [ds_stop, scoring], show_progress="hidden").then(  # Stop: while it runs
        **scored(do_dataset, scoring=scoring), outputs=[ds_summary, hist, dis]).then(
        partial(inspect_process.do_figures, ws), prm, ds_process).then(
        lambda: gr.update(interactive=False), None, ds_stop, show_progress="hidden")
    ds_stop.click(stop_dataset, scoring, None, show_progress="hidden")
    dis.select(pick, None, picked_pair)
    open_btn.click(**scored(do_open, pair_id=picked_pair, split=split),
                   outputs=[pair_id, pair_prompt, chosen, rejected, views, ds_msg, *pair_out])
    relabel_btn.click(partial(do_relabel, ws), picked_pair, ds_msg)
    messages.clear_on([(ds_btn.click, []), (dis.select, [])], [ds_msg])
    model.input(lambda: True, None, picked)
    model.change(partial(follow_run_base, ws), model, base, show_progress="hidden")
    refresh_btn.click(partial(refresh, ws), model, model)
    trust.input(warn_trust, trust, None)

    def hooks(demo: gr.Blocks, tab: gr.Tab) -> None:
        # a fresh run list (and the remembered split) whenever the tab is opened; not at the page's load, where
        # the tab is hidden: each event a page load fires costs the page its share (docs/BENCHMARKS.md)
        tab.select(partial(restore, ws), [model, picked], [model, split])
        tab.select(partial(inspect_process.restore, ws), [prm, prm_picked], prm)

    return hooks
