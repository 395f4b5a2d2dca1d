"""Playground tab: type a prompt, see the base model and base + an RLOO run's adapter answer side by side,
streamed, reasoning apart from the answer, each with its rewards. The core is playground.play()."""
from __future__ import annotations

import html
from dataclasses import dataclass
from functools import partial

import gradio as gr

from rloo_studio.core import kept
from rloo_studio.core.errors import StudioError, explain
from rloo_studio.rloo import playground
from rloo_studio.studio import Studio
from rloo_studio.ui import fields, inputs

CSS = """
.pg-side .pg-think {color:var(--body-text-color-subdued); white-space:pre-wrap; font-size:.9em;
  border-left:3px solid var(--border-color-primary); padding-left:.6em; margin:.3em 0}
.pg-side .pg-answer {white-space:pre-wrap; font-weight:600; margin:.4em 0}
.pg-side .pg-meta {color:var(--body-text-color-subdued); font-size:.85em}
"""


def side_html(title: str, side: playground.Side | None, names: list[str], weights: list[float]) -> str:
    if side is None:
        return f"<div class='pg-side'><h3>{html.escape(title)}</h3><div class='pg-meta'>no answer yet</div></div>"
    state = "done" if side.done else "generating…"
    if side.done and not side.stopped:
        state = "cut at max new tokens"
    out = [f"<div class='pg-side'><h3>{html.escape(title)}</h3>"]
    if side.thinking or not side.closed:
        out.append(f"<div class='pg-think'><b>thinking</b>\n{html.escape(side.thinking)}</div>")
    out.append(f"<div class='pg-answer'>{html.escape(side.answer) if side.closed or side.answer else ''}</div>")
    meta = f"{side.tokens} tokens, {state}"
    if side.rewards is not None:
        parts = [f"{html.escape(n)} {'n/a' if v is None else f'{v:+.3g}'}" for n, v in side.rewards.items()]
        tot = playground.total(side.rewards, names, weights)
        meta += " · rewards: " + ", ".join(parts) + ("" if tot is None else f" · weighted total <b>{tot:+.3g}</b>")
        meta += "".join(f"<br>{html.escape(n)}" for n in side.notes)
    out.append(f"<div class='pg-meta'>{meta}</div></div>")
    return "".join(out)


# -- callbacks ---------------------------------------------------------------------------------------------

NO_RUN = ("**Train an RLOO run first (RLOO tab):** the playground compares the base model with a finished run's "
          "trained adapter, and no RLOO run here has saved one yet. Meanwhile you can type a base model "
          "(a local folder or a cached hub id) and try it alone.")


def choices(ws, current):
    """(run dropdown, the 'train a run first' notice): the dropdown only when there is a run to pick."""
    runs = playground.run_choices(ws)
    ids = [rid for _, rid in runs]
    return (gr.update(choices=runs, value=current if current in ids else (ids[0] if ids else None), visible=bool(ids)),
            gr.update(visible=not ids))


def unload():
    """Free every model the studio keeps between jobs (the Playground's, Inspect's scorers: core/kept.py); a plain
    message either way, naming what was freed."""
    try:
        was = kept.unload_all()
    except StudioError as e:
        return f"**{html.escape(explain(e))}**", kept_md()
    if not was:
        return "No model was loaded: nothing to free.", kept_md()
    return (f"Unloaded {html.escape(kept.describe_held(was))}: its memory is free. The next answer or score loads "
            "what it needs again.", kept_md())


def kept_md() -> str:
    """What the studio keeps in memory now (shown under the buttons, refreshed when the tab opens)."""
    held = kept.held()
    return ("Kept in memory now: " + html.escape(kept.describe_held(held)) + ".") if held else \
        "No model is kept in memory between jobs now."


@dataclass(frozen=True)
class PlayInputs:
    """The playground's form, as typed."""
    run_id: str | None  # the RLOO run whose adapter answers on the right (None: the base model alone)
    base: str | None  # the base model ('' or None: the run's own)
    prompt: str
    expected: str  # the expected answer, for the correctness reward
    max_new_tokens: int | None
    temperature: float | None
    top_p: float | None
    seed: int | None


def answer(ws, form: PlayInputs):
    """Stream both answers into the two panels; a plain message on bad input, nothing else changes."""
    empty = side_html("Base model", None, [], []), side_html("Base + adapter", None, [], [])
    run_id = form.run_id
    try:
        settings = playground.PlaySettings(max_new_tokens=int(form.max_new_tokens or 0),
                                           temperature=float(form.temperature or 0),
                                           top_p=float(form.top_p if form.top_p is not None else 1),
                                           seed=int(form.seed or 0))
        names, weights = [], []
        for state in playground.play(ws, form.prompt, run_id or None, settings, base=form.base, answer=form.expected):
            if not names and run_id:
                from rloo_studio.rloo.config import run_config

                cfg = run_config(ws, run_id)
                names, weights = list(cfg.rewards), list(cfg.reward_weights)
            yield (side_html("Base model", state.get("base"), names, weights),
                   side_html("Base + adapter", state.get("adapter"), names, weights)
                   if run_id else side_html("Base + adapter", None, [], []), "")
    except (StudioError, ValueError, TypeError) as e:
        yield *empty, f"**{html.escape(explain(e) if isinstance(e, StudioError) else str(e))}**"


def build(studio: Studio):
    ws = studio.ws
    gr.Markdown("Type a prompt and compare the base model with the trained adapter. Training keeps running "
                "meanwhile; both sides use the same seed and settings.")
    runs = playground.run_choices(ws)
    with gr.Row():
        run = gr.Dropdown(runs, label="RLOO run (its adapter)", scale=2, elem_id="playground-run", visible=bool(runs))
        none = gr.Markdown(NO_RUN, visible=not runs, elem_id="playground-no-run")
        base = fields.model_dropdown(None, "Base model (empty: the run's own)", "playground-base-model", ws.root,
                                     info=None, scale=2)
    prompt = gr.Textbox(label="Prompt", lines=2, elem_id="playground-prompt", placeholder="What is 123+456?")
    expected = gr.Textbox(label="Expected answer (optional, for the correctness reward)", elem_id="playground-expected")
    with gr.Accordion("Sampling", open=False):
        with gr.Row():
            max_new = gr.Number(128, label="max new tokens", precision=0, elem_id="playground-max-new")
            temperature = gr.Number(0.0, label="temperature (0: greedy)", elem_id="playground-temperature")
            top_p = gr.Number(1.0, label="top_p", elem_id="playground-top-p")
            seed = gr.Number(0, label="seed", precision=0, elem_id="playground-seed")
    with gr.Row():
        go = gr.Button("Answer", variant="primary", scale=3, elem_id="playground-go")
        b_unload = gr.Button("Unload models (free memory)", scale=1, elem_id="playground-unload")
    msg = gr.Markdown(elem_id="playground-msg")
    held = gr.Markdown(elem_id="playground-kept")  # filled when the tab is opened (hooks)
    with gr.Row():
        left = gr.HTML(side_html("Base model", None, [], []), elem_id="playground-base")
        right = gr.HTML(side_html("Base + adapter", None, [], []), elem_id="playground-adapter")
    ev = dict(**inputs.bind(partial(answer, ws), PlayInputs, run_id=run, base=base, prompt=prompt, expected=expected,
                            max_new_tokens=max_new, temperature=temperature, top_p=top_p, seed=seed),
              outputs=[left, right, msg], concurrency_limit=2, concurrency_id="playground", show_progress="minimal")
    go.click(**ev).then(kept_md, None, held, show_progress="hidden")
    prompt.submit(**ev).then(kept_md, None, held, show_progress="hidden")
    b_unload.click(unload, None, [msg, held])

    def hooks(demo, tab):
        tab.select(partial(choices, ws), run, [run, none], queue=False, show_progress="hidden")
        tab.select(kept_md, None, held, queue=False, show_progress="hidden")

    return hooks
