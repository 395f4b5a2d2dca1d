"""Under the RLOO completions table: what a step taught, token by token (tokens.jsonl, rloo/tokens.py). Pick a
recorded step and a prompt's group; each completion is drawn with its tokens coloured by how much the update
raised or lowered their log-prob (Δ log-prob), the per-token KL to the reference on hover, each <think> step
framed with its sum, and the completion's advantage beside it; above them, whether the update followed the
advantages (positive-advantage completions should move up more than negative ones)."""
from __future__ import annotations

import html
from functools import partial

import gradio as gr

from rloo_studio.rloo import tokens
from rloo_studio.studio import Studio
from rloo_studio.ui.rloo_send import shown_run

LEGEND = "lower ← Δ log-prob → higher"
LOW, HIGH = (217, 95, 2), (27, 106, 201)  # orange for lowered, blue for raised: a diverging, colour-blind-safe pair
CSS = """
.tv-legend {display:flex; align-items:center; gap:.5em; font-size:.88em; margin:.3em 0 .6em}
.tv-bar {width:180px; height:12px; border-radius:3px; border:1px solid #9ca3af;
  background:linear-gradient(to right, rgb(217,95,2), #fff, rgb(27,106,201))}
.tv-summary {margin:.2em 0; font-size:.92em}
.tv-against {background:#fef3c7; color:#78350f; border-left:4px solid #f59e0b; padding:.3em .7em}
.tv-row {display:flex; gap:1em; border-top:1px solid #e5e7eb; padding:.45em 0}
.tv-side {flex:0 0 9.5em; font-size:.85em; line-height:1.45}
.tv-text {flex:1; font-family:ui-monospace, monospace; font-size:.9em; white-space:pre-wrap;
  line-height:1.9}
.tv-tok {color:#111; border-radius:2px; padding:0 1px}
.tv-step {border:1px dashed #6b7280; border-radius:4px; padding:1px 2px}
.tv-sum {font-family:ui-sans-serif, sans-serif; font-size:.75em; color:var(--body-text-color);
  background:var(--background-fill-secondary, #f3f4f6); border-radius:3px; padding:0 3px; margin-left:2px}
"""


# -- drawing: pure functions of tokens.jsonl rows ---------------------------------------------------------------

def _colour(d: float, scale: float) -> str:
    x = max(-1.0, min(1.0, d / scale))
    end = HIGH if x > 0 else LOW
    r, g, b = (round(255 + (e - 255) * abs(x)) for e in end)
    return f"rgb({r},{g},{b})"


def _scale(rows: list[dict]) -> float:
    """Half the colour range: the 95th percentile of |Δ| in the group (one outlier does not wash out the rest)."""
    ds = sorted(abs(d) for r in rows for d in tokens.deltas(r))
    return max(ds[int(0.95 * (len(ds) - 1))] if ds else 0.0, 1e-3)


def _token(tok: str, d: float, old: float, kl: float | None, scale: float) -> str:
    tip = f"Δ log-prob {d:+.4f} (log-prob {old:.3f} → {old + d:.3f}) · " + (
        f"KL to reference {kl:+.4f}" if kl is not None else "no reference (beta = 0)")
    # a line break has no width to colour: it shows as ↵, then one break however many it holds
    shown = html.escape("↵" * tok.count("\n") + tok.replace("\n", "") if "\n" in tok else tok)
    brk = "\n" if "\n" in tok else ""
    return f"<span class='tv-tok' style='background:{_colour(d, scale)}' title='{html.escape(tip)}'>{shown}</span>{brk}"


def completion_html(row: dict, scale: float) -> str:
    d, k = tokens.deltas(row), tokens.kl(row)
    starts = {i: n for n, (i, _) in enumerate(row["steps"])}
    ends = {j: n for n, (_, j) in enumerate(row["steps"])}
    parts = []
    for t, tok in enumerate(row["tokens"] + [""]):
        if t in ends:
            i, j = row["steps"][ends[t]]
            parts.append(f"</span><span class='tv-sum' title='the step&#39;s summed Δ log-prob'>"
                         f"step {ends[t] + 1} Σ {sum(d[i:j]):+.3f}</span>")
        if t in starts:
            parts.append("<span class='tv-step'>")
        if t < len(d):
            parts.append(_token(tok, d[t], row["logp_old"][t], k[t] if k else None, scale))
    side = (f"<b>#{row['completion']}</b> advantage <b>{row['advantage']:+.3f}</b><br>Δ log-prob {sum(d):+.3f}"
            + (f"<br>KL {sum(k):+.3f}" if k else "") + ("" if row["in_loss"] else "<br><i>not in the loss</i>"))
    return f"<div class='tv-row'><div class='tv-side'>{side}</div><div class='tv-text'>{''.join(parts)}</div></div>"


def _summary_html(label: str, rows: list[dict]) -> str:
    s = tokens.summary(rows)
    cls = "tv-summary tv-against" if s["against"] else "tv-summary"
    return f"<div class='{cls}'><b>{html.escape(label)}:</b> {html.escape(s['verdict'])}</div>"


def draw(group: list[dict], step_rows: list[dict]) -> str:
    """One group: the step's and the group's verdicts, the colour legend, then each completion (best first)."""
    if not group:
        return "<p>No token view for that step and group.</p>"
    scale = _scale(group)
    legend = (f"<div class='tv-legend' role='img' aria-label='{LEGEND}'><span>{html.escape(LEGEND)}</span>"
              f"<span>{-scale:+.3f}</span><span class='tv-bar'></span><span>{scale:+.3f} nats</span>"
              "<span>· hover a token for its KL to the reference; dashed frames are &lt;think&gt; steps</span></div>")
    body = "".join(completion_html(r, scale) for r in sorted(group, key=lambda r: -r["advantage"]))
    return (f"<div><p>{html.escape(group[0]['prompt_text'])}</p>"
            + _summary_html(f"This group ({len(group)} completions)", group)
            + _summary_html(f"All {len({r['prompt'] for r in step_rows})} groups of step {group[0]['step']}", step_rows)
            + legend + body + "</div>")


# -- callbacks (wired with functools.partial(callback, ws, latest)) ----------------------------------------------
# `latest`: an empty run box means the RLOO tab's run (the active or newest one); on the Runs tab it means none.

def _dir(ws, latest, typed):
    rid = shown_run(ws, typed) if latest else str(typed or "").strip()
    return ws.run_dir(rid) if rid and ws.run(rid) is not None else None


def step_choices(ws, latest, typed, current=None):
    """The recorded steps of the run shown, latest first; the one picked stays picked."""
    d = _dir(ws, latest, typed)
    steps = sorted(tokens.recorded(d), reverse=True) if d else []
    return gr.update(choices=steps, value=current if current in steps else (steps[0] if steps else None))


def group_choices(ws, latest, typed, step, current=None):
    """The step's groups: 'prompt K · its text · advantages lo..hi'; the widest spread is picked first."""
    d = _dir(ws, latest, typed)
    rows = tokens.read_tokens(d, step=_int(step)) if d and _int(step) is not None else []
    groups: dict[int, list[dict]] = {}
    for r in rows:
        groups.setdefault(r["prompt"], []).append(r)
    choices, spread = [], []
    for k, g in sorted(groups.items()):
        adv = [r["advantage"] for r in g]
        text = " ".join(g[0]["prompt_text"].split())[:50]
        choices.append((f"prompt {k} · {text} · advantages {min(adv):+.2f} … {max(adv):+.2f}", k))
        spread.append(max(adv) - min(adv))
    keys = [k for _, k in choices]
    best = keys[spread.index(max(spread))] if keys else None
    return gr.update(choices=choices, value=current if current in keys else best)


NOTHING = ("<p>No token view yet: it is recorded at each logged step of a run whose completions x "
           "max_completion_length fit token_view_max_tokens.</p>")


def show(ws, latest, typed, step, prompt) -> str:
    if not latest and not str(typed or "").strip():
        return "<p>Select an RLOO run in <b>Runs to compare</b> above: the first one selected is drawn here.</p>"
    d = _dir(ws, latest, typed)
    if d is None or _int(step) is None or _int(prompt) is None:
        return NOTHING
    step_rows = tokens.read_tokens(d, step=_int(step))
    return draw([r for r in step_rows if r["prompt"] == _int(prompt)], step_rows)


def _int(value) -> int | None:
    """A step or prompt number from its dropdown (None: none, or a value typed that is none)."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def build(studio: Studio, run_box, prefix: str = "rloo", latest: bool = True,
          title: str = "Token view: what a step taught, token by token") -> None:
    """An accordion: a step and a prompt's group of the run in `run_box` (a run id; empty: the RLOO tab's run if
    `latest`, else none), drawn token by token. Its widgets' ids start with `prefix`-token-."""
    ws = studio.ws
    with gr.Accordion(title, open=False, elem_id=f"{prefix}-token-acc") as acc:
        gr.Markdown("Each token is coloured by how much the step's update changed its log-prob (blue: more likely "
                    "now, orange: less). RLOO raises completions with a positive advantage and lowers those with a "
                    "negative one; the verdict says whether this update did.")
        with gr.Row(equal_height=True):
            # allow_custom_value: when the run changes twice in a row, the page can send the old run's step before
            # the new choices reach it, and Gradio would refuse it with an error; the callbacks check it instead
            step = gr.Dropdown([], label="Step", scale=1, elem_id=f"{prefix}-token-step", allow_custom_value=True)
            group = gr.Dropdown([], label="Group (prompt)", scale=4, elem_id=f"{prefix}-token-group",
                                allow_custom_value=True)
            refresh = gr.Button("Refresh", scale=1, elem_id=f"{prefix}-token-refresh")
        view = gr.HTML(elem_id=f"{prefix}-token-view", css_template=CSS)  # scoped to the view
    quiet = dict(show_progress="hidden")
    steps = dict(fn=partial(step_choices, ws, latest), inputs=[run_box, step], outputs=step, **quiet)
    draw_it = dict(fn=partial(show, ws, latest), inputs=[run_box, step, group], outputs=view, **quiet)
    groups = dict(fn=partial(group_choices, ws, latest), inputs=[run_box, step, group], outputs=group, **quiet)
    # another run or step may keep the same step or group number (no change event): list, then draw, each time
    for event in (acc.expand, refresh.click, run_box.change):
        event(**steps).then(**groups).then(**draw_it)
    step.input(**groups).then(**draw_it)
    group.input(**draw_it)
