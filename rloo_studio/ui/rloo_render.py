"""The RLOO tab's HTML pieces: the status line's figures, check messages, warnings, completions column
widths, CSS.

Pure functions of the run's records and files; they lay nothing out and wire nothing.
"""
from __future__ import annotations

import html

from rloo_studio.rloo import compare as rloo_eval
from rloo_studio.rloo import evaluate as rloo_evaluate
from rloo_studio.rloo import health
from rloo_studio.rloo.evaluate import learned
from rloo_studio.runs import run_warnings

CSS = """
#rloo-check .bad {color:var(--error-text-color, #c00); font-weight:600}
#rloo-check .ok {color:#15803d}
#rloo-completions th, #rloo-completions th * {white-space: nowrap; word-break: keep-all; overflow-wrap: normal}
#rloo-completions td {font-size: .88em; vertical-align: top}
#rloo-table-note {font-size: .88em; color: var(--body-text-color)}
#rloo-before-after table {font-size: .9em; margin: .4em 0 .2em; border-collapse: collapse}
#rloo-before-after th, #rloo-before-after td {padding: .15em .8em; text-align: right; border-bottom: 1px solid #e5e7eb}
#rloo-before-after th:first-child, #rloo-before-after td:first-child {text-align: left}
#rloo-before-after .learned {font-weight: 600; font-size: .92em}
#rloo-status .headline {font-weight: 600}
#rloo-compare-table td {font-size: .86em; vertical-align: top}
#rloo-warnings .warn {background:#fef3c7; color:#78350f; border-left:4px solid #f59e0b; padding:.4em .8em;
                      margin:.3em 0; border-radius:4px}
"""


def check(ok: bool, text: str) -> str:
    return f"<div class='{'ok' if ok else 'bad'}'>{html.escape(text)}</div>"


def figures(records: list[dict]) -> str:
    """'last: loss 0.01, reward 0.5, kl 0.002' for the status line ('' before the first step); a reward model's
    raw score beside it, since its reward is standardised over the batch (a mean near 0 says nothing)."""
    recs = health.step_records(records)
    if not recs:
        return ""
    r = recs[-1]
    keys = ("loss", "reward", "rewards/reward_model/raw_mean", "kl")
    names = {"rewards/reward_model/raw_mean": "reward model's raw score"}
    return "last: " + ", ".join(f"{names.get(k, k)} {r[k]:.3g}" for k in keys if isinstance(r.get(k), (int, float)))


def headline(ev: dict, step: int | None, state: str | None) -> str:
    """The job's own held-out before / after (eval.json) in one line, each figure naming the step it was measured
    at: 'Held-out accuracy 38.5% → 60.0% (+21.5 points) at step 160'; before training only while the run goes or
    after a stop ('' without a measurement)."""
    b, a = ev.get("before"), ev.get("after")
    if not b:
        return ""
    if a:
        at = f" at step {step}" if step else ""
        return (f"Held-out accuracy {b['accuracy']:.1%} → {a['accuracy']:.1%} "
                f"({(a['accuracy'] - b['accuracy']) * 100:+.1f} points){at}")
    later = ("measured again at the end" if state in ("queued", "running") else
             "not measured at the stop (Compare base and trained measures it)")
    return f"Held-out accuracy {b['accuracy']:.1%} at step 0 (before training); {later}"


def message(text: str, ev: dict) -> str:
    """The run's closing message without the held-out figures it ends with (the headline and the table say them)."""
    said = (ev.get("after") or {}).get("summary")
    return text.replace(f"; {said}", "") if said else text


def eval_line(ws, rid: str, ev: dict | None = None) -> str:
    """The job's own held-out before / after (eval.json, or `ev` as read from it), folded under the charts: a small
    table (evaluate.eval_rows: a row per figure, before / after / change), then what was learned in words."""
    ev = rloo_eval.read_eval(ws, rid) if ev is None else ev
    headers, rows = rloo_evaluate.eval_rows(ev)
    if not rows:
        return ""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    words = learned(ev)
    return (f"<div class='eval' id='rloo-before-after'><table><tr>{head}</tr>{body}</table>"
            + (f"<div class='learned'>{html.escape(words)}</div>" if words else "") + "</div>")


COMPARE_WIDTHS = ["14%", "7%", "39.5%", "39.5%"]  # prompt, answer, base, trained: both answers readable at 1400 px
TABLE_WIDTH = 1150  # px: the completions table's room on a 1400 px page
TEXT = {"prompt": (190, 110), "thinking": (250, 140), "answer": (140, 90)}  # wrapped text: (wanted, least) px
# a figure of 4 significant digits (rloo/completions.py: -0.06023, 0.0004871) on one line: a total cut as '0.504 / 9'
NARROW = {"group": 78, "step": 52, "#": 36, "total": 86, "advantage": 100, "tokens": 72, "cut": 46}
FIGURE = 96  # px: the least width of a reward's column


def widths(cols: list[str]) -> list[str]:
    """Column widths in px: each narrow column as wide as its header (a reward's grows with its name); the text
    columns share what is left of TABLE_WIDTH in proportion, never below their least width, so that the table
    and its right-hand columns (total, advantage, cut) fit a 1400 px page with two or three rewards."""
    narrow = {c: NARROW.get(c, max(FIGURE, 9 * len(c) + 20)) for c in cols if c not in TEXT}
    text = [c for c in cols if c in TEXT]
    left = TABLE_WIDTH - sum(narrow.values())
    scale = min(1.0, left / max(1, sum(TEXT[c][0] for c in text)))
    px = {**narrow, **{c: max(TEXT[c][1], int(TEXT[c][0] * scale)) for c in text}}
    return [f"{px[c]}px" for c in cols]


def warnings(items: list) -> str:
    """Warnings as the page shows them: a run's kept ones (dicts) with the steps they were seen at."""
    return "".join(f"<div class='warn'>⚠ {html.escape(w['text'] + f' (seen at {run_warnings.seen(w)})')}</div>"
                   if isinstance(w, dict) else f"<div class='warn'>⚠ {html.escape(w)}</div>" for w in items)
