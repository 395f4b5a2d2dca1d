"""The RLOO tab's HTML pieces: the status line, check messages, warnings, completions column widths, CSS.

Pure functions of the run's status and records; they lay nothing out and wire nothing.
"""
from __future__ import annotations

import html
import re

from rloo_studio.rloo import compare as rloo_eval, view as rv
from rloo_studio.studio import Studio

CSS = """
#rloo-status {padding:.4em .8em; border-radius:6px; background:var(--block-background-fill)}
#rloo-status .failed {color:var(--error-text-color, #c00); font-weight:600}
#rloo-check .bad, #rloo-status .bad {color:var(--error-text-color, #c00); font-weight:600}
#rloo-check .ok {color:#15803d}
#rloo-completions th, #rloo-completions th * {white-space: nowrap; word-break: keep-all; overflow-wrap: normal}
#rloo-completions td {font-size: .88em; vertical-align: top}
#rloo-table-note {font-size: .88em; color: var(--body-text-color)}
#rloo-warnings .warn {background:#fef3c7; color:#78350f; border-left:4px solid #f59e0b; padding:.4em .8em;
                      margin:.3em 0; border-radius:4px}
"""


def slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")  # 'step time (s)' -> 'step-time-s'


def check(ok: bool, text: str) -> str:
    return f"<div class='{'ok' if ok else 'bad'}'>{html.escape(text)}</div>"


def status(studio: Studio, rid: str | None, records: list[dict]) -> str:
    if not rid:
        return "<div>No RLOO run yet. Pick a preset, check the settings, then press <b>Launch</b>.</div>"
    st = studio.runner.status(rid)
    state = st.get("status", "?")
    msg = "" if state == "failed" else html.escape(st.get("message") or "")  # a failure has its own box
    cls = "failed" if state == "failed" else ""
    ev = rv.eval_text(rloo_eval.read_eval(studio.ws, rid))
    return (f"<div>Run <b>{html.escape(rid)}</b> · <span class='state {cls}'>{state}</span> · "
            f"<span class='progress'>{html.escape(rv.progress_text(st, records))}</span></div>"
            + (f"<div class='{cls} message'>{msg}</div>" if msg else "")
            + (f"<div class='eval'>{html.escape(ev)}</div>" if ev else ""))


def widths(cols: list[str]) -> list[str]:
    # about 1150px in all at the usual reward count, so the right-hand columns fit a 1400px window
    fixed = {"group": "78px", "step": "52px", "#": "36px", "prompt": "190px", "thinking": "250px", "answer": "140px",
             "total": "62px", "advantage": "100px", "tokens": "72px", "cut": "46px"}
    return [fixed.get(c, f"{max(70, 9 * len(c) + 20)}px") for c in cols]


def warnings(items: list[str]) -> str:
    return "".join(f"<div class='warn'>⚠ {html.escape(w)}</div>" for w in items)
