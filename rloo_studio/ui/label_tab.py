"""Label tab: pick the better of two responses, mostly from the keyboard.

Keys (outside text boxes): 1 / ← left better, 2 / → right better, 3 tie, 4 skip, u undo.
"""
from __future__ import annotations

import html
import uuid

import gradio as gr

from .. import labels as L
from ..errors import explain
from ..exporting import FORMATS, export
from ..generate import GenerateConfig, generate_candidates
from ..importing import import_upload
from ..models import TRUST_SHORT, TRUST_WARNING
from ..prompts import prompt_sets
from ..reward_view import uncertainty_queue
from ..runs import trained_adapters
from ..studio import Studio
from . import render

CSS = render.CSS + """
#lbl-prompt {font-size: 1.05em; padding: .5em .8em; border-radius: 6px; background: var(--block-background-fill)}
.lbl-side {min-height: 8em}
.lbl-side-title {font-weight: 600; margin-bottom: .3em}
#lbl-progress {font-size: .95em}
.lbl-msg-error {color: #b91c1c; font-weight: 600}
.lbl-keys {font-size: .85em; color: var(--body-text-color-subdued)}
"""

HEAD = """
<script>
document.addEventListener('keydown', (e) => {
  const t = e.target;
  if (t && (t.tagName === 'TEXTAREA' || t.tagName === 'INPUT' || t.tagName === 'SELECT' || t.isContentEditable)) return;
  if (e.ctrlKey || e.metaKey || e.altKey || e.repeat) return;
  const map = {'1': 'lbl-left', 'ArrowLeft': 'lbl-left', '2': 'lbl-right', 'ArrowRight': 'lbl-right',
               '3': 'lbl-tie', '4': 'lbl-skip', 'u': 'lbl-undo', 'U': 'lbl-undo'};
  const btn = document.getElementById(map[e.key]);
  if (!btn || btn.offsetParent === null || btn.disabled) return;  // only while the Label tab is shown
  e.preventDefault();
  btn.click();
});
</script>
"""

NO_NAME = "Enter your name above to start labeling: each label records who gave it."


def _msg(text: str, error: bool = False) -> str:
    return f"<span class='{'lbl-msg-error' if error else ''}'>{html.escape(text)}</span>" if text else ""


def _progress_md(studio: Studio, name: str) -> str:
    p = L.progress(studio.ws, name or None)
    pace = f" · {p['per_minute']:.1f} labels/min" if p["per_minute"] else ""
    return (f"**{p['labeled']} / {p['total']}** pairs labeled ({p['human_labeled']} by people)"
            f" · you: **{p['mine']}**{pace}")


def _view(studio: Studio, shown: L.Shown | None, name: str, raw: bool, note: str = "", error: bool = False,
          active: dict | None = None):
    """Outputs for: prompt, left, right, status line, progress, current-pair state."""
    if not name.strip():
        return "", "", "", _msg(NO_NAME), _progress_md(studio, ""), None
    if shown is None:
        return ("<i>Nothing left under this filter. Import or generate pairs, or choose another filter.</i>", "", "",
                _msg(note, error), _progress_md(studio, name), None)
    flag = f" · flagged: {shown.flag}" if shown.flag else ""
    mine = f" · your label: {shown.current}" if shown.current else ""
    hint = ""
    guess = (active or {}).get("info", {}).get(str(shown.pair_id))
    if guess:  # active labeling: the reward model's guess, in the sides as shown
        margin, side = guess
        shown_side = "A" if (side == "a") == shown.a_shown_left else "B"
        hint = f" · reward model suggests {shown_side} (margin {abs(margin):.3f})"
    status = f"pair #{shown.pair_id} · source {shown.source}{flag}{mine}{hint}"
    return (render.esc(shown.prompt), render.response_html(shown.left, raw), render.response_html(shown.right, raw),
            _msg(note, error) or status, _progress_md(studio, name), shown)


def build(studio: Studio):
    ws = studio.ws
    saved_name = gr.BrowserState("", storage_key="rloo-studio-annotator")
    session = gr.State("")
    current = gr.State(None)
    active = gr.State(None)  # active labeling: {"order": [pair ids], "info": {pair id: (margin, 'a'|'b')}}
    with gr.Row():
        name = gr.Textbox(label="Your name", placeholder="annotator name", scale=2, max_lines=1)
        flt = gr.Dropdown(list(L.FILTERS), value="unlabeled", label="Show", scale=1)
        src = gr.Dropdown([("all sources", "")] + [(s, s) for s in L.sources(ws)], value="", label="Source", scale=1)
        raw = gr.Checkbox(label="Raw text", value=False, scale=1)
    with gr.Row():
        order_by = gr.Dropdown([("usual order", "")] + trained_adapters(ws, "reward"), value="", scale=2,
                               label="Active labeling: most uncertain first, by reward model")
        order_msg = gr.HTML()
    progress = gr.Markdown(elem_id="lbl-progress")
    status = gr.HTML(elem_id="lbl-status")  # which pair, or what went wrong: above the texts, where eyes are
    prompt = gr.HTML(elem_id="lbl-prompt")
    with gr.Row(equal_height=True):
        with gr.Column():
            gr.HTML("<div class='lbl-side-title'>A</div>")
            left = gr.HTML(elem_classes="lbl-side", elem_id="lbl-left-text")
        with gr.Column():
            gr.HTML("<div class='lbl-side-title'>B</div>")
            right = gr.HTML(elem_classes="lbl-side", elem_id="lbl-right-text")
    with gr.Row():
        b_left = gr.Button("A is better  [1]", variant="primary", elem_id="lbl-left")
        b_right = gr.Button("B is better  [2]", variant="primary", elem_id="lbl-right")
        b_tie = gr.Button("Tie  [3]", elem_id="lbl-tie")
        b_skip = gr.Button("Skip  [4]", elem_id="lbl-skip")
        b_undo = gr.Button("Undo  [u]", elem_id="lbl-undo")
    comment = gr.Textbox(label="Comment (optional, saved with the label)", max_lines=2)
    gr.HTML("<div class='lbl-keys'>Keys: 1 or ← for A, 2 or → for B, 3 tie, 4 skip, u undo (not while typing).</div>")
    outs = [prompt, left, right, status, progress, current]

    def start(stored, sess, typed):
        # A name typed before the page finished loading wins over the remembered one.
        return (typed or "").strip() or stored, sess or uuid.uuid4().hex

    def show_next(nm, sess, f, s, rw, av):
        nm = (nm or "").strip()
        if not nm:
            return _view(studio, None, "", rw)
        try:
            shown = L.next_pair(ws, nm, sess, f, s, prefer=(av or {}).get("order"))
            return _view(studio, shown, nm, rw, active=av)
        except ValueError as e:
            return _view(studio, None, nm, rw, str(e), True)

    def relabel(nm, sess, f, s, rw, av):
        L.release(ws, sess)
        return show_next(nm, sess, f, s, rw, av)

    def act(side):
        def fn(nm, sess, f, s, rw, av, shown, cm):
            nm = (nm or "").strip()
            if not nm or shown is None:
                return (*show_next(nm, sess, f, s, rw, av), cm)
            try:
                L.save_label(ws, shown, nm, sess, side, cm)
                return (*show_next(nm, sess, f, s, rw, av), "")
            except (ValueError, KeyError) as e:
                return (*_view(studio, shown, nm, rw, explain(e), True), cm)
        return fn

    def do_undo(nm, sess, f, s, rw, av, shown):
        nm = (nm or "").strip()
        if not nm:
            return _view(studio, None, "", rw)
        back = L.undo(ws, nm, sess)
        if back is None:
            return _view(studio, shown, nm, rw, "Nothing to undo yet.")
        return _view(studio, back, nm, rw, f"Undid your label on pair #{back.pair_id}; choose again.", active=av)

    def rerender(nm, rw, shown, av):
        return _view(studio, shown, (nm or "").strip(), rw, active=av)

    common = [name, session, flt, src, raw, active]
    for btn, side in ((b_left, "left"), (b_right, "right"), (b_tie, "tie"), (b_skip, "skip")):
        btn.click(act(side), [*common, current, comment], [*outs, comment], show_progress="hidden",
                  trigger_mode="once")
    b_undo.click(do_undo, [*common, current], outs, show_progress="hidden")
    # Enter leaves the name box (so that the keys label), and leaving it loads that annotator's queue.
    name.submit(None, js="() => { document.activeElement.blur(); }")
    name.blur(relabel, common, outs).then(lambda n: n, name, saved_name)
    flt.change(relabel, common, outs)
    src.change(relabel, common, outs)
    raw.change(rerender, [name, raw, current, active], outs, show_progress="hidden")

    def choose_order(run_id, nm, sess, f, s, rw, progress=gr.Progress()):
        if not run_id:
            return None, _msg("Pairs in their usual order."), *relabel(nm, sess, f, s, rw, None)
        progress(0.1, desc="scoring unlabeled pairs with the reward model")
        try:
            queue = uncertainty_queue(ws, run_id)
        except Exception as e:  # a broken or deleted run: say so, keep labeling in the usual order
            return None, _msg(explain(e), True), *relabel(nm, sess, f, s, rw, None)
        av = {"order": [q[0] for q in queue], "info": {str(q[0]): (q[1], q[2]) for q in queue}}
        note = f"{len(queue)} unlabeled pairs ordered by the reward model's uncertainty (smallest margin first)."
        return av, _msg(note), *relabel(nm, sess, f, s, rw, av)

    order_by.change(choose_order, [order_by, *common[:-1]], [active, order_msg, *outs])

    # Import / generate / export / agreement
    with gr.Accordion("Import pairs or prompts", open=False):
        gr.Markdown("JSONL, CSV or Parquet: preference pairs (`prompt`, `chosen`, `rejected`; standard or "
                    "conversational; without `prompt` the shared prefix is the prompt), candidates "
                    "(`prompt` + `responses` list or `response_1..N`), or a prompt set (`prompt` + other columns). "
                    "An import is all or nothing.")
        up = gr.File(label="File", file_types=[".jsonl", ".json", ".csv", ".parquet"], type="filepath")
        b_import = gr.Button("Import")
        import_msg = gr.HTML()
    with gr.Accordion("Generate candidates from a model", open=False):
        sets = [s["name"] for s in prompt_sets(ws)]
        d = GenerateConfig()
        with gr.Row():
            g_set = gr.Dropdown(sets, value=d.prompt_set if d.prompt_set in sets else None, label="Prompt set")
            g_limit = gr.Number(d.limit, label="Prompts", precision=0, minimum=1, elem_id="lbl-gen-limit")
            g_k = gr.Slider(2, 8, d.k, step=1, label="Responses per prompt (k)")
        g_typed = gr.Textbox(label="…or type prompts, one per line", lines=3)
        with gr.Row():
            g_model = gr.Textbox(d.model, label="Model (local folder or cached hub id)", scale=3)
            g_trust = gr.Checkbox(d.trust_remote_code, label="trust_remote_code", info=TRUST_SHORT, scale=1,
                                  elem_id="lbl-gen-trust")
            g_tokens = gr.Number(d.max_new_tokens, label="Max new tokens", precision=0, minimum=1)
            g_temp = gr.Number(d.temperature, label="Temperature", minimum=0.01)
        with gr.Row():
            b_gen = gr.Button("Generate", variant="primary")
            b_gen_stop = gr.Button("Stop")
        gen_run = gr.State("")
        gen_msg = gr.HTML()
        gen_timer = gr.Timer(1.0, active=False)
    with gr.Accordion("Export for other tools", open=False):
        with gr.Row():
            e_fmt = gr.Radio(list(FORMATS), value="standard", label="Format")
            e_name = gr.Textbox("pairs.jsonl", label="File name (.jsonl, .parquet, or a folder name for `datasets`)")
            e_split = gr.Slider(0, 0.5, 0, step=0.05, label="Test fraction")
            e_ties = gr.Checkbox(label="Write ties to a separate file")
        b_export = gr.Button("Export")
        export_msg = gr.HTML()
        export_files = gr.File(label="Exported files", file_count="multiple", interactive=False)
    with gr.Accordion("Annotators and agreement", open=False):
        with gr.Row():
            overlap = gr.Number(L.overlap(ws), label="Annotators per pair (overlap)", precision=0, minimum=1, maximum=10)
            b_overlap = gr.Button("Set overlap")
        agree = gr.Markdown()
        b_agree = gr.Button("Refresh agreement")

    def do_import(path, nm, sess, f, s, rw, av, progress=gr.Progress()):
        if not path:
            return _msg("Choose a file first.", True), *_view(studio, None, (nm or "").strip(), rw)[:5], gr.update(), None
        try:
            res = import_upload(ws, path, progress=lambda frac, what: progress(frac, desc=what))
            msg = _msg(res.summary())
        except Exception as e:  # every failure is a message; the import wrote nothing
            msg = _msg(f"Import refused, nothing was changed: {explain(e)}", True)
        view = show_next(nm, sess, f, s, rw, av)
        sources = gr.update(choices=[("all sources", "")] + [(x, x) for x in L.sources(ws)])
        return msg, *view[:5], sources, None  # clear the file box, ready for the next one

    b_import.click(do_import, [up, *common], [import_msg, prompt, left, right, status, progress, src, up])

    def start_gen(pset, limit, k, typed, model, trust, tokens, temp):
        try:
            cfg = GenerateConfig(model=model, prompt_set=pset, prompts=(typed or "").splitlines(), limit=int(limit or 1),
                                 k=int(k), max_new_tokens=int(tokens or 1), temperature=float(temp or 0),
                                 trust_remote_code=bool(trust))
            cfg.validate()
        except Exception as e:
            return "", _msg(explain(e), True)
        busy = (studio.runner.current or "the queued runs") if studio.runner.busy() else None
        rid = studio.runner.submit("generate", cfg, generate_candidates)
        return rid, _msg(f"Queued ({rid}) behind {busy}; it starts when that run ends." if busy
                         else f"Generating ({rid})…")

    def poll_gen(rid):
        if not rid:
            return _msg(""), gr.Timer(active=False)
        st = studio.runner.status(rid)
        pr = st.get("progress") or {}
        if st.get("status") == "queued":
            return _msg(f"queued ({rid}): it starts when the running job ends"), gr.Timer(active=True)
        if st.get("status") == "running":
            eta = f", about {pr['eta_s']:.0f} s left" if pr.get("eta_s") else ""
            done = f"{pr.get('done', 0)} / {pr.get('total', '?')} prompts" if pr else "loading the model"
            return _msg(f"{st['status']}: {done}{eta}"), gr.Timer(active=True)
        return _msg(f"{st.get('status')}: {st.get('message', '')}", st.get("status") == "failed"), gr.Timer(active=False)

    g_trust.input(lambda on: _msg(TRUST_WARNING, True) if on else _msg(""), g_trust, gen_msg)
    b_gen.click(start_gen, [g_set, g_limit, g_k, g_typed, g_model, g_trust, g_tokens, g_temp], [gen_run, gen_msg]).then(
        lambda rid: gr.Timer(active=bool(rid)), gen_run, gen_timer)
    gen_timer.tick(poll_gen, gen_run, [gen_msg, gen_timer], show_progress="hidden")
    b_gen_stop.click(lambda rid: studio.runner.stop(rid) and None, gen_run, None)

    def do_export(fmt, fname, split, ties):
        fname = (fname or "").strip()
        if not fname or "/" in fname or "\\" in fname or fname.startswith("."):
            return _msg("Give a plain file name (no folders); files go to the workspace's exports/.", True), None
        try:
            res = export(ws, ws.exports_dir / fname, fmt, ties_apart=ties, test_fraction=float(split))
        except Exception as e:
            return _msg(explain(e), True), None
        files = [str(p) for p in res.paths if p.is_file()]
        return _msg(res.summary() + f" Saved in {ws.exports_dir}."), files or None

    b_export.click(do_export, [e_fmt, e_name, e_split, e_ties], [export_msg, export_files])

    def set_overlap(n):
        try:
            L.set_overlap(ws, int(n))
            return _agreement_md(studio)
        except (ValueError, TypeError) as e:
            return f"**{e}**"

    b_overlap.click(set_overlap, overlap, agree)
    b_agree.click(lambda: _agreement_md(studio), None, agree)

    def on_load(demo: gr.Blocks, tab: gr.Tab) -> None:
        # Restore the name this browser used, start a session, continue where the annotator left off.
        demo.load(start, [saved_name, session, name], [name, session]).then(show_next, common, outs).then(
            lambda: _agreement_md(studio), None, agree)
        tab.select(lambda: gr.update(choices=[("usual order", "")] + trained_adapters(ws, "reward")), None, order_by)

    return on_load


def _agreement_md(studio: Studio) -> str:
    ag = L.agreement(studio.ws)
    lines = [f"Overlap: **{L.overlap(studio.ws)}** annotator(s) per pair. Annotators: {', '.join(ag['annotators']) or 'none yet'}."]
    if not ag["pairs"]:
        lines.append("No pair has labels from two annotators yet (raise the overlap to measure agreement).")
        return "\n\n".join(lines)
    if ag["kappa"] is not None:
        lines.append(f"Cohen's kappa **{ag['kappa']:.2f}**, raw agreement **{ag['raw']:.0%}** over {ag['shared_pairs']} shared pairs.")
    else:
        lines.append(f"Raw agreement **{ag['raw']:.0%}** over {ag['shared_pairs']} shared labels (all annotator pairs).")
    lines.append("| annotators | shared | raw | kappa |\n|---|---|---|---|" + "".join(
        f"\n| {p['a']} / {p['b']} | {p['shared']} | {p['raw']:.0%} | {p['kappa']:.2f} |" for p in ag["pairs"]))
    return "\n\n".join(lines)
