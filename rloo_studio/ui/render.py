"""HTML for a response: the <think> reasoning apart from the answer, or the raw text."""
from __future__ import annotations

import html

from rloo_studio.core.thinking import parse


def esc(text: str) -> str:
    return html.escape(text).replace("\n", "<br>")


def response_html(text: str, raw: bool = False, split: str = "blank") -> str:
    if raw:
        return f"<pre class='raw-response'>{html.escape(text)}</pre>"
    p = parse(text, split)
    parts = []
    if p.has_open or p.has_close:
        n = len(p.steps)
        state = " · unfinished (cut off before &lt;/think&gt;)" if p.truncated else ""
        if n:
            body = "".join(f"<div class='think-step'>{esc(s.text)}</div>" for s in p.steps)
            parts.append(f"<details class='think' open><summary>Thinking · {n} step{'s' if n != 1 else ''}{state}"
                         f"</summary>{body}</details>")
        else:
            parts.append("<div class='think think-empty'>Thinking · empty (the model skipped its reasoning)</div>")
    else:
        parts.append("<div class='think-none'>no thinking</div>")
    answer = p.answer
    parts.append(f"<div class='answer'>{esc(answer) if answer else '<i>no answer</i>'}</div>")
    return "".join(parts)


# Tokens drawn of one model-input view: a pasted text far past any model's length would otherwise send the page tens
# of thousands of hoverable spans (a 24,000-character response: about 48,000 for the two views) for it to lay out.
DRAWN_TOKENS = 4096


def model_view_html(v) -> str:
    """A inspect.model_input.View: the exact text the model reads, token by token. Added tokens (<|im_start|>,
    <think>, EOS ...) are drawn apart; hovering a token shows its position, id and text."""
    counts = f"{v.count('prompt')} prompt + {v.count('response')} response" + (" + EOS" if v.count("end") else "")
    head = (f"<div class='mv-head'><b>{html.escape(v.who.capitalize())}</b> · {html.escape(v.model)} · "
            f"{len(v.tokens)} tokens ({counts})</div>"
            + (f"<div class='mv-note'>{html.escape(v.note)}</div>" if v.note else ""))
    spans = []
    for k, t in enumerate(v.tokens[:DRAWN_TOKENS]):
        cls = ["mv-tok", f"mv-{t.part}", "mv-special" if t.special else f"mv-alt{k % 2}"]
        if "\n" in t.text:
            cls.append("mv-nl")  # a line break: marked, so that it can be hovered
        shown = repr(t.text) if t.text else "(completes a character with the next token)"
        tip = html.escape(f"token {k} · id {t.id} · {shown} · {t.part}", quote=True)
        spans.append(f"<span class='{' '.join(cls)}' data-id='{t.id}' title='{tip}'>{html.escape(t.text)}</span>")
    more = len(v.tokens) - DRAWN_TOKENS
    rest = f"<div class='mv-note'>… and {more:,} more tokens, not drawn.</div>" if more > 0 else ""
    return (f"<div class='model-view' data-testid='model-view' data-who='{html.escape(v.who)}'>{head}"
            f"<div class='mv-text'>{''.join(spans)}</div>{rest}</div>")


def model_views_html(views: list) -> str:
    legend = ("<div class='mv-legend'><span class='mv-tok mv-special'>special</span> added tokens (chat and "
              "think tags, EOS) · <span class='mv-tok mv-prompt mv-alt0'>prompt</span> · <span class='mv-tok "
              "mv-response mv-alt0'>response</span> · hover a token for its id</div>")
    return legend + "".join(model_view_html(v) for v in views)


def failure_html(message: str, traceback: str = "") -> str:
    """A failed run: the plain message first; the traceback below it, folded (for a bug report)."""
    out = f"<div class='failed message' data-testid='failure-message'>⚠ {esc(message)}</div>" if message else ""
    if traceback:
        out += ("<details class='traceback'><summary>Technical details (traceback, for a bug report)</summary>"
                f"<pre>{html.escape(traceback)}</pre></details>")
    return out


def message_html(text: str, ok: bool = False) -> str:
    """One plain message for a tab's message box: an answer (ok) or a refusal."""
    return f"<div class='{'ok' if ok else 'bad'} studio-message'>{'' if ok else '⚠ '}{html.escape(text)}</div>"


CSS = """
.failed.message {color: var(--error-text-color, #c00); font-weight: 600}
details.traceback {margin-top: .3em; font-size: .85em}
details.traceback summary {cursor: pointer; color: var(--body-text-color-subdued)}
details.traceback pre {white-space: pre-wrap; max-height: 20em; overflow: auto}
.think {border-left: 3px solid #a78bfa; background: rgba(167,139,250,.08); padding: .3em .7em; margin-bottom: .6em;
        border-radius: 4px; font-size: .92em; color: var(--body-text-color-subdued)}
.think summary {cursor: pointer; font-weight: 600; color: #7c3aed}
.think-step {padding: .15em 0; border-bottom: 1px dashed rgba(124,58,237,.15); font-family: var(--font-mono)}
.think-step:last-child {border-bottom: none}
.think-empty {font-style: italic; color: #7c3aed}
.think-none {font-size: .85em; color: var(--body-text-color-subdued); font-style: italic; margin-bottom: .4em}
.answer {font-size: 1.05em; padding: .2em 0}
.raw-response {white-space: pre-wrap; font-size: .9em}
/* every table of the app: a header never breaks mid-word (a column is as wide as its header) */
table th, table th *, .table-wrap th .header-text {white-space: nowrap !important; word-break: keep-all !important;
    overflow-wrap: normal !important; hyphens: none}
.studio-chart {min-width: 0}
.model-view {margin: .4em 0 .8em}
.mv-head {font-size: .9em}
.mv-note, .mv-legend {font-size: .8em; color: var(--body-text-color-subdued); margin: .15em 0 .3em}
.mv-text {white-space: pre-wrap; word-break: break-all; font-family: var(--font-mono); font-size: .85em;
          line-height: 1.9; border: 1px solid var(--border-color-primary); border-radius: 6px; padding: .5em;
          max-height: 28em; overflow: auto}
.mv-tok {border-radius: 2px; padding: 1px 0}
.mv-prompt.mv-alt0 {background: rgba(59,130,246,.10)} .mv-prompt.mv-alt1 {background: rgba(59,130,246,.22)}
.mv-response.mv-alt0 {background: rgba(34,197,94,.12)} .mv-response.mv-alt1 {background: rgba(34,197,94,.26)}
.mv-special {background: #7c3aed; color: #fff; font-weight: 600; padding: 1px 3px; margin: 0 1px}
.mv-nl::before {content: "↵"; color: #9ca3af}
.mv-tok:hover {outline: 2px solid #f59e0b}
"""
