"""The Inspect tab's second lens: a process reward model's per-step probability of being right (inspect/process.py),
beside the outcome model's prefix scores, and its step-level figures over the labeled set. Pure HTML builders and
the callbacks that call the core; ui/inspect_tab.py lays them out and wires them."""
from __future__ import annotations

import html

from rloo_studio.core.errors import explain
from rloo_studio.inspect import process
from rloo_studio.runs import catalog

CSS = """
.pr-steps {font-family:var(--font-mono); font-size:.92em; line-height:1.6; border:1px solid var(--border-color-primary);
  border-radius:6px; padding:.5em .7em}
.pr-step {display:flex; gap:.8em; align-items:baseline; padding:.15em .3em; border-radius:4px}
.pr-step .p {min-width:4.2em; text-align:right; font-variant-numeric:tabular-nums; font-weight:600}
.pr-step .t {white-space:pre-wrap}
.pr-step.doubted {outline:2px solid #b91c1c}
.pr-step .mark {color:#b91c1c; font-weight:700; white-space:nowrap}
.pr-figures td, .pr-figures th {padding:.1em .8em; text-align:left}
.pr-figures td.num {text-align:right; font-variant-numeric:tabular-nums}
"""
NONE = ""
LENS = ("<b>Process reward model</b>: each step's probability of being right, read after the step (a verdict on "
        "the step itself). The outcome model above gives the score if the answer ended there.")
LENS_MIN = ("<b>Process reward model</b>: each step's probability of being right, the lowest it gives any token of "
            "the reasoning up to the step's end (a wrong token makes its step and every later one doubted). The "
            "outcome model above gives the score if the answer ended there.")


def choices(ws) -> list[tuple[str, str]]:
    """(none) and the trained process-reward runs, newest first."""
    return [("(none)", NONE)] + catalog.scorer_runs(ws, ("process",))


def _shade(p: float) -> str:
    """Red for a step it doubts, green for one it trusts (white at 0.5)."""
    t = max(-1.0, min(1.0, (p - 0.5) * 2))
    end = (40, 170, 80) if t > 0 else (220, 60, 60)
    r, g, b = (round(245 + (e - 245) * abs(t)) for e in end)
    return f"rgb({r},{g},{b})"


def steps_html(result: dict, label: str) -> str:
    """Each step with its probability of being right; the first step the model doubts marked."""
    if not result["steps"]:
        return f"<div class='rs-note'>{LENS}<br>No &lt;think&gt; steps in this response: nothing to judge.</div>"
    doubt = result["first_doubt"]
    rows = []
    for k, s in enumerate(result["steps"]):
        mark = "<span class='mark'>← first step it doubts</span>" if k == doubt else ""
        rows.append(f"<div class='pr-step{' doubted' if k == doubt else ''}' data-step='{k + 1}' "
                    f"style='background:{_shade(s['p_correct'])}'><span class='p' data-testid='p-correct'>"
                    f"{s['p_correct']:.3f}</span><span class='t'>{html.escape(s['text'])}</span>{mark}</div>")
    head = (f"<div class='rs-summary'><span>weakest step <span class='num'>{result['min']:.3f}</span></span>"
            f"<span>all steps right (product) <span class='num'>{result['product']:.3f}</span></span>"
            f"<span>{'doubts step ' + str(doubt + 1) if doubt is not None else 'doubts no step'} · "
            f"{html.escape(label)}</span></div>")
    lens = LENS_MIN if result.get("step_score") == "min_so_far" else LENS
    return f"<div class='rs-explain'>{lens}</div>{head}<div class='pr-steps'>{''.join(rows)}</div>"


def do_process(ws, run_id: str, prompt: str, response: str, split: str) -> str:
    """The process lens of one response ('' when no process reward model is chosen)."""
    if not run_id:
        return ""
    try:
        scorer = process.load_process_scorer(ws, run_id)
        return steps_html(process.score_steps(scorer, [(prompt, response)], split)[0], scorer.label)
    except Exception as exc:  # noqa: BLE001 — shown in its box, nothing saved
        return f"<div class='rs-error'>{html.escape(explain(exc))}</div>"


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
    except Exception as exc:  # noqa: BLE001
        return f"<div class='rs-error'>{html.escape(explain(exc))}</div>"
