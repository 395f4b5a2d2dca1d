"""Claims belong to the annotator and the browser: a reload, a second tab or an app restart shows the same
pair in the same A/B order; another browser or person gets another pair; a claim comes back to its owner."""
import time
from dataclasses import replace

from rloo_studio.core.workspace import Workspace
from rloo_studio.label import store as L


def claims(ws, pair_id):
    return ws.query("SELECT session, expires FROM claims WHERE pair_id=?", (pair_id,))


def test_a_browser_gets_its_pair_back_in_the_same_order_across_reloads_and_a_restart(workspace):
    first = L.next_pair(workspace, "ann", "browser-1")
    for _ in range(3):  # reloads, other tabs of the same browser
        again = L.next_pair(workspace, "ann", "browser-1")
        assert (again.pair_id, again.left, again.right) == (first.pair_id, first.left, first.right)
    restarted = Workspace(workspace.root)  # the app restarted: a new process opens the same workspace
    back = L.next_pair(restarted, "ann", "browser-1")
    assert (back.pair_id, back.a_shown_left) == (first.pair_id, first.a_shown_left)
    # Not hidden from its owner, and held by one claim only: no other pair of the queue was taken on the way.
    assert len(workspace.query("SELECT * FROM claims")) == 1


def test_coming_back_restarts_the_claims_time(workspace, monkeypatch):
    shown = L.next_pair(workspace, "ann", "browser-1")
    (_, first_expiry), = claims(workspace, shown.pair_id)
    later = time.time() + L.CLAIM_SECONDS - 1  # just before it would expire
    monkeypatch.setattr(L.time, "time", lambda: later)
    assert L.next_pair(workspace, "ann", "browser-1").pair_id == shown.pair_id
    (_, expiry), = claims(workspace, shown.pair_id)
    assert expiry > first_expiry + L.CLAIM_SECONDS - 2


def test_other_browsers_and_people_get_other_pairs_until_the_claim_is_labeled(workspace):
    mine = L.next_pair(workspace, "ann", "browser-1")
    assert L.next_pair(workspace, "ann", "browser-2").pair_id != mine.pair_id  # ann's other browser
    assert L.next_pair(workspace, "bob", "browser-3").pair_id != mine.pair_id
    assert L.next_pair(workspace, "ann", "api:ann").pair_id != mine.pair_id  # ann's script
    L.save_label(workspace, L.next_pair(workspace, "ann", "browser-1"), "ann", "browser-1", "left")
    assert L.next_pair(workspace, "ann", "browser-1").pair_id != mine.pair_id  # labeled: the browser moves on


def test_a_browser_shows_one_annotators_pair_a_new_name_frees_the_old_names_claim(workspace):
    L.next_pair(workspace, "alice", "shared-browser")
    L.next_pair(workspace, "bob", "shared-browser")  # the same browser, the name changed
    held = workspace.query("SELECT a.name FROM claims c JOIN annotators a ON a.id = c.annotator_id")
    assert [r[0] for r in held] == ["bob"]  # alice's pair is not held for a page that shows bob's


def test_a_key_pressed_on_a_page_from_before_a_restart_labels_the_pair_it_shows(tmp_path):
    """The Label tab's key callback, as a new start of the app meets it: the page shows a pair the server never
    handed out in this process (no `shown`), and names it (`screen`). The pair is labeled, and the page is told."""

    from rloo_studio.studio import Studio
    from rloo_studio.ui import label_tab
    from rloo_studio.ui.label_render import LabelInputs

    before = Studio(tmp_path / "ws", seed_demo=True)
    form = LabelInputs(name="ann", session="browser-1")
    on_page = L.next_pair(before.ws, "ann", "browser-1")
    after = Studio(tmp_path / "ws")  # the app restarted on the same workspace
    out = label_tab.label(after, "left", replace(form, shown=None, screen=str(on_page.pair_id)))
    status, now_shown = out[3], out[5]
    assert label_tab.RESTARTED in status
    assert now_shown is not None and now_shown.pair_id != on_page.pair_id  # the next pair
    (pair_id, annotator), = after.ws.query(
        "SELECT l.pair_id, a.name FROM labels l JOIN annotators a ON a.id = l.annotator_id WHERE a.name = 'ann'")
    assert pair_id == on_page.pair_id
    # A page showing another pair than the one this browser holds saves nothing, and says so.
    out = label_tab.label(after, "left", replace(form, shown=None, screen="999999"))
    assert label_tab.RESTARTED in out[3] and label_tab.NOTHING_SAVED in out[3]
    assert len(after.ws.query("SELECT 1 FROM labels l JOIN annotators a ON a.id = l.annotator_id "
                              "WHERE a.name = 'ann'")) == 1


def test_the_load_view_answered_late_leaves_the_pair_a_typed_name_drew(tmp_path):
    """A name typed before the page's load chain ends draws its pair, and Raw text toggled then redraws it raw; the
    load's view, its inputs read as the page loaded (raw off), can be answered after both. Drawn, it undid the toggle
    (seen in Chromium on a loaded host). It now leaves the page's view as it is, and the pair held stays the one on
    the page."""
    import gradio as gr

    from rloo_studio.studio import Studio
    from rloo_studio.ui import label_tab
    from rloo_studio.ui.label_render import LabelInputs

    studio = Studio(tmp_path / "ws", seed_demo=True)
    form = LabelInputs(name="ann", session="browser-1", raw=False)
    on_page = L.next_pair(studio.ws, "ann", "browser-1")  # drawn by the typed name, then redrawn raw
    out = label_tab.first_view(studio, replace(form, shown=on_page, boot=""))
    view, boot = out[:-1], out[-1]
    assert all(o == gr.skip() for o in view)  # nothing redrawn, the current pair kept
    assert boot == label_tab.BOOT
    assert L.next_pair(studio.ws, "ann", "browser-1").pair_id == on_page.pair_id
    # With nothing on the page yet, the load's view draws the held pair as before.
    out = label_tab.first_view(studio, replace(form, shown=None, boot=""))
    assert out[5] is not None and out[5].pair_id == on_page.pair_id
