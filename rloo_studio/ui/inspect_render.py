"""The Inspect tab's HTML: score summaries, step heat maps, token plots and histograms as inline SVG/HTML
(they render without a plotting library). Pure functions of reward.scoring's results; no Gradio."""
from __future__ import annotations

import html

from rloo_studio.inspect import scoring
from rloo_studio.inspect.dataset import LENGTH_BIAS_WARN, DatasetView

CSS = """
.rs-summary {display:flex; gap:1.2em; flex-wrap:wrap; align-items:baseline}
.rs-summary .num {font-size:1.4em; font-weight:600}
.rs-groups {margin-top:.5em; border-collapse:collapse; font-size:.92em}
.rs-groups td, .rs-groups th {padding:.1em .8em; text-align:left; white-space:nowrap}
.rs-groups td.num {text-align:right; font-variant-numeric:tabular-nums}
.rs-untrained, .rs-warn {background:#fff4d6; color:#6b4e00; border:1px solid #e8c766; border-radius:6px;
  padding:.4em .7em; margin:.3em 0}
.rs-error {background:#fde8e8; color:#8a1c1c; border:1px solid #f0a0a0; border-radius:6px; padding:.4em .7em}
.rs-note {background:var(--block-background-fill); border:1px solid var(--border-color-primary); border-radius:6px;
  padding:.4em .7em}
.rs-steps {white-space:pre-wrap; font-family:var(--font-mono); font-size:.92em; line-height:1.7;
  border:1px solid var(--border-color-primary); border-radius:6px; padding:.6em}
.rs-steps .rs-step {border-radius:3px; padding:1px 2px; color:#111}
.rs-steps .rs-other {color:var(--body-text-color-subdued)}
.rs-legend {display:flex; align-items:center; gap:.5em; font-size:.85em; margin:.3em 0}
.rs-legend .bar {width:180px; height:12px; border-radius:3px;
  background:linear-gradient(90deg, rgb(230,110,110), rgb(245,245,245), rgb(40,170,80))}
.rs-chart-title {font-weight:600; margin:.6em 0 .2em}
.rs-plot svg, .rs-hist svg {width:100%; height:auto; max-width:900px}
.rs-explain {font-size:.85em; color:var(--body-text-color-subdued); margin:.2em 0 .4em}
.rs-steps .rs-answer {border-radius:3px; padding:1px 2px; color:#111; outline:1px dashed #7c3aed}
.rs-plot circle:hover {r: 5}
"""


RED, GREEN = (230, 110, 110), (40, 170, 80)  # the ends of every shade (`shade`)
OUTCOME_STEPS = "Outcome model: how its score moved at each step"
OUTCOME_TOKENS = "Outcome model: score at each token"
OUTCOME_MARGINS = "Outcome model: margin on each labeled pair"

MEANING = ("<b>total</b>: the score of the whole response, read at its end (what training compares) · "
           "<b>answer alone</b>: the answer scored with the thinking removed · <b>after thinking</b>: the score "
           "read right after &lt;/think&gt;, before the answer. total − after thinking is what the answer adds.")

# ---------------------------------------------------------------- formatting (pure)

def shade(delta: float, scale: float) -> str:
    """Green for a rise, red for a fall, near-white for none. The ends are light enough that near-black text
    (#111) on any shade keeps a contrast of at least 4.5 (6.1 on the reddest, 5.9 on the greenest)."""
    t = max(-1.0, min(1.0, delta / scale)) if scale > 0 else 0.0
    end = GREEN if t > 0 else RED
    rgb = [round(245 + (e - 245) * abs(t)) for e in end]
    return f"rgb({rgb[0]},{rgb[1]},{rgb[2]})"


def _num(x: float | None) -> str:
    return "—" if x is None else f"{x:+.4f}"


def untrained_banner(scorer: scoring.Scorer) -> str:
    return "" if scorer.trained else (
        "<div class='rs-untrained'>Untrained score head: these numbers come from a random head and mean "
        "nothing yet. Train a reward model in the Reward model tab, then choose it here.</div>")


def summary_html(s: scoring.Scored, scorer: scoring.Scorer, banner: bool = True) -> str:
    """The outcome model's totals and what they mean (banner=False: the untrained-head banner is shown above)."""
    warn = untrained_banner(scorer) if banner else ""
    shape = "thinking closed" if s.closed else "thinking unclosed (truncated)" if s.truncated else "no </think>"
    return (
        f"{warn}<div class='rs-summary'><span>outcome model: total "
        f"<span class='num' data-testid='total'>{_num(s.total)}</span></span>"
        f"<span>answer alone <span class='num'>{_num(s.answer)}</span></span>"
        f"<span>after thinking <span class='num'>{_num(s.thinking)}</span></span>"
        f"<span>{len(s.steps)} steps · {shape} · {html.escape(scorer.label)}</span></div>"
        f"<div class='rs-explain' data-testid='score-meaning'>{MEANING}</div>"
    )


def steps_html(s: scoring.Scored, title: str = OUTCOME_STEPS) -> str:
    """The response with each step colored by its delta; exact numbers on hover."""
    ans_delta = s.total - s.thinking if (s.thinking is not None and s.closed) else None
    scale = max([abs(st.delta) for st in s.steps] + ([abs(ans_delta)] if ans_delta is not None else []), default=0.0)
    parts, pos = [], 0
    for k, st in enumerate(s.steps, 1):
        parts.append(f"<span class='rs-other'>{html.escape(s.response[pos:st.start])}</span>")
        tip = f"step {k}: score {st.score:+.6f}, delta {st.delta:+.6f}"
        parts.append(f"<span class='rs-step' data-step='{k}' style='background:{shade(st.delta, scale)}' "
                     f"title='{tip}'>{html.escape(st.text)}</span>")
        pos = st.end
    rest = s.response[pos:]
    cut = rest.find("</think>") + len("</think>") if ans_delta is not None and "</think>" in rest else -1
    if cut >= 0 and rest[cut:].strip():  # the answer: coloured by what it adds to the score after thinking
        tip = f"answer: adds {ans_delta:+.6f} (total {s.total:+.6f} − after thinking {s.thinking:+.6f})"
        parts.append(f"<span class='rs-other'>{html.escape(rest[:cut])}</span><span class='rs-answer' "
                     f"style='background:{shade(ans_delta, scale)}' title='{tip}'>{html.escape(rest[cut:])}</span>")
    else:
        parts.append(f"<span class='rs-other'>{html.escape(rest)}</span>")
    legend = (f"<div class='rs-legend'><span>outcome model, step delta (the score if the answer ended here, minus "
              f"the step before)</span><span>{-scale:+.4f}</span><span class='bar'></span>"
              f"<span>{scale:+.4f}</span><span>(hover a step or the answer for exact numbers)</span></div>")
    if not s.steps:
        legend = "<div class='rs-legend'>No &lt;think&gt; steps in this response: only the totals apply.</div>"
    head = f"<div class='rs-chart-title'>{html.escape(title)}</div>" if title else ""
    return f"{head}{legend}<div class='rs-steps'>{''.join(parts)}</div>"


def plot_svg(s: scoring.Scored, w: int = 820, h: int = 240, span: tuple[float, float] | None = None,
             title: str = OUTCOME_TOKENS) -> str:
    """Score over response token positions; dashed lines at step boundaries; the token's text on hover.
    span: (low, high) of the y axis, shared by charts that are compared side by side."""
    ys = s.token_scores
    if not ys:
        return ""
    lo, hi = span if span else (min(ys), max(ys))
    pad = (hi - lo) * 0.08 or 0.05
    lo, hi = lo - pad, hi + pad
    left, right, top, bottom = 60, 15, 15, 35  # margins around the plot area

    def x_at(i):
        return left + (w - left - right) * (i / max(1, len(ys) - 1))

    def y_at(v):
        return top + (h - top - bottom) * (1 - (v - lo) / (hi - lo))

    out = [f"<svg viewBox='0 0 {w} {h}' xmlns='http://www.w3.org/2000/svg' font-size='11' data-testid='score-plot'>",
           f"<rect x='{left}' y='{top}' width='{w - left - right}' height='{h - top - bottom}' fill='none' "
           "stroke='#bbb'/>"]
    if lo < 0 < hi:
        out.append(f"<line x1='{left}' x2='{w - right}' y1='{y_at(0):.1f}' y2='{y_at(0):.1f}' stroke='#999' "
                   "stroke-dasharray='2 3'/>")
    for k, st in enumerate(s.steps, 1):
        x = x_at(st.token)
        out.append(f"<line class='rs-boundary' x1='{x:.1f}' x2='{x:.1f}' y1='{top}' y2='{h - bottom}' stroke='#d08a00' "
                   f"stroke-dasharray='4 3'/><text x='{x + 2:.1f}' y='{top + 11}' fill='#b07000'>{k}</text>")
    pts = " ".join(f"{x_at(i):.1f},{y_at(v):.1f}" for i, v in enumerate(ys))
    out.append(f"<polyline points='{pts}' fill='none' stroke='#2563eb' stroke-width='1.8'/>")
    for i, (t, v) in enumerate(zip(s.tokens, ys)):
        out.append(f"<circle cx='{x_at(i):.1f}' cy='{y_at(v):.1f}' r='2.6' fill='#2563eb'>"
                   f"<title>token {i}: {html.escape(repr(t))}\nscore {v:+.6f}</title></circle>")
    for j in range(5):  # five labelled y ticks with light grid lines
        v = lo + pad + (hi - lo - 2 * pad) * j / 4
        out.append(f"<line x1='{left}' x2='{w - right}' y1='{y_at(v):.1f}' y2='{y_at(v):.1f}' stroke='#eee'/>"
                   f"<text x='{left - 4}' y='{y_at(v) + 4:.1f}' text-anchor='end'>{v:+.3f}</text>")
    out.append(f"<text x='{left}' y='{h - 18}'>0</text>"
               f"<text x='{w - right}' y='{h - 18}' text-anchor='end'>{len(ys) - 1}</text>"
               f"<text x='{(left + w - right) / 2}' y='{h - 4}' text-anchor='middle'>response token position "
               f"(dashed: end of step k; last point: EOS = total)</text></svg>")
    return f"<div class='rs-plot'><div class='rs-chart-title'>{html.escape(title)}</div>{''.join(out)}</div>"


def hist_svg(view: DatasetView, w: int = 820, h: int = 200, title: str = OUTCOME_MARGINS) -> str:
    bins = view.histogram
    if not bins:
        return ""
    tallest = max(c for _, _, c in bins)
    left, right, top, bottom = 40, 10, 10, 32  # margins around the bars
    bw = (w - left - right) / len(bins)
    out = [f"<svg viewBox='0 0 {w} {h}' xmlns='http://www.w3.org/2000/svg' font-size='11' data-testid='margin-hist'>"]
    for k, (a, b, c) in enumerate(bins):
        bh = (h - top - bottom) * c / tallest
        col = "#dc3c3c" if b <= 0 else "#28aa50" if a >= 0 else "#999"
        out.append(f"<rect x='{left + k * bw + 1:.1f}' y='{h - bottom - bh:.1f}' width='{bw - 2:.1f}' "
                   f"height='{bh:.1f}' "
                   f"fill='{col}'><title>margin {a:+.3f} to {b:+.3f}: {c} pairs</title></rect>")
    out.append(f"<text x='{left}' y='{h - 18}'>{bins[0][0]:+.3f}</text>"
               f"<text x='{w - right}' y='{h - 18}' text-anchor='end'>{bins[-1][1]:+.3f}</text>"
               f"<text x='{left - 4}' y='{top + 10}' text-anchor='end'>{tallest}</text>"
               f"<text x='{(left + w - right) / 2}' y='{h - 4}' text-anchor='middle'>"
               "margin = score(chosen) − score(rejected)"
               f" (red: the model disagrees with the label)</text></svg>")
    return f"<div class='rs-hist'><div class='rs-chart-title'>{html.escape(title)}</div>{''.join(out)}</div>"


def dataset_html(v: DatasetView, scorer: scoring.Scorer) -> str:
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
        f" (warning at |r| ≥ {LENGTH_BIAS_WARN})</div>{bias}{groups_html(v.groups)}"
    )


def groups_html(groups: list[dict]) -> str:
    """Accuracy by kind of pair and by source: a model can be right on one kind and at chance on another."""
    if not groups:
        return ""
    rows = "".join(
        f"<tr><td>{'kind of pair' if g['by'] == 'kind' else 'source'}</td><td>{html.escape(g['name'])}</td>"
        f"<td class='num'>{g['pairs']}</td><td class='num'>{g['accuracy']:.1%}</td></tr>" for g in groups)
    return ("<table class='rs-groups' data-testid='groups'><thead><tr><th>by</th><th>group</th><th>pairs</th>"
            f"<th>accuracy</th></tr></thead><tbody>{rows}</tbody></table>")


def side_html(s, title, span=None):
    """One side of a pair: its total, its steps and its token plot (on a shared y range)."""
    return (f"<h4>{title}: outcome model total {s.total:+.4f}</h4>{steps_html(s)}"
            f"{plot_svg(s, 420, 200, span)}")


def shared_span(*scored) -> tuple[float, float]:
    """One y range for charts shown side by side (chosen and rejected), so heights compare."""
    ys = [v for s in scored for v in s.token_scores] or [0.0]
    return min(ys), max(ys)
