"""The Label tab's browser side: its styles, the key handler that turns 1 / 2 / 3 / 4 / f / u / a into presses of the
buttons of the mode shown, pairs or steps (HEAD, on every page; a is the step mode's accept of the model's verdicts),
and the small scripts its events run in the page (which pair is on screen, what this browser remembers in
localStorage). ui/label_tab.py lays out and wires the tab; nothing here calls the server.
"""
from __future__ import annotations

import json

from rloo_studio.ui import render

CSS = render.CSS + """
#lbl-prompt {font-size: 1.05em; padding: .5em .8em; border-radius: 6px; background: var(--block-background-fill)}
.lbl-side {min-height: 8em}
.lbl-side-title {font-weight: 600; margin-bottom: .3em}
#lbl-progress {font-size: .95em}
.lbl-msg-error {color: #b91c1c; font-weight: 600}
.lbl-keys {font-size: .85em; color: var(--body-text-color-subdued)}
#lbl-busy-text:empty {display: none}
"""

HEAD = """
<script>
document.addEventListener('keydown', (e) => {
  const t = e.target;
  if (t && (t.tagName === 'TEXTAREA' || t.tagName === 'INPUT' || t.tagName === 'SELECT' || t.isContentEditable)) {
    // Esc leaves the comment box, so that the keys label again.
    if (e.key === 'Escape' && t.closest && t.closest('#lbl-comment')) { e.preventDefault(); t.blur(); }
    return;
  }
  if (e.ctrlKey || e.metaKey || e.altKey || e.repeat) return;
  // A key's buttons: the pair mode's, then the step mode's; the one shown is pressed (only while the Label tab is).
  const map = {'1': ['lbl-left', 'stp-good'], 'ArrowLeft': ['lbl-left'], '2': ['lbl-right', 'stp-neutral'],
               'ArrowRight': ['lbl-right'], '3': ['lbl-tie', 'stp-bad'], '4': ['lbl-skip'], 'f': ['lbl-flag'],
               'F': ['lbl-flag'], 'u': ['lbl-undo', 'stp-undo'], 'U': ['lbl-undo', 'stp-undo'],
               'a': ['stp-accept'], 'A': ['stp-accept']};
  const btn = (map[e.key] || []).map((id) => document.getElementById(id)).find((b) => b && b.offsetParent !== null);
  if (!btn) return;
  e.preventDefault();
  if (btn.disabled) {  // nothing on the page to label: the buttons are disabled; the key says so, in words
    const note = document.getElementById('lbl-busy-text');
    const said = btn.id === 'stp-accept'
      ? 'The model proposes no verdict here, so this key saved nothing: choose a process reward model, or label '
        + 'the step (or the final answer) with 1, 2 or 3.'
      : btn.id.startsWith('stp-')
      ? 'No step is on screen, so this key saved nothing: type your name, or import responses with <think> steps.'
      : 'No pair is on screen, so this key saved nothing: type your name, or choose a filter with pairs left.';
    if (note) note.textContent = said;
    clearTimeout(window.lblNoPairT);
    window.lblNoPairT = setTimeout(() => { if (note && note.textContent === said) note.textContent = ''; }, 8000);
    return;
  }
  btn.click();
});
// A label or undo press (key or click) while the last one is being saved is refused here, in words: the
// label event's .then calls lblSaved(). After a minute without an answer, presses are taken again.
window.lblSaving = 0;
window.lblSaved = () => { window.lblSaving = 0; };
document.addEventListener('click', (e) => {
  const btn = e.target.closest && e.target.closest(
    '#lbl-left, #lbl-right, #lbl-tie, #lbl-skip, #lbl-flag, #lbl-undo, #stp-good, #stp-neutral, #stp-bad, '
    + '#stp-accept, #stp-undo');
  if (!btn) return;
  const note = document.getElementById('lbl-busy-text');
  if (window.lblSaving && Date.now() - window.lblSaving < 60000) {
    e.stopImmediatePropagation();
    e.preventDefault();
    if (note) note.textContent = 'Still saving your last label: this press was not used. Press again.';
    return;
  }
  if (note) note.textContent = '';
  window.lblSaving = Date.now();
}, true);
</script>
"""

SAVED_JS = "() => { window.lblSaved && window.lblSaved(); }"

# Runs in the browser when a label button is pressed (or clicked): the last input becomes the id of
# the pair whose texts are on the page right now ('' when none is).
ON_SCREEN_JS = """(...args) => {
  const el = document.querySelector('#lbl-prompt [data-pair]');
  args[args.length - 1] = el ? el.getAttribute('data-pair') : '';
  return args;
}"""

# Runs in the browser as the page loads, with no round trip (so nothing typed meanwhile is overwritten): the name
# typed so far wins over the remembered one; this browser's id is made once. They live in plain localStorage under
# the workspace's key, read synchronously: gr.BrowserState fills its value only once its component has mounted,
# which can be after the page-load event has read it (a reload then showed no pair, or made a new browser id).
def start_js(key: str) -> str:
    """(typed name) -> [name, this browser's id, the app start it saw last, the Label tab's mode], from localStorage
    under `key`."""
    return f"""(typed) => {{ const k = {json.dumps(key)}; const get = (n) => localStorage.getItem(k + n) || '';
  let id = get(':browser');
  if (!id) {{ id = Date.now().toString(36) + '-' + Math.random().toString(36).slice(2);
             localStorage.setItem(k + ':browser', id); }}
  return [(typed || '').trim() ? typed : get(':name'), id, get(':boot'),
          get(':mode') === 'Steps' ? 'Steps' : 'Pairs']; }}"""


def load_inputs_js(key: str, names: list[str]) -> str:
    """The page-load view's inputs (widgets `names`, in order) with the name, browser id, boot and mode (those of
    them named) read from localStorage again: a `js=` event's outputs may reach the page after the next event has
    read its inputs."""
    at = {n: names.index(n) for n in ("name", "session", "boot", "mode") if n in names}
    kept = {"session": "get(':browser')", "boot": "get(':boot')",
            "mode": "(get(':mode') === 'Steps' ? 'Steps' : 'Pairs')"}
    sets = "".join(f" v[{at[n]}] = {js};" for n, js in kept.items() if n in at)
    return f"""(...v) => {{ const k = {json.dumps(key)}; const get = (n) => localStorage.getItem(k + n) || '';
  if (!(v[{at['name']}] || '').trim()) v[{at['name']}] = get(':name');{sets} return v; }}"""


def remember_js(key: str, what: str) -> str:
    """(value) -> nothing: keep `value` in localStorage as the page's `what` (name, boot)."""
    return f"(v) => {{ localStorage.setItem({json.dumps(key + ':' + what)}, v || ''); }}"


# The edit box is filled in the browser as it opens (no round trip), with the stored text unless something is typed:
# a value sent by the page-load event could land after the person typed and replace it (then "Guidelines removed").
# What is typed is read from the box as the function runs, not from the inputs Gradio gathered when the accordion was
# clicked: on a loaded page the text typed in between was otherwise replaced by the stored text (seen under two test
# workers).
FILL_EDIT_JS = ("(stored, typed) => { const box = document.querySelector('#lbl-guidelines-edit textarea'); "
                "const now = box ? box.value : typed; return (now || '').trim() ? now : stored; }")


