"""Records tab: every labeled or unlabeled pair in a table (search, filters, sort, pages), relabel from a
row; and fresh RLOO completions sent to the Label queue. Core: label/records.py and rloo/to_label.py
(the callbacks shared with the RLOO tab are in ui/rloo_send.py)."""
from __future__ import annotations

import html
from dataclasses import dataclass
from functools import partial

import gradio as gr

from rloo_studio.label import records, store
from rloo_studio.inspect.dataset import disagreements
from rloo_studio.core.errors import StudioError, explain
from rloo_studio.studio import Studio
from rloo_studio.ui import inputs, rloo_send
from rloo_studio.runs.catalog import trained_adapters

HEADERS = ["pair", "prompt", "response A", "response B", "source", "labels", "flag"]
CHOICE_NAMES = {"a": "A is better", "b": "B is better", "tie": "tie", "skip": "skip"}


def _cut(text: str, n: int = 160) -> str:
    text = str(text or "")
    return text if len(text) <= n else text[:n] + "…"


def _plain(e: Exception) -> str:
    return f"**{html.escape(explain(e) if isinstance(e, StudioError) else str(e))}**"


# -- callbacks ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Search:
    """The table's search and filters, as set on the page."""
    text: str
    source: str | None
    annotator: str | None
    label: str  # records.LABELS
    flagged: str  # records.FLAGGED
    sort: str  # records.SORTS
    page: int | None
    per_page: int | None
    reward_run: str | None  # only the pairs this reward model disagrees with ('' or None: all)


def search(ws, form: Search):
    """(table rows, count line, page shown)."""
    try:
        ids = disagreements(ws, form.reward_run) if form.reward_run else None
        p = records.query(ws, form.text, form.source or "", form.annotator or "", form.label, form.flagged,
                          form.sort, form.page, form.per_page, pair_ids=ids)
    except (StudioError, ValueError, TypeError) as e:
        return gr.update(), _plain(e), gr.update()
    rows = [[r["pair_id"], _cut(r["prompt"]), _cut(r["a"]), _cut(r["b"]), r["source"], r["labels"] or "",
             r["flag"] or ""] for r in p.rows]
    return rows, f"{p.total} pair{'s' * (p.total != 1)} match · page {p.page} of {p.pages}", p.page


def _reward_runs(ws) -> list[tuple[str, str]]:
    return [("", "")] + trained_adapters(ws, "reward")


def filter_choices(ws, source, annotator, reward_run):
    sources, people, rms = [""] + store.sources(ws), [""] + records.annotators(ws), _reward_runs(ws)
    return (gr.update(choices=sources, value=source if source in sources else ""),
            gr.update(choices=people, value=annotator if annotator in people else ""),
            gr.update(choices=rms, value=reward_run if reward_run in [v for _, v in rms] else ""))


def pair_html(ws, pid) -> str:
    r = records.pair(ws, int(pid))
    if r is None:
        return ""
    now = records.current_labels(ws, int(pid))
    lab = ", ".join(f"{html.escape(k)}: {html.escape(CHOICE_NAMES[v])}" for k, v in now.items()) or "none yet"
    flag = f" · flagged: {html.escape(r['flag'])}" if r["flag"] else ""

    def box(title, text):
        return (f"<div style='flex:1'><b>{title}</b><pre style='white-space:pre-wrap'>{html.escape(text)}</pre>"
                "</div>")

    return (f"<div><b>Pair {int(pid)}</b> · source {html.escape(r['source'])} · labels: {lab}{flag}</div>"
            f"<div><b>Prompt</b><pre style='white-space:pre-wrap'>{html.escape(r['prompt'])}</pre></div>"
            f"<div style='display:flex;gap:1em'>{box('Response A', r['a'])}{box('Response B', r['b'])}</div>")


def pick(ws, evt: gr.SelectData):
    """A click on a table row chooses its pair."""
    try:
        pid = int((evt.row_value or [None])[0])
    except (TypeError, ValueError, IndexError, AttributeError):
        return gr.update(), gr.update()
    return str(pid), pair_html(ws, pid)


def show(ws, pid):
    typed = str(pid or "").strip()
    if not typed:
        return ""
    if not typed.isdigit():
        return f"**{html.escape(typed[:40])!s} is not a pair number: click a row of the table, or type its number.**"
    return pair_html(ws, int(typed)) or f"**There is no pair {int(typed)} in this workspace.**"


def give(ws, choice, pid, name, comment):
    """Store the label; (message, pair view)."""
    try:
        records.relabel(ws, pid, name, choice, comment or "")
    except (StudioError, ValueError, TypeError) as e:
        return _plain(e), gr.update()
    return (f"Saved: {html.escape(name.strip())} labeled pair {int(pid)} “{CHOICE_NAMES[choice]}”.",
            pair_html(ws, int(pid)))


def rloo_runs(ws, current):
    ids = [r["id"] for r in ws.runs("rloo") if (ws.run_dir(r["id"]) / "samples.jsonl").exists()]
    return gr.update(choices=ids, value=current if current in ids else (ids[0] if ids else None))


def rloo_groups(ws, run_id):
    return rloo_send.group_choices(ws, run_id)


def send(ws, run_id, group, how):
    """(message, source filter value)."""
    msg, source, _ = rloo_send.send(ws, run_id, group, how)
    return msg, (gr.update(choices=[""] + store.sources(ws), value=source) if source else gr.update())


def build(studio: Studio):
    ws = studio.ws
    with gr.Row():
        text = gr.Textbox(label="Search prompts and responses", scale=3, elem_id="records-search")
        source = gr.Dropdown([""] + store.sources(ws), value="", label="Source", scale=2, elem_id="records-source")
        annotator = gr.Dropdown([""] + records.annotators(ws), value="", label="Annotator", scale=1,
                                elem_id="records-annotator")
        label = gr.Dropdown(list(records.LABELS), value="any", label="Label", scale=1, elem_id="records-label")
        flagged = gr.Dropdown(list(records.FLAGGED), value="any", label="Flagged", scale=1, elem_id="records-flagged")
        sort = gr.Dropdown(list(records.SORTS), value="newest", label="Order", scale=1, elem_id="records-sort")
        disagree = gr.Dropdown(_reward_runs(ws), value="", label="Reward model disagrees", scale=1,
                               elem_id="records-disagree")
    with gr.Row(equal_height=True):
        page = gr.Number(1, label="Page", precision=0, scale=1, min_width=100, elem_id="records-page")
        per_page = gr.Number(20, label="Rows per page", precision=0, scale=1, min_width=100, elem_id="records-per-page")
        go = gr.Button("Search", variant="primary", scale=1, elem_id="records-go")
        count = gr.Markdown(elem_id="records-count")
    table = gr.Dataframe(headers=HEADERS, interactive=False, wrap=True, elem_id="records-table")
    gr.Markdown("Click a row to see the pair whole and label it (response A is shown on the left).")
    pid = gr.Textbox(label="Pair", max_lines=1, elem_id="records-pair")
    detail = gr.HTML(elem_id="records-detail")
    with gr.Row():
        name = gr.Textbox(label="Your name", max_lines=1, scale=1, elem_id="records-name")
        comment = gr.Textbox(label="Comment (optional)", max_lines=1, scale=2, elem_id="records-comment")
    with gr.Row():
        buttons = {c: gr.Button(CHOICE_NAMES[c], elem_id=f"records-{c}") for c in store.CHOICES}
    msg = gr.Markdown(elem_id="records-msg")
    with gr.Accordion("Send RLOO completions to labeling", open=False):
        gr.Markdown("A prompt's group of completions from an RLOO run becomes a pair in the Label queue "
                    "(source rloo:RUN), so the next reward model learns where the current rewards were wrong.")
        with gr.Row():
            run = gr.Dropdown([], label="RLOO run", scale=1, elem_id="records-rloo-run")
            group = gr.Dropdown([], label="Group (step · prompt)", scale=3, elem_id="records-rloo-group")
        how = gr.Radio(rloo_send.HOW, value="extremes", label="Pair", elem_id="records-rloo-how")
        b_send = gr.Button("Send to Label", elem_id="records-rloo-send")
        send_msg = gr.Markdown(elem_id="records-rloo-msg")

    refresh = dict(**inputs.bind(partial(search, ws), Search, text=text, source=source, annotator=annotator,
                                 label=label, flagged=flagged, sort=sort, page=page, per_page=per_page,
                                 reward_run=disagree),
                   outputs=[table, count, page], show_progress="minimal")
    go.click(**refresh)
    text.submit(**refresh)
    for widget in (source, annotator, label, flagged, sort, disagree):  # a new filter starts at page 1
        widget.input(lambda: 1, None, page, queue=False).then(**refresh)

    def on_pick(evt: gr.SelectData):  # Gradio passes the event only to a plain function, not a partial
        return pick(ws, evt)

    table.select(on_pick, None, [pid, detail])
    for typed in (pid.submit, pid.blur):  # Enter, or leaving the box, shows the typed pair
        typed(partial(show, ws), pid, detail)
    for choice, button in buttons.items():
        button.click(partial(give, ws, choice), [pid, name, comment], [msg, detail]).then(**refresh).then(
            partial(filter_choices, ws), [source, annotator, disagree], [source, annotator, disagree])
    run.change(partial(rloo_groups, ws), run, [group, send_msg])
    b_send.click(partial(send, ws), [run, group, how], [send_msg, source]).then(**refresh)

    def hooks(demo, tab):
        tab.select(partial(filter_choices, ws), [source, annotator, disagree], [source, annotator, disagree],
                   queue=False).then(
            **refresh).then(partial(rloo_runs, ws), run, run)

    return hooks
