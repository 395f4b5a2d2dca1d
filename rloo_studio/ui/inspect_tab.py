"""Inspect tab: score a response with a reward model, step by step; pairs; the whole labeled set.

Thin: every callback reads widgets, calls rloo_studio.reward.scoring, and formats the result as HTML
(heat maps and plots are inline SVG/HTML, so they render without a plotting library).
"""
from __future__ import annotations

import html
from functools import partial

import gradio as gr

from rloo_studio.runs import catalog as runs
from rloo_studio.reward import scoring
from rloo_studio.core import model_view
from rloo_studio.core.errors import DataError, StudioError, explain
from rloo_studio.label.store import flag_for_relabel
from rloo_studio.core.models import TRUST_SHORT, TRUST_WARNING
from rloo_studio.core.paths import DEMO_MODEL
from rloo_studio.core.studio import Studio
from rloo_studio.core.thinking import SPLIT_MODES
from rloo_studio.ui import fields, messages, render

BASE = "__base__"
SPLIT_LABELS = [("blank line", "blank"), ("line", "line"), ("sentence", "sentence")]
SPLIT_KEY = "inspect_split"  # workspace setting: the step split last chosen
EXAMPLE_PROMPT = "Add 820 and 634."
EXAMPLE_RESPONSE = "<think>\n4+0+0=4\n\n2+3+0=5\n\n8+6+0=14\n</think>\n\nThe answer is 1454."
DIS_HEADERS = ["pair", "margin", "chosen score", "rejected score", "prompt"]

CSS = """
.rs-summary {display:flex; gap:1.2em; flex-wrap:wrap; align-items:baseline}
.rs-summary .num {font-size:1.4em; font-weight:600}
.rs-untrained, .rs-warn {background:#fff4d6; color:#6b4e00; border:1px solid #e8c766; border-radius:6px;
  padding:.4em .7em; margin:.3em 0}
.rs-error {background:#fde8e8; color:#8a1c1c; border:1px solid #f0a0a0; border-radius:6px; padding:.4em .7em}
.rs-steps {white-space:pre-wrap; font-family:var(--font-mono); font-size:.92em; line-height:1.7;
  border:1px solid var(--border-color-primary); border-radius:6px; padding:.6em}
.rs-steps .rs-step {border-radius:3px; padding:1px 2px; color:#111}
.rs-steps .rs-other {color:var(--body-text-color-subdued)}
.rs-legend {display:flex; align-items:center; gap:.5em; font-size:.85em; margin:.3em 0}
.rs-legend .bar {width:180px; height:12px; border-radius:3px;
  background:linear-gradient(90deg, rgb(220,60,60), rgb(245,245,245), rgb(40,170,80))}
.rs-plot svg, .rs-hist svg {width:100%; height:auto; max-width:900px}
.rs-explain {font-size:.85em; color:var(--body-text-color-subdued); margin:.2em 0 .4em}
.rs-steps .rs-answer {border-radius:3px; padding:1px 2px; color:#111; outline:1px dashed #7c3aed}
.rs-plot circle:hover {r: 5}
"""


MEANING = ("<b>total</b>: the score of the whole response, read at its end (what training compares) · "
           "<b>answer alone</b>: the answer scored with the thinking removed · <b>after thinking</b>: the score "
           "read right after &lt;/think&gt;, before the answer. total − after thinking is what the answer adds.")

# ---------------------------------------------------------------- formatting (pure)

def _color(delta: float, scale: float) -> str:
    t = max(-1.0, min(1.0, delta / scale)) if scale > 0 else 0.0
    end = (40, 170, 80) if t > 0 else (220, 60, 60)
    rgb = [round(245 + (e - 245) * abs(t)) for e in end]
    return f"rgb({rgb[0]},{rgb[1]},{rgb[2]})"


def _num(x: float | None) -> str:
    return "—" if x is None else f"{x:+.4f}"


def untrained_banner(scorer: scoring.Scorer) -> str:
    return "" if scorer.trained else (
        "<div class='rs-untrained'>Untrained score head: these numbers come from a random head and mean "
        "nothing yet. Train a reward model in the Reward model tab, then choose it here.</div>")


def summary_html(s: scoring.Scored, scorer: scoring.Scorer) -> str:
    warn = untrained_banner(scorer)
    shape = "thinking closed" if s.closed else "thinking unclosed (truncated)" if s.truncated else "no </think>"
    return (
        f"{warn}<div class='rs-summary'><span>total <span class='num' data-testid='total'>{_num(s.total)}</span></span>"
        f"<span>answer alone <span class='num'>{_num(s.answer)}</span></span>"
        f"<span>after thinking <span class='num'>{_num(s.thinking)}</span></span>"
        f"<span>{len(s.steps)} steps · {shape} · {html.escape(scorer.label)}</span></div>"
        f"<div class='rs-explain' data-testid='score-meaning'>{MEANING}</div>"
    )


def steps_html(s: scoring.Scored) -> str:
    """The response with each step colored by its delta; exact numbers on hover."""
    ans_delta = s.total - s.thinking if (s.thinking is not None and s.closed) else None
    scale = max([abs(st.delta) for st in s.steps] + ([abs(ans_delta)] if ans_delta is not None else []), default=0.0)
    parts, pos = [], 0
    for k, st in enumerate(s.steps, 1):
        parts.append(f"<span class='rs-other'>{html.escape(s.response[pos:st.start])}</span>")
        tip = f"step {k}: score {st.score:+.6f}, delta {st.delta:+.6f}"
        parts.append(f"<span class='rs-step' data-step='{k}' style='background:{_color(st.delta, scale)}' "
                     f"title='{tip}'>{html.escape(st.text)}</span>")
        pos = st.end
    rest = s.response[pos:]
    cut = rest.find("</think>") + len("</think>") if ans_delta is not None and "</think>" in rest else -1
    if cut >= 0 and rest[cut:].strip():  # the answer: coloured by what it adds to the score after thinking
        tip = f"answer: adds {ans_delta:+.6f} (total {s.total:+.6f} − after thinking {s.thinking:+.6f})"
        parts.append(f"<span class='rs-other'>{html.escape(rest[:cut])}</span><span class='rs-answer' "
                     f"style='background:{_color(ans_delta, scale)}' title='{tip}'>{html.escape(rest[cut:])}</span>")
    else:
        parts.append(f"<span class='rs-other'>{html.escape(rest)}</span>")
    legend = (f"<div class='rs-legend'><span>step delta</span><span>{-scale:+.4f}</span><span class='bar'></span>"
              f"<span>{scale:+.4f}</span><span>(hover a step or the answer for exact numbers)</span></div>")
    if not s.steps:
        legend = "<div class='rs-legend'>No &lt;think&gt; steps in this response: only the totals apply.</div>"
    return f"{legend}<div class='rs-steps'>{''.join(parts)}</div>"


def plot_svg(s: scoring.Scored, w: int = 820, h: int = 240, span: tuple[float, float] | None = None) -> str:
    """Score over response token positions; dashed lines at step boundaries; the token's text on hover.
    span: (low, high) of the y axis, shared by charts that are compared side by side."""
    ys = s.token_scores
    if not ys:
        return ""
    lo, hi = span if span else (min(ys), max(ys))
    pad = (hi - lo) * 0.08 or 0.05
    lo, hi = lo - pad, hi + pad
    L, R, T, B = 60, 15, 15, 35

    def X(i):
        return L + (w - L - R) * (i / max(1, len(ys) - 1))

    def Y(v):
        return T + (h - T - B) * (1 - (v - lo) / (hi - lo))

    out = [f"<svg viewBox='0 0 {w} {h}' xmlns='http://www.w3.org/2000/svg' font-size='11' data-testid='score-plot'>",
           f"<rect x='{L}' y='{T}' width='{w - L - R}' height='{h - T - B}' fill='none' stroke='#bbb'/>"]
    if lo < 0 < hi:
        out.append(f"<line x1='{L}' x2='{w - R}' y1='{Y(0):.1f}' y2='{Y(0):.1f}' stroke='#999' stroke-dasharray='2 3'/>")
    for k, st in enumerate(s.steps, 1):
        x = X(st.token)
        out.append(f"<line class='rs-boundary' x1='{x:.1f}' x2='{x:.1f}' y1='{T}' y2='{h - B}' stroke='#d08a00' "
                   f"stroke-dasharray='4 3'/><text x='{x + 2:.1f}' y='{T + 11}' fill='#b07000'>{k}</text>")
    pts = " ".join(f"{X(i):.1f},{Y(v):.1f}" for i, v in enumerate(ys))
    out.append(f"<polyline points='{pts}' fill='none' stroke='#2563eb' stroke-width='1.8'/>")
    for i, (t, v) in enumerate(zip(s.tokens, ys)):
        out.append(f"<circle cx='{X(i):.1f}' cy='{Y(v):.1f}' r='2.6' fill='#2563eb'>"
                   f"<title>token {i}: {html.escape(repr(t))}\nscore {v:+.6f}</title></circle>")
    for j in range(5):  # five labelled y ticks with light grid lines
        v = lo + pad + (hi - lo - 2 * pad) * j / 4
        out.append(f"<line x1='{L}' x2='{w - R}' y1='{Y(v):.1f}' y2='{Y(v):.1f}' stroke='#eee'/>"
                   f"<text x='{L - 4}' y='{Y(v) + 4:.1f}' text-anchor='end'>{v:+.3f}</text>")
    out.append(f"<text x='{L}' y='{h - 18}'>0</text><text x='{w - R}' y='{h - 18}' text-anchor='end'>{len(ys) - 1}</text>"
               f"<text x='{(L + w - R) / 2}' y='{h - 4}' text-anchor='middle'>response token position "
               f"(dashed: end of step k; last point: EOS = total)</text></svg>")
    return f"<div class='rs-plot'>{''.join(out)}</div>"


def hist_svg(view: scoring.DatasetView, w: int = 820, h: int = 200) -> str:
    bins = view.histogram
    if not bins:
        return ""
    top = max(c for _, _, c in bins)
    L, R, T, B = 40, 10, 10, 32
    bw = (w - L - R) / len(bins)
    out = [f"<svg viewBox='0 0 {w} {h}' xmlns='http://www.w3.org/2000/svg' font-size='11' data-testid='margin-hist'>"]
    for k, (a, b, c) in enumerate(bins):
        bh = (h - T - B) * c / top
        col = "#dc3c3c" if b <= 0 else "#28aa50" if a >= 0 else "#999"
        out.append(f"<rect x='{L + k * bw + 1:.1f}' y='{h - B - bh:.1f}' width='{bw - 2:.1f}' height='{bh:.1f}' "
                   f"fill='{col}'><title>margin {a:+.3f} to {b:+.3f}: {c} pairs</title></rect>")
    out.append(f"<text x='{L}' y='{h - 18}'>{bins[0][0]:+.3f}</text>"
               f"<text x='{w - R}' y='{h - 18}' text-anchor='end'>{bins[-1][1]:+.3f}</text>"
               f"<text x='{L - 4}' y='{T + 10}' text-anchor='end'>{top}</text>"
               f"<text x='{(L + w - R) / 2}' y='{h - 4}' text-anchor='middle'>margin = score(chosen) − score(rejected)"
               f" (red: the model disagrees with the label)</text></svg>")
    return f"<div class='rs-hist'>{''.join(out)}</div>"


def dataset_html(v: scoring.DatasetView, scorer: scoring.Scorer) -> str:
    warn = "" if scorer.trained else "<div class='rs-untrained'>Untrained score head: accuracy is chance.</div>"
    lr = "—" if v.length_r is None else f"{v.length_r:+.2f}"
    tr = "—" if v.thinking_r is None else f"{v.thinking_r:+.2f}"
    bias = "".join(f"<div class='rs-warn' data-testid='length-warning'>{html.escape(m)}</div>" for m in v.warnings)
    return (
        f"{warn}<div class='rs-summary'><span>accuracy <span class='num' data-testid='accuracy'>"
        f"{v.accuracy:.1%}</span></span><span>mean margin <span class='num'>{v.mean_margin:+.4f}</span></span>"
        f"<span>{len(v.pairs)} labeled pairs · {sum(p.margin < 0 for p in v.pairs)} disagreements "
        f"({len(v.disagreements)} with the most negative margin below)</span></div>"
        f"<div>length bias: r(score, response length) = {lr}, r(score, thinking length) = {tr}"
        f" (warning at |r| ≥ {scoring.LENGTH_BIAS_WARN})</div>{bias}"
    )


def _error(exc: BaseException | str) -> str:
    return f"<div class='rs-error'>{html.escape(exc if isinstance(exc, str) else explain(exc))}</div>"


# ---------------------------------------------------------------- callbacks (wired with functools.partial(f, ws))

def choices(ws) -> list[tuple[str, str]]:
    """The trained reward runs, newest first, then the base model with an untrained head."""
    return list(runs.trained_adapters(ws, "reward")) + [("base model, untrained head", BASE)]


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
        return str(runs.run_config(ws, runs.find_run(ws, choice, "reward")["id"]).get("model") or "")
    except StudioError:
        return ""


def follow_run_base(ws, choice):
    """Picking a reward run puts its base model in the base box: the policy's view then reads the text with the
    tokenizer that run was trained with (a Qwen3 run is not shown through the demo tokenizer)."""
    return run_base(ws, choice) or gr.skip()


def scorer_for(ws, choice, base, trust=False):
    if choice == BASE or not choice:
        if not (base or "").strip():
            raise DataError("Choose a base model for the untrained head (the model field above).")
        return scoring.load_scorer(reward_model=base.strip(), trust_remote_code=bool(trust))
    return scoring.load_scorer(ws, reward_run=choice)


def do_score(ws, choice, base_model, trust_code, p, r, sp):
    try:
        p, r = scoring.check_text(p, "prompt", required=False), scoring.check_text(r, "response")
        sc = scorer_for(ws, choice, base_model, trust_code)
        s = scoring.score_response(sc, p, r, sp)
    except Exception as exc:  # noqa: BLE001 — shown on the page, nothing saved
        return _error(exc), "", ""
    return summary_html(s, sc), steps_html(s), plot_svg(s)


def _side(s, title, span=None):
    return f"<h4>{title}: {s.total:+.4f}</h4>{steps_html(s)}{plot_svg(s, 420, 200, span)}"


def shared_span(*scored) -> tuple[float, float]:
    """One y range for charts shown side by side (chosen and rejected), so heights compare."""
    ys = [v for s in scored for v in s.token_scores] or [0.0]
    return min(ys), max(ys)


def do_pair(ws, choice, base_model, trust_code, p, c, r, sp):
    try:
        p = scoring.check_text(p, "prompt", required=False)
        c, r = scoring.check_text(c, "chosen response"), scoring.check_text(r, "rejected response")
        sc = scorer_for(ws, choice, base_model, trust_code)
        a, b = scoring.score_responses(sc, [(p, c), (p, r)], sp)
    except Exception as exc:  # noqa: BLE001
        return _error(exc), "", ""
    m = a.total - b.total
    verdict = "agrees with the label" if m > 0 else "disagrees with the label"
    return (f"{untrained_banner(sc)}<div class='rs-summary'><span>margin "
            f"<span class='num' data-testid='margin'>{m:+.4f}</span></span><span>the model {verdict}</span></div>",
            _side(a, "Chosen", shared_span(a, b)), _side(b, "Rejected", shared_span(a, b)))


def do_load(ws, pid, choice, base_model, trust_code, sp):
    """Load a labeled pair by id and score it: (prompt, chosen, rejected, margin, chosen view, rejected view).
    An id that names no labeled pair empties the view and says so; nothing is scored."""
    try:
        r = scoring.pair_texts(ws, scoring.parse_pair_id(pid))
    except Exception as exc:  # noqa: BLE001
        return "", "", "", _error(exc), "", ""
    return (r["prompt"], r["chosen"], r["rejected"],
            *do_pair(ws, choice, base_model, trust_code, r["prompt"], r["chosen"], r["rejected"], sp))


def do_dataset(ws, choice, base_model, trust_code):
    try:
        sc = scorer_for(ws, choice, base_model, trust_code)
        v = scoring.dataset_view(sc, ws, top=20)
    except Exception as exc:  # noqa: BLE001
        return _error(exc), "", []
    rows = [[p.pair_id, round(p.margin, 4), round(p.chosen_score, 4), round(p.rejected_score, 4),
             p.prompt[:120]] for p in v.disagreements]
    return dataset_html(v, sc), hist_svg(v), rows


def pick(evt: gr.SelectData):
    row = evt.row_value or []
    return int(row[0]) if row else None


def do_open(ws, pid, choice, base_model, trust_code, sp):
    if not pid:
        return (*[gr.update()] * 5, "<div class='rs-error'>Click a row of the table first.</div>", *[gr.update()] * 3)
    p, c, r, margin, c_out, r_out = do_load(ws, pid, choice, base_model, trust_code, sp)
    return pid, p, c, r, gr.Tabs(selected="pair"), "", margin, c_out, r_out


def do_relabel(ws, pid):
    if not pid:
        return "<div class='rs-error'>Click a row of the table first.</div>"
    try:
        flag_for_relabel(ws, int(pid), "reward model disagrees")
    except Exception as exc:  # noqa: BLE001
        return _error(exc)
    return (f"<div>Pair {int(pid)} sent back for re-labeling: it comes first under the "
            "<b>flagged</b> filter in the Label tab.</div>")


def do_view(ws, choice, base_model, trust_code, p, r):
    """What the policy (the base model's tokenizer) and the reward model read for this prompt and response."""
    try:
        p, r = scoring.check_text(p, "prompt", required=False), scoring.check_text(r, "response")
        sc = scorer_for(ws, choice, base_model, trust_code)
        rm = model_view.reward_view(sc.tok, p, r, sc.enable_thinking, model=sc.label)
    except Exception:  # noqa: BLE001 — the same inputs failed to score: the score's box says why
        return ""
    policy = (base_model or "").strip() or run_base(ws, choice)
    if not policy:
        return render.model_views_html([rm])
    try:
        pv = model_view.policy_view(model_view.tokenizer(policy, bool(trust_code)), p, r, sc.enable_thinking,
                                    model=policy)
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
        trust = gr.Checkbox(False, label="trust_remote_code", info=TRUST_SHORT, scale=2, elem_id="inspect-trust")
    return model, refresh_btn, split, base, trust


def _single():
    with gr.Row():
        prompt = gr.Textbox(EXAMPLE_PROMPT, label="Prompt", lines=2, elem_id="inspect-prompt")
        response = gr.Textbox(EXAMPLE_RESPONSE, label="Response", lines=8, elem_id="inspect-response")
    score_btn = gr.Button("Score", variant="primary", elem_id="inspect-score")
    outs = [gr.HTML(elem_id="inspect-summary"), gr.HTML(elem_id="inspect-steps"), gr.HTML(elem_id="inspect-plot")]
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
    ds_btn = gr.Button("Score all labeled pairs", variant="primary", elem_id="inspect-dataset")
    ds_summary = gr.HTML(elem_id="inspect-ds-summary")
    hist = gr.HTML(elem_id="inspect-hist")
    gr.Markdown("**Pairs the model disagrees with most** — click a row to choose it.")
    dis = gr.Dataframe(headers=DIS_HEADERS, interactive=False, wrap=True, elem_id="inspect-disagreements")
    with gr.Row():
        picked_pair = gr.Number(None, label="Selected pair (click a row)", precision=0, interactive=False,
                                scale=1, elem_id="inspect-picked")
        open_btn = gr.Button("Open in pair view", scale=0, min_width=160, elem_id="inspect-open")
        relabel_btn = gr.Button("Send to Label for re-labeling", scale=0, min_width=220, elem_id="inspect-relabel")
    ds_msg = gr.HTML(elem_id="inspect-ds-msg")
    return ds_btn, ds_summary, hist, dis, picked_pair, open_btn, relabel_btn, ds_msg


def build(studio: Studio):
    ws = studio.ws
    picked = gr.State(False)  # the user chose a reward model by hand: keep it; else follow the newest run
    model, refresh_btn, split, base, trust = _chooser(ws)
    with gr.Tabs() as views:
        with gr.Tab("Single", id="single"):
            prompt, response, score_btn, single_out, view = _single()
        with gr.Tab("Pair", id="pair"):
            pair_id, load_btn, pair_prompt, chosen, rejected, pair_btn, pair_out = _pair()
        with gr.Tab("Dataset", id="dataset"):
            ds_btn, ds_summary, hist, dis, picked_pair, open_btn, relabel_btn, ds_msg = _dataset()

    scored_by = [model, base, trust]
    single_in = [*scored_by, prompt, response, split]
    score_btn.click(partial(do_score, ws), single_in, single_out).then(
        partial(do_view, ws), [*scored_by, prompt, response], view)
    split.input(partial(remember_split, ws), split, None).then(partial(do_score, ws), single_in, single_out)
    pair_btn.click(partial(do_pair, ws), [*scored_by, pair_prompt, chosen, rejected, split], pair_out)
    load_btn.click(partial(do_load, ws), [pair_id, *scored_by, split], [pair_prompt, chosen, rejected, *pair_out])
    ds_btn.click(partial(do_dataset, ws), scored_by, [ds_summary, hist, dis])
    dis.select(pick, None, picked_pair)
    open_btn.click(partial(do_open, ws), [picked_pair, *scored_by, split],
                   [pair_id, pair_prompt, chosen, rejected, views, ds_msg, *pair_out])
    relabel_btn.click(partial(do_relabel, ws), picked_pair, ds_msg)
    messages.clear_on([(ds_btn.click, []), (dis.select, [])], [ds_msg])
    model.input(lambda: True, None, picked)
    model.change(partial(follow_run_base, ws), model, base, show_progress="hidden")
    refresh_btn.click(partial(refresh, ws), model, model)
    trust.input(warn_trust, trust, None)

    def hooks(demo: gr.Blocks, tab: gr.Tab) -> None:
        # a fresh run list (and the remembered split) whenever the tab is opened or the page loads
        tab.select(partial(restore, ws), [model, picked], [model, split])
        demo.load(partial(restore, ws), [model, picked], [model, split])

    return hooks
