"""The Inspect tab's two lenses on one response's steps, side by side: the outcome model's score at each step's prefix
and the process reward model's probability that the step is right (inspect/lenses.py joins them), one sentence where
they disagree, and the process model's step-level figures over the labeled set. Pure HTML builders and the callbacks
that call the core; ui/inspect_tab.py lays them out and wires them."""
from __future__ import annotations

import html

import gradio as gr

from rloo_studio.core.errors import DataError, explain
from rloo_studio.inspect import process
from rloo_studio.inspect.lenses import Lenses, LensStep
from rloo_studio.runs import catalog
from rloo_studio.ui.inspect_render import shade

# Text on a coloured cell is always near-black (#111), whatever the theme: every shade (inspect_render.shade) and the
# light red of a doubted row keep a contrast of at least 4.5 with it; the marker is white on dark red (6.5).
CSS = """
.lens-verdict {font-size:1.02em; line-height:1.45; margin:.1em 0 .5em; padding:.45em .7em; border-radius:6px;
  border-left:4px solid #b91c1c; background:var(--block-background-fill)}
.lens-verdict.agree {border-left-color:var(--border-color-primary)}
table.lens-table {border-collapse:collapse; width:100%; font-size:.92em; table-layout:fixed; border:none; margin:0}
table.lens-table tr {border:none}
table.lens-table th, table.lens-table td {border:none; border-bottom:1px solid var(--border-color-primary);
  padding:.25em .5em; white-space:normal}
table.lens-table th {text-align:left; font-weight:600; vertical-align:bottom; line-height:1.25}
table.lens-table th .sub {display:block; font-weight:400; font-size:.86em; color:var(--body-text-color-subdued)}
table.lens-table td {vertical-align:middle}
table.lens-table .n {width:2.4em; color:var(--body-text-color-subdued)}
table.lens-table .o {width:14.5em}
table.lens-table .pp {width:9em}
table.lens-table td .tt {display:flex; align-items:center; gap:.5em; min-width:0}
table.lens-table td .txt {font-family:var(--font-mono); white-space:nowrap; overflow:hidden; text-overflow:ellipsis;
  min-width:0}
table.lens-table td.num {text-align:right; font-variant-numeric:tabular-nums; white-space:nowrap}
table.lens-table td.num .chg {font-size:.9em}
table.lens-table td.p, table.lens-table td.p * {color:#111; font-weight:600}
table.lens-table tr.doubted td {background:#fde8e8}
table.lens-table tr.doubted td, table.lens-table tr.doubted td * {color:#111}
table.lens-table tr.doubted td.n {box-shadow:inset 4px 0 0 #b91c1c}
table.lens-table tr.total td {font-weight:600; border-bottom:none}
table.lens-table tr.doubted .lens-doubt, .lens-doubt {flex:none; background:#b91c1c; color:#fff; font-weight:700;
  font-size:.82em; border-radius:4px; padding:.05em .45em; white-space:nowrap}
.pr-figures td, .pr-figures th {padding:.1em .8em; text-align:left}
.pr-figures td.num {text-align:right; font-variant-numeric:tabular-nums}
"""
NONE = ""
LENS = ("each step's probability of being right, read after the step (a verdict on the step itself, where the outcome "
        "model's score at a step is a guess at the finished answer's score).")
LENS_MIN = ("each step's probability of being right, the lowest it gives any token of the reasoning up to the step's "
            "end (a wrong token makes its step and every later one doubted).")
BLIND = "An outcome model scores whole answers: it cannot tell a slipped step from a right one."
TRAIN = "Train a process reward model on the Process reward tab to judge each step."
CHOOSE = "Choose a process reward model above to judge each step."


def choices(ws) -> list[tuple[str, str]]:
    """(none) and the trained process-reward runs, newest first."""
    return [("(none)", NONE)] + catalog.scorer_runs(ws, ("process",))


def newest(ws) -> str:
    """The newest process reward run, or NONE: the lens is on whenever there is one to look through."""
    c = choices(ws)
    return c[1][1] if len(c) > 1 else NONE


def restore(ws, current, picked):
    """On tab open: a fresh run list; the newest process reward run, unless the user picked one (or none) by hand."""
    c = choices(ws)
    keep = picked and current in [v for _, v in c]
    return gr.Dropdown(choices=c, value=current if keep else newest(ws))


def judge(ws, run_id: str, prompt: str, response: str, split: str) -> tuple[dict | None, str, str]:
    """(the process model's verdict on each step, its label, an error box): (None, '', '') when none is chosen."""
    if not run_id:
        return None, "", ""
    try:
        scorer = process.load_process_scorer(ws, run_id)
        return process.score_steps(scorer, [(prompt, response)], split)[0], scorer.label, ""
    except Exception as exc:  # noqa: BLE001 — shown in its box, nothing saved; the outcome lens stands alone
        return None, "", f"<div class='rs-error'>Process reward model: {html.escape(explain(exc))}</div>"


# ---------------------------------------------------------------- formatting (pure)

def _signed(x: float) -> str:
    """A score change in the sentence: two decimals, or two significant digits when it is smaller than that shows."""
    return f"{x:+.2f}" if abs(x) >= 0.01 or x == 0 else f"{x:+.2g}"


def _p(x: float) -> str:
    return f"{x:.2f}" if x >= 0.01 else f"{x:.2g}"


def verdict(v: Lenses, have_runs: bool) -> str:
    """One sentence on what the two lenses say, true for what was computed (plain text)."""
    total = f"the outcome model scores this response {_signed(v.total)}"
    if not v.judged:
        return f"{total[0].upper()}{total[1:]}. {BLIND} {CHOOSE if have_runs else TRAIN}"
    if not v.steps:
        return f"No <think> steps in this response: {total} as a whole, and the process model has no step to judge."
    d = v.doubted
    if d is None:
        least = v.trusted_least
        return (f"The process model trusts every step (least, step {least.number}: p = {_p(least.p_right)}); "
                f"{total} as a whole.")
    doubts = f"the process model doubts step {d.number} (p = {_p(d.p_right)})"
    if d.change is None:
        return f"{total[0].upper()}{total[1:]} and reads no score of its own at step {d.number}; {doubts}."
    if v.agree:
        return (f"Both lenses point at step {d.number}: the outcome model's score falls most there "
                f"({_signed(d.change)}), and {doubts}.")
    if not v.noticed(d):  # it rose, or fell by a small share of how it moves elsewhere
        return (f"{total[0].upper()}{total[1:]} and sees nothing wrong at step {d.number} (its score there moved by "
                f"{_signed(d.change)}); {doubts}.")
    drop = v.largest_drop
    return (f"{total[0].upper()}{total[1:]} and does not single out step {d.number} (its score moved by "
            f"{_signed(d.change)} there, by {_signed(drop.change)} at step {drop.number}); {doubts}.")


def _row(s: LensStep, judged: bool, first: LensStep | None) -> str:
    mark = ("<span class='lens-doubt' data-testid='doubt-marker' title='the first step the process model doubts "
            f"(p &lt; {process.THRESHOLD})'>first doubted step</span>" if s is first else "")
    outcome = "—" if s.outcome is None else f"{s.outcome:+.4f} <span class='chg'>({s.change:+.4f})</span>"
    cells = [f"<td class='n'>{s.number}</td><td><div class='tt'><span class='txt' title='{html.escape(s.text)}'>"
             f"{html.escape(s.text)}</span>{mark}</div></td>",
             f"<td class='num' data-testid='outcome-step'>{outcome}</td>"]
    if judged:
        p = "—" if s.p_right is None else f"{s.p_right:.3f}"
        style = "" if s.p_right is None else f" style='background:{shade(s.p_right - 0.5, 0.5)}'"
        cells.append(f"<td class='num p' data-testid='process-step'{style}>{p}</td>")
    row = " class='doubted'" if s is first else ""
    return f"<tr data-step='{s.number}'{row}>{''.join(cells)}</tr>"


def lenses_html(v: Lenses, have_runs: bool) -> str:
    """The verdict sentence, then each step through both lenses (the process column only when a process model judged)
    and the outcome model's total."""
    head = ("<th class='n'>#</th><th>step</th><th class='o'>Outcome model<span class='sub'>score if it ended here "
            "(change)</span></th>")
    if v.judged:
        head += "<th class='pp'>Process model<span class='sub'>P(step right)</span></th>"
    rows = "".join(_row(s, v.judged, v.doubted) for s in v.steps)
    total = (f"<tr class='total'><td class='n'></td><td>whole response (read at its end)</td>"
             f"<td class='num' data-testid='lens-total'>{v.total:+.4f}</td>{'<td></td>' if v.judged else ''}</tr>")
    return (f"<div class='lens-verdict{' agree' if v.agree else ''}' data-testid='verdict'>"
            f"{html.escape(verdict(v, have_runs))}</div>"
            f"<table class='lens-table' data-testid='lenses'><thead><tr>{head}</tr></thead><tbody>{rows}{total}"
            "</tbody></table>")


def block_html(result: dict | None, label: str) -> str:
    """The process model's own block under the outcome model's: what its numbers mean and its aggregates."""
    if result is None:
        return ""
    lens = LENS_MIN if result.get("step_score") == "min_so_far" else LENS
    title = "<div class='rs-chart-title'>Process model: is each step right?</div>"
    if not result["steps"]:
        return f"{title}<div class='rs-note'>No &lt;think&gt; steps in this response: nothing to judge.</div>"
    doubt = result["first_doubt"]
    return (f"{title}<div class='rs-summary'><span>weakest step <span class='num'>{result['min']:.3f}</span></span>"
            f"<span>all steps right (product) <span class='num'>{result['product']:.3f}</span></span>"
            f"<span>{'doubts step ' + str(doubt + 1) if doubt is not None else 'doubts no step'} · "
            f"{html.escape(label)}</span></div><div class='rs-explain'><b>Process reward model</b>: {lens} "
            f"A step below p = {process.THRESHOLD} is one it doubts.</div>")


FIGURE_NAMES = (("step_accuracy", "step accuracy (every labeled step)"),
                ("right_called_right", "right steps called right"),
                ("wrong_called_wrong", "wrong steps called wrong"),
                ("first_wrong_found", "erroneous responses: the first wrong step found exactly"),
                ("correct_called_correct", "correct responses: no step doubted"),
                ("processbench_f1", "F1 of the two (ProcessBench)"))


def figures_html(f: dict, label: str) -> str:
    rows = "".join(f"<tr><td>{name}</td><td class='num'>{f[key]:.1%}</td></tr>" for key, name in FIGURE_NAMES
                   if f.get(key) is not None)
    return (f"<div class='rs-note' id='inspect-process-figures'><b>{html.escape(label)}</b> on the workspace's step "
            f"labels ({f['responses']:,} responses, {f['labeled_steps']:,} labeled steps; {f['erroneous_responses']:,} "
            f"with a wrong step, {f['correct_responses']:,} without):<table class='pr-figures'>{rows}</table></div>")


def do_figures(ws, run_id: str, progress=None) -> str:
    if not run_id:
        return ""
    try:
        scorer = process.load_process_scorer(ws, run_id)
        return figures_html(process.labeled_figures(ws, scorer, progress=progress), scorer.label)
    except DataError as exc:  # no step labels yet: the usual state of a workspace, not a failure (the run is chosen
        # by itself whenever there is one)
        return f"<div class='rs-note' id='inspect-process-figures'>Process model: {html.escape(explain(exc))}</div>"
    except Exception as exc:  # noqa: BLE001
        return f"<div class='rs-error'>{html.escape(explain(exc))}</div>"
