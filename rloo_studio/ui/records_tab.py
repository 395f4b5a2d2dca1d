"""Records tab: every labeled or unlabeled pair in a table (search, filters, sort, pages), relabel from a
row; and fresh RLOO completions sent to the Label queue. Core: label/records.py and rloo/to_label.py
(the callbacks shared with the RLOO tab are in ui/rloo_send.py).

Each pair is shown as the person named on the Label tab saw it there: their A/B order, their label, and
everyone's labels and comments in those letters; a label given here is theirs. The name is the Label
tab's name box (kept in the browser), read each time this tab is opened."""
from __future__ import annotations

import html
from dataclasses import dataclass
from functools import partial

import gradio as gr

from rloo_studio.core.errors import StudioError, explain
from rloo_studio.inspect.dataset import disagreements
from rloo_studio.label import records, store
from rloo_studio.runs.catalog import scorer_runs
from rloo_studio.studio import Studio
from rloo_studio.ui import inputs, label_tab, rloo_send

HEADERS = ["pair", "prompt", "response A", "response B", "your label", "chosen", "labels", "comments", "flag",
           "source"]
WIDTHS = ["4%", "14%", "17%", "17%", "9%", "6%", "9%", "10%", "5%", "9%"]
CHOICE_NAMES = {"a": "A is better", "b": "B is better", "tie": "tie", "skip": "skip"}
LETTERS = {"a": "A", "b": "B", "tie": "tie", "skip": "skip"}
LABEL_FILTER = [("any", "any"), ("unlabeled", "unlabeled"), ("A is better", "a"), ("B is better", "b"),
                ("tie", "tie"), ("skip", "skip")]  # records.LABELS, in the viewer's letters
NO_VIEWER = ("Type your name on the **Label** tab: then each pair shows here as you saw it there (your A and B), "
             "with your label, and a label given here is yours.")


def _cut(text: str, n: int = 160) -> str:
    text = str(text or "")
    return text if len(text) <= n else text[:n] + "…"


def _plain(e: Exception) -> str:
    return f"**{html.escape(explain(e) if isinstance(e, StudioError) else str(e))}**"


def viewer_md(viewer: str) -> str:
    """Whose A/B order the table shows: the name on the Label tab."""
    who = (viewer or "").strip()
    if not who:
        return NO_VIEWER
    return (f"Each pair as **{html.escape(who)}** (the name on the Label tab) saw it there: response A and B in "
            "the same order, and every label, yours and others', in those letters.")


def take_viewer(name):
    """The Label tab's name becomes the viewer: (viewer, the line that says so)."""
    who = (name or "").strip()
    return who, viewer_md(who)


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
    viewer: str = ""  # the name on the Label tab: pairs in their A/B order


def table_row(r: dict) -> list:
    """A records.query row as a table row: texts and labels in the viewer's letters."""
    labels = "; ".join(f"{v['name']}: {LETTERS[v['choice']]}" for v in r["votes"])
    return [r["pair_id"], _cut(r["prompt"]), _cut(r["a"]), _cut(r["b"]), CHOICE_NAMES.get(r["yours"], ""),
            LETTERS.get(r["chosen"], ""), labels, r["comments"] or "", r["flag"] or "", r["source"]]


def search(ws, form: Search):
    """(table rows, count line, page shown)."""
    try:
        ids = disagreements(ws, form.reward_run) if form.reward_run else None
        p = records.query(ws, form.text, form.source or "", form.annotator or "", form.label, form.flagged,
                          form.sort, form.page, form.per_page, pair_ids=ids, viewer=form.viewer or "")
    except (StudioError, ValueError, TypeError) as e:
        return gr.update(), _plain(e), gr.update()
    rows = [table_row(r) for r in p.rows]
    return rows, f"{p.total} pair{'s' * (p.total != 1)} match · page {p.page} of {p.pages}", p.page


def _reward_runs(ws) -> list[tuple[str, str]]:
    return [("", "")] + scorer_runs(ws, ("outcome",))


def filter_choices(ws, source, annotator, reward_run):
    sources, people, rms = [""] + store.sources(ws), [""] + records.annotators(ws), _reward_runs(ws)
    return (gr.update(choices=sources, value=source if source in sources else ""),
            gr.update(choices=people, value=annotator if annotator in people else ""),
            gr.update(choices=rms, value=reward_run if reward_run in [v for _, v in rms] else ""))


def opened(ws, name, source, annotator, reward_run):
    """The tab as it opens: its viewer and the filters' choices in one update, so that a page showing the viewer
    offers the names labeled up to then (sent one after the other, a slow page opened the annotator list between
    the two and missed the name just labeled under)."""
    return (*take_viewer(name), *filter_choices(ws, source, annotator, reward_run))


def pair_html(ws, pid, viewer: str = "") -> str:
    """One pair whole, as the viewer sees it: their A and B, which one the labels chose, everyone's labels and
    comments in the same letters."""
    r = records.pair(ws, int(pid), viewer=viewer)
    if r is None:
        return ""
    lab = ", ".join(f"{html.escape(v['name'])}: {html.escape(CHOICE_NAMES[v['choice']])}" for v in r["votes"])
    flag = f" · flagged: {html.escape(r['flag'])}" if r["flag"] else ""
    notes = "".join(f"<div><b>{html.escape(v['name'])}</b>: {html.escape(v['comment'])}</div>"
                    for v in r["votes"] if v["comment"].strip())
    role = {"a": ("chosen", "rejected"), "b": ("rejected", "chosen")}.get(r["chosen"], ("", ""))

    def box(title, text, what):
        what = f" · {what}" if what else ""
        return (f"<div style='flex:1'><b>{title}{what}</b><pre style='white-space:pre-wrap'>{html.escape(text)}</pre>"
                "</div>")

    yours = f" · your label: {CHOICE_NAMES[r['yours']]}" if r["yours"] else ""
    return (f"<div><b>Pair {int(pid)}</b> · source {html.escape(r['source'])}{yours} · labels: {lab or 'none yet'}"
            f"{flag}</div>" + (f"<div><b>Comments</b>{notes}</div>" if notes else "") +
            f"<div><b>Prompt</b><pre style='white-space:pre-wrap'>{html.escape(r['prompt'])}</pre></div>"
            f"<div style='display:flex;gap:1em'>{box('Response A', r['a'], role[0])}"
            f"{box('Response B', r['b'], role[1])}</div>")


def pick(ws, viewer, evt: gr.SelectData):
    """A click on a table row chooses its pair."""
    try:
        pid = int((evt.row_value or [None])[0])
    except (TypeError, ValueError, IndexError, AttributeError):
        return gr.update(), gr.update()
    return str(pid), pair_html(ws, pid, viewer)


def show(ws, pid, viewer):
    typed = str(pid or "").strip()
    if not typed:
        return ""
    if not typed.isdigit():
        return f"**{html.escape(typed[:40])!s} is not a pair number: click a row of the table, or type its number.**"
    return pair_html(ws, int(typed), viewer) or f"**There is no pair {int(typed)} in this workspace.**"


@dataclass(frozen=True)
class Relabel:
    """A label given from the Records tab."""
    pair: str  # the pair's number, as in the Pair box
    viewer: str  # the name on the Label tab: the label is theirs, in their A/B order
    comment: str = ""


def give(ws, choice, form: Relabel):
    """Store the label; (message, pair view)."""
    name = (form.viewer or "").strip()
    if not name:
        return "**Type your name on the Label tab first: each label records who gave it.**", gr.update()
    try:
        records.relabel(ws, form.pair, name, choice, form.comment or "")
    except (StudioError, ValueError, TypeError) as e:
        return _plain(e), gr.update()
    return (f"Saved: {html.escape(name)} labeled pair {int(form.pair)} “{CHOICE_NAMES[choice]}”.",
            pair_html(ws, int(form.pair), name))


def rloo_runs(ws, current):
    ids = [r["id"] for r in ws.runs() if (ws.run_dir(r["id"]) / "samples.jsonl").exists()]  # runs with completions
    return gr.update(choices=ids, value=current if current in ids else (ids[0] if ids else None))


def rloo_groups(ws, run_id):
    return rloo_send.group_choices(ws, run_id)


def send(ws, run_id, group, how):
    """(message, source filter value)."""
    msg, source, _ = rloo_send.send(ws, run_id, group, how)
    return msg, (gr.update(choices=[""] + store.sources(ws), value=source) if source else gr.update())


def _filters(ws) -> dict:
    """The search row and the paging row: {name: widget} (Search's fields, and go, count)."""
    with gr.Row():
        w = dict(text=gr.Textbox(label="Search prompts and responses", scale=3, elem_id="records-search"),
                 source=gr.Dropdown([""] + store.sources(ws), value="", label="Source", scale=2,
                                    elem_id="records-source"),
                 annotator=gr.Dropdown([""] + records.annotators(ws), value="", label="Annotator", scale=1,
                                       elem_id="records-annotator"),
                 label=gr.Dropdown(LABEL_FILTER, value="any", label="Label", scale=1, elem_id="records-label"),
                 flagged=gr.Dropdown(list(records.FLAGGED), value="any", label="Flagged", scale=1,
                                     elem_id="records-flagged"),
                 sort=gr.Dropdown(list(records.SORTS), value="newest", label="Order", scale=1, elem_id="records-sort"),
                 reward_run=gr.Dropdown(_reward_runs(ws), value="", label="Reward model disagrees", scale=1,
                                        elem_id="records-disagree"))
    with gr.Row(equal_height=True):
        w["page"] = gr.Number(1, label="Page", precision=0, scale=1, min_width=100, elem_id="records-page")
        w["per_page"] = gr.Number(20, label="Rows per page", precision=0, scale=1, min_width=100,
                                  elem_id="records-per-page")
        w["go"] = gr.Button("Search", variant="primary", scale=1, elem_id="records-go")
        w["count"] = gr.Markdown(elem_id="records-count")
    return w


def _send_section():
    """RLOO completions to the Label queue: (run, group, how, send button, message)."""
    with gr.Accordion("Send RLOO completions to labeling", open=False):
        gr.Markdown("A prompt's group of completions from an RLOO run becomes a pair in the Label queue "
                    "(source rloo:RUN), so the next reward model learns where the current rewards were wrong.")
        with gr.Row():
            run = gr.Dropdown([], label="RLOO run", scale=1, elem_id="records-rloo-run")
            group = gr.Dropdown([], label="Group (step · prompt)", scale=3, elem_id="records-rloo-group")
        how = gr.Radio(rloo_send.HOW, value="extremes", label="Pair", elem_id="records-rloo-how")
        b_send = gr.Button("Send to Label", elem_id="records-rloo-send")
        send_msg = gr.Markdown(elem_id="records-rloo-msg")
    return run, group, how, b_send, send_msg


def build(studio: Studio):
    ws = studio.ws
    f = _filters(ws)
    viewer = gr.State("")  # the name on the Label tab, taken each time this tab is opened (hooks)
    who = gr.Markdown(NO_VIEWER, elem_id="records-viewer")
    table = gr.Dataframe(headers=HEADERS, interactive=False, wrap=True, column_widths=WIDTHS, elem_id="records-table")
    gr.Markdown("Click a row to see the pair whole and label it under your name, in your letters.")
    pid = gr.Textbox(label="Pair", max_lines=1, elem_id="records-pair")
    detail = gr.HTML(elem_id="records-detail")
    comment = gr.Textbox(label="Comment (optional)", max_lines=1, elem_id="records-comment")
    with gr.Row():
        buttons = {c: gr.Button(CHOICE_NAMES[c], elem_id=f"records-{c}") for c in store.CHOICES}
    msg = gr.Markdown(elem_id="records-msg")
    run, group, how, b_send, send_msg = _send_section()

    fields = {k: f[k] for k in ("text", "source", "annotator", "label", "flagged", "sort", "page", "per_page",
                                "reward_run")}
    refresh = dict(**inputs.bind(partial(search, ws), Search, **fields, viewer=viewer),
                   outputs=[table, f["count"], f["page"]], show_progress="minimal")
    picked = [f["source"], f["annotator"], f["reward_run"]]
    choices = (partial(filter_choices, ws), picked, picked)
    f["go"].click(**refresh)
    f["text"].submit(**refresh)
    for k in ("source", "annotator", "label", "flagged", "sort", "reward_run"):  # a new filter starts at page 1
        f[k].input(lambda: 1, None, f["page"], queue=False).then(**refresh)

    def on_pick(viewer_name, evt: gr.SelectData):  # Gradio passes the event only to a plain function
        return pick(ws, viewer_name, evt)

    table.select(on_pick, viewer, [pid, detail])
    for typed in (pid.submit, pid.blur):  # Enter, or leaving the box, shows the typed pair
        typed(partial(show, ws), [pid, viewer], detail)
    for choice, button in buttons.items():
        button.click(**inputs.bind(partial(give, ws, choice), Relabel, pair=pid, viewer=viewer, comment=comment),
                     outputs=[msg, detail]).then(**refresh).then(*choices)
    run.change(partial(rloo_groups, ws), run, [group, send_msg])
    b_send.click(partial(send, ws), [run, group, how], [send_msg, f["source"]]).then(**refresh)

    def hooks(demo, tab):
        name = label_tab.name_box(demo)  # the one name a person types: on the Label tab (None: no Label tab)
        tab.select(partial(opened, ws) if name else partial(opened, ws, ""), [name, *picked] if name else picked,
                   [viewer, who, *picked], queue=False).then(**refresh).then(partial(rloo_runs, ws), run, run)

    return hooks
