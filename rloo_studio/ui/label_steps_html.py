"""What the Label tab's step mode draws: the prompt, the numbered <think> steps (the one to label highlighted, each
labeled one with its verdict in colour and in words), the final answer as the last thing to judge, and, with a
process reward model chosen, each step's probability of being right and the verdicts the model proposes (pre-marked:
a dashed edge in the verdict's colour). Pure HTML; ui/label_steps.py wires it.
"""
from __future__ import annotations

import html

from rloo_studio.inspect.step_assist import THRESHOLD
from rloo_studio.label import steps
from rloo_studio.ui import render

CSS = """
#stp-view .stp-prompt {font-size: 1.05em; padding: .5em .8em; border-radius: 6px;
    background: var(--block-background-fill); margin-bottom: .6em}
#stp-view .stp-model-line {margin: 0 0 .5em; padding: .35em .7em; border-radius: 6px; border: 1px dashed #7c3aed;
    background: rgba(124,58,237,.06)}
#stp-view ol.stp-steps {margin: 0 0 .6em; padding-left: 2.6em}
#stp-view .stp-step, #stp-view .stp-answer {margin: .25em 0; padding: .35em .6em; border-radius: 6px;
    border: 1px solid transparent; border-left-width: 5px}
#stp-view .stp-text {font-family: var(--font-mono); white-space: pre-wrap; overflow-wrap: anywhere}
#stp-view .stp-row {display: flex; gap: 1em; align-items: baseline; flex-wrap: wrap}
#stp-view .stp-row .stp-text {flex: 1 1 16em}
#stp-view .stp-meta {display: flex; gap: .6em; flex-wrap: wrap; align-items: baseline}
#stp-view .stp-tag {display: inline-block; font-size: .8em; font-weight: 600; padding: 0 .5em; border-radius: 9px}
#stp-view .stp-model {font-size: .85em; color: var(--body-text-color-subdued)}
#stp-view .stp-model b {font-weight: 600; color: var(--body-text-color)}
#stp-view .stp-model.stp-doubt b {color: #b91c1c}
#stp-view .stp-current {border-color: #2563eb; background: rgba(37,99,235,.12);
    box-shadow: 0 0 0 2px rgba(37,99,235,.35)}
#stp-view .stp-current .stp-tag {background: #2563eb; color: #fff}
#stp-view .stp-prop-good {border-left: 5px dashed #16a34a}
#stp-view .stp-prop-bad {border-left: 5px dashed #dc2626}
#stp-view .stp-good {border-left: 5px solid #16a34a; background: rgba(22,163,74,.08)}
#stp-view .stp-good .stp-tag {background: #16a34a; color: #fff}
#stp-view .stp-neutral {border-left: 5px solid #a16207; background: rgba(202,138,4,.10)}
#stp-view .stp-neutral .stp-tag {background: #a16207; color: #fff}
#stp-view .stp-bad {border-left: 5px solid #dc2626; background: rgba(220,38,38,.10)}
#stp-view .stp-bad .stp-tag {background: #dc2626; color: #fff}
#stp-view .stp-after-bad {opacity: .55}
#stp-view .stp-answer {margin: .6em 0 0 2.6em; border-top: 2px solid var(--border-color-primary)}
#stp-view .stp-answer-title {font-size: .85em; font-weight: 400; letter-spacing: .04em; text-transform: uppercase;
    color: var(--body-text-color-subdued)}
#stp-good {background: #16a34a; border-color: #15803d; color: #fff}
#stp-neutral {background: #a16207; border-color: #854d0e; color: #fff}
#stp-bad {background: #dc2626; border-color: #b91c1c; color: #fff}
#stp-accept {background: #7c3aed; border-color: #6d28d9; color: #fff}
#stp-good:disabled, #stp-neutral:disabled, #stp-bad:disabled, #stp-accept:disabled {opacity: .45}
"""
# The answer's heading is drawn at weight 400: the bundled Source Sans Pro has weights 400 and 600 only, and at 700
# (or in capitals at 600) Chromium took some capitals from a fallback font ("FINal ANSWER" in two sizes).


def _p(p: float) -> str:
    return f"{p:.2f}"


def model_line(r: dict, probs: list[float] | None, proposal: list, run_label: str) -> str:
    """One sentence above the steps: what the model says of this response and what the accept key would store."""
    who = html.escape(run_label)
    if probs is None:
        return (f"<div class='stp-model-line'>{who} reads this response's steps otherwise (a step without a token of "
                "its own): no verdicts here; label the steps yourself.</div>")
    doubt = next((k for k, p in enumerate(probs) if p < THRESHOLD), None)
    said = (f"doubts step {doubt + 1} first (p(right) {_p(probs[doubt])})" if doubt is not None
            else f"trusts every step (least: p(right) {_p(min(probs))})" if probs else "has no step to judge")
    if proposal:
        first, last = proposal[0][0] + 1, proposal[-1][0] + 1
        span = f"step {first}" if first == last else f"steps {first}–{last}"
        ends = " (the last one bad: the first wrong step)" if proposal[-1][1] < 0 else ", then you judge the answer"
        act = f" Press <b>a</b> to accept its verdicts on {span}{ends}."
    else:
        act = " It does not judge the final answer: that is yours." if r["step"] == r["answer_step"] else ""
    return f"<div class='stp-model-line'>{who} {said}.{act}</div>"


def _step_item(r: dict, k: int, text: str, probs, proposed: dict) -> str:
    verdict, current = r["labels"][k], k == r["step"]
    if current:
        cls, tag = "stp-current", "▶ label this step"
    elif verdict is not None:
        cls = f"stp-{steps.WORDS[verdict]}"
        tag = steps.WORDS[verdict] + (" · accepted from the model" if r["accepted"][k] else "")
    elif r["first_bad"] is not None and k > r["first_bad"]:
        cls, tag = "stp-after-bad", "after the first wrong step: not labeled"
    else:
        cls, tag = "", ""
    model, attrs = "", ""
    if probs is not None and k < len(probs):
        p = probs[k]
        doubt = p < THRESHOLD
        model = (f"<span class='stp-model{' stp-doubt' if doubt else ''}'>model: p(right) <b>{_p(p)}</b>"
                 + (" · doubts it" if doubt else "") + "</span>")
        attrs = f" data-p='{p:.4f}'"
    if k in proposed and verdict is None:
        word = steps.WORDS[proposed[k]]
        cls += f" stp-prop-{word}"
        attrs += f" data-proposed='{word}'"
        model += f"<span class='stp-model'>proposes <b>{word}</b></span>"
    tag_html = f"<span class='stp-tag'>{html.escape(tag)}</span>" if tag else ""
    meta = f"<div class='stp-meta'>{tag_html}{model}</div>" if tag_html or model else ""
    return (f"<li class='stp-step {cls}' data-step-index='{k}'{attrs}><div class='stp-row'><div class='stp-text'>"
            f"{html.escape(text)}</div>{meta}</div></li>")


def _answer_item(r: dict, modeled: bool) -> str:
    n = r["answer_step"]
    verdict = r["labels"][n]
    if n == r["step"]:
        cls, tag = "stp-current", "▶ judge the final answer: 1 right, 3 wrong"
    elif verdict is not None:
        cls, tag = f"stp-{steps.WORDS[verdict]}", {1: "right", 0: "neutral", -1: "wrong"}[verdict]
    elif r["first_bad"] is not None:
        cls, tag = "stp-after-bad", "after the first wrong step: not labeled"
    else:
        cls, tag = "", ""
    answer = render.esc(r["answer_text"]) if r["answer_text"] else "<i>no answer after the reasoning</i>"
    tag_html = f"<span class='stp-tag'>{html.escape(tag)}</span>" if tag else ""
    model = "<span class='stp-model'>the model does not judge the answer</span>" if modeled else ""
    meta = f"<div class='stp-meta'>{tag_html}{model}</div>" if tag_html or model else ""
    return (f"<div class='stp-answer {cls}' data-step-index='{n}'><div class='stp-answer-title'>Final answer</div>"
            f"<div class='stp-row'><div>{answer}</div>{meta}</div></div>")


def steps_html(r: dict, probs: list[float] | None = None, proposal: list | None = None, run_label: str = "",
               run_id: str = "") -> str:
    """The prompt, the model's sentence (when one is chosen), the steps, the final answer. The element holding
    data-response / data-step (/ data-run) names what a key press labels (label_steps.ON_SCREEN_JS)."""
    prompt = "".join(f"<div><b>{html.escape(str(t.get('role', '')))}</b>: {render.esc(str(t.get('content', '')))}</div>"
                     for t in r["turns"]) if r["turns"] else render.esc(r["prompt"])
    proposed = {k: v for k, v, _ in proposal or ()}
    modeled = bool(run_label)
    items = "".join(_step_item(r, k, text, probs, proposed) for k, text in enumerate(r["steps"]))
    line = model_line(r, probs, proposal or [], run_label) if modeled else ""
    where = (f" data-response='{r['response_id']}' data-step='{r['step']}' data-run='{html.escape(run_id)}'"
             if r["step"] is not None else "")
    return (f"<div class='stp-shown'{where}><div class='stp-prompt'>{prompt}</div>{line}"
            f"<ol class='stp-steps'>{items}</ol>{_answer_item(r, modeled)}</div>")
