"""Send RLOO completions to labeling, where the completions are: a prompt's group of the run shown becomes a
pair in the Label queue (source rloo:RUN), so that the next reward model learns where the current rewards were
wrong. The RLOO tab lays this out under its completions table; the Records tab uses the same callbacks.
Core: rloo_studio.rloo.to_label (groups, send_group)."""
from __future__ import annotations

import html
from functools import partial

import gradio as gr

from rloo_studio.core.errors import StudioError, explain
from rloo_studio.rloo import to_label
from rloo_studio.rloo.launch_form import latest_run
from rloo_studio.studio import Studio

HOW = [("highest vs lowest reward", "extremes"),
       ("the pair the reward model ranks against the rule rewards", "disagreement")]


def _cut(text: str, n: int = 60) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= n else text[:n] + "…"


def _plain(e: Exception) -> str:
    return f"**{html.escape(explain(e) if isinstance(e, StudioError) else str(e))}**"


def group_label(g: dict) -> str:
    head = f"step {g['step']} · {_cut(g['prompt'])}"
    if g["best"] is None:
        return head
    return f"{head} · {g['n']} completions, rewards {g['worst']:.3g} to {g['best']:.3g}"


# -- callbacks ---------------------------------------------------------------------------------------------

def group_choices(ws, run_id, current=None):
    """(group dropdown update, message): the run's groups, latest step first; the one picked stays picked,
    else the newest group whose rewards differ (one that has a best and a worst) is picked."""
    if not str(run_id or "").strip():
        return gr.update(choices=[], value=None), ""
    try:
        gs = to_label.groups(ws, run_id)
    except (StudioError, ValueError) as e:
        return gr.update(choices=[], value=None), _plain(e)
    choices = [(group_label(g), f"{g['step']}|{g['prompt']}") for g in gs]
    values = [v for _, v in choices]
    spread = next((v for v, g in zip(values, gs) if g["spread"]), values[0] if values else None)
    return gr.update(choices=choices, value=current if current in values else spread), ""


def send(ws, run_id, group, how) -> tuple[str, str, int]:
    """(message, the source of the group's pairs ('' when refused), how many pairs were added)."""
    step, sep, prompt = str(group or "").partition("|")
    if not str(run_id or "").strip() or not sep:
        return "**Choose a run and one of its groups first.**", "", 0
    try:
        res = to_label.send_group(ws, run_id, int(step), prompt, how)
    except (StudioError, ValueError) as e:
        return _plain(e), "", 0
    return html.escape(res.summary()), res.source, res.added


def shown_run(ws, typed) -> str:
    """The run the RLOO tab shows: the one in its Run box, else the active or newest one."""
    return str(typed or "").strip() or (latest_run(ws) or "")


def refresh(ws, typed, current):
    return group_choices(ws, shown_run(ws, typed), current)


def send_shown(ws, typed, group, how) -> str:
    rid = shown_run(ws, typed)
    msg, source, added = send(ws, rid, group, how)
    if added:
        msg += (f" Label them in the Label tab (Source: <code>{html.escape(source)}</code>); the Records tab lists "
                "them too.")
    return msg


def build(studio: Studio, run_dd) -> None:
    """An accordion: pick a prompt's group of the run shown in `run_dd`, how to pick the pair, Send."""
    ws = studio.ws
    with gr.Accordion("Send a group to labeling: its completions become a pair in the Label queue", open=False) as acc:
        gr.Markdown("Pick a prompt's group of completions of the run shown above. Its pair goes to the Label queue "
                    "unlabeled, as source `rloo:RUN`, so the next reward model learns where the current rewards "
                    "were wrong. A pair already in the queue is not sent twice.")
        with gr.Row(equal_height=True):
            group = gr.Dropdown([], label="Group (step · prompt)", scale=4, elem_id="rloo-send-group")
            b_groups = gr.Button("Refresh groups", scale=1, elem_id="rloo-send-refresh")
        how = gr.Radio(HOW, value="extremes", label="Pair", elem_id="rloo-send-how")
        b_send = gr.Button("Send to Label", variant="primary", elem_id="rloo-send-go")
        msg = gr.Markdown(elem_id="rloo-send-msg")
    fill = dict(fn=partial(refresh, ws), inputs=[run_dd, group], outputs=[group, msg], show_progress="hidden")
    acc.expand(**fill)
    b_groups.click(**fill)
    run_dd.change(**fill)
    b_send.click(partial(send_shown, ws), [run_dd, group, how], msg)
