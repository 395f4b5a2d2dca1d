"""Two browser sessions label at once: no label lost, none doubled, no pair given to both."""
import json
import threading
import time

from browser import App, launch_browser
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import sync_playwright

from rloo_studio.core.workspace import Workspace
from rloo_studio.label.demo_data import open_workspace
from rloo_studio.label.importing import import_file

DURATION_S = 20  # docs/RELIABILITY.md records a longer run of the same test


MOVED_ON = ("b => { const m = (document.querySelector('#lbl-status')?.innerText || '').match(/pair #(\\d+)/);"
            " return m && m[1] !== b; }")


def stored_for(ws_dir, name: str, pair_id: int) -> bool:
    return bool(Workspace(ws_dir).query(
        "SELECT 1 FROM labels l JOIN annotators a ON a.id = l.annotator_id WHERE a.name=? AND l.pair_id=?",
        (name, pair_id)))


def labeler(url: str, ws_dir, name: str, seen: list, errors: list, duration: float):
    try:
        with sync_playwright() as p:
            b = launch_browser(p)
            page = b.new_page()
            page.goto(url)
            page.wait_for_function("() => (document.querySelector('#lbl-status')?.innerText || '')"
                                   ".includes('Enter your name')", timeout=180000)
            page.get_by_label("Your name").focus()
            page.keyboard.type(name)
            page.keyboard.press("Enter")
            page.wait_for_function("() => /pair #\\d+/.test(document.querySelector('#lbl-status')?.innerText || '')",
                                   timeout=180000)
            k, last = 0, ""
            stop_at = time.time() + duration  # from when this page is ready to label
            while time.time() < stop_at:
                # the pair on the page, once it is not the one just labeled: as a person presses after seeing the
                # next pair (on a loaded host the status line once showed the labeled pair again for a moment)
                current = page.wait_for_function(
                    "last => { const m = (document.querySelector('#lbl-status')?.innerText || '')"
                    ".match(/pair #(\\d+)/); return m && m[1] !== last && m[1]; }",
                    arg=last, timeout=120000).json_value()
                key = "1" if k % 2 else "2"
                page.keyboard.press(key)
                for _ in range(12):  # a press made while the last label's event still runs is dropped
                    try:               # (trigger_mode='once'): press again, but only if nothing was stored
                        page.wait_for_function(MOVED_ON, arg=current, timeout=10000)
                        break
                    except PlaywrightTimeout:
                        if not stored_for(ws_dir, name, int(current)):
                            page.keyboard.press(key)
                else:
                    raise TimeoutError(f"pair #{current} stayed on {name}'s page for 2 minutes "
                                       f"(its label stored: {stored_for(ws_dir, name, int(current))})")
                seen.append(int(current))  # the page moved on: this label was acknowledged
                k, last = k + 1, current
            b.close()
    except Exception as e:  # reported by the test
        errors.append(repr(e))


def test_two_sessions_label_at_once(tmp_path):
    ws_dir = tmp_path / "ws"
    ws = open_workspace(ws_dir, demo=True)
    # Enough pairs that two fast annotators never empty the queue within the test.
    extra = tmp_path / "more.jsonl"
    extra.write_text("".join(json.dumps({"prompt": f"q{i}", "responses": [f"a{i}", f"b{i}"]}) + "\n"
                             for i in range(3000)))
    import_file(ws, extra)
    app = App(ws_dir)
    app.wait_ready()
    try:
        seen = {"ann": [], "bob": []}
        errors: list = []
        threads = [threading.Thread(target=labeler, args=(app.url, ws_dir, n, seen[n], errors, DURATION_S))
                   for n in seen]
        for t in threads:
            t.start()
        for t in threads:
            t.join(600)
        assert not errors, errors
    finally:
        app.stop()
    ws = Workspace(ws_dir)
    for name, pairs in seen.items():
        rows = ws.query("SELECT l.pair_id FROM labels l JOIN annotators a ON a.id = l.annotator_id "
                        "WHERE a.name=? AND l.superseded=0", (name,))
        stored = sorted(r[0] for r in rows)
        assert stored == sorted(pairs), name  # nothing lost, nothing doubled
        assert len(pairs) >= 10
    assert not set(seen["ann"]) & set(seen["bob"])  # overlap 1: no pair labeled by both
