"""Key press -> next pair latency of the Label tab (median and p95), at a given store size.

    .venv/bin/python bench/bench_label.py [--pairs 100000] [--annotators 5] [--labels 120] [--mode browser|core]

Builds a workspace of --pairs pairs (a quarter imported with labels, three quarters candidates,
40% of those already labeled by the annotators), then measures one annotator while the other
annotators label in the background, one label every --pace seconds each (through the core, in
this process):

  browser  the real app in Chromium, labeled from the keyboard; each key press is timed in the page,
           from its keydown event to the first animation frame after the next pair's status line is
           in the page (everything a person waits for: browser, Gradio, the callback, SQLite, the
           re-render), by the page's own clock; "driver" holds the same presses timed by Playwright,
           whose round trips (about 50-65 ms a command here) are in it. The next key comes READ_MS
           after the pair shows: a key pressed while the previous one is still being answered is
           dropped by the page (trigger_mode="once"), never applied to a pair that was not on screen.
  core     the callback's work without the browser: save the label, claim the next pair, count the
           progress line (labels.save_on_screen + next_pair + progress), as label_tab.label does.

Prints one JSON line: pairs, annotators, mode, labels timed, p50_ms, p95_ms, max_ms (in the page for
browser mode), load average at the start and end, and in browser mode "driver": the Playwright-timed stats.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from rloo_studio.label import store as L  # noqa: E402

READ_MS = 100  # browser mode: pause after a new pair shows, as a (very fast) person would; not timed
from rloo_studio.core.workspace import Workspace  # noqa: E402


def build(ws_dir: Path, n_pairs: int, annotators: int, labeled_share: float = 0.4, imported_share: float = 0.25,
          seed: int = 0) -> Workspace:
    """A workspace with n_pairs pairs, written straight into SQLite (an import of 100k rows takes minutes)."""
    rnd = random.Random(seed)
    ws = Workspace(ws_dir)
    now = time.time()
    n_imp = int(n_pairs * imported_share)
    with ws.transaction() as con:
        con.execute("INSERT INTO prompt_sets (name, source, created) VALUES ('bench', 'bench', ?)", (now,))
        con.execute("INSERT OR IGNORE INTO annotators (name, created) VALUES ('import', ?)", (now,))
        imp = con.execute("SELECT id FROM annotators WHERE name='import'").fetchone()[0]
        anns = [con.execute("INSERT INTO annotators (name, created) VALUES (?, ?)", (f"ann{k}", now)).lastrowid
                for k in range(annotators)]
        con.executemany("INSERT INTO prompts (id, set_id, text) VALUES (?, 1, ?)",
                        ((i + 1, f"Prompt {i}: add {i} and {i}.") for i in range(n_pairs)))
        con.executemany(
            "INSERT INTO responses (id, prompt_id, text, source, created) VALUES (?, ?, ?, 'bench', ?)",
            ((2 * i + 1 + k, i + 1, f"<think>\n{i}+{i}\n</think>\n\nThe answer is {2 * i + k}.", now)
             for i in range(n_pairs) for k in (0, 1)))
        con.executemany(
            "INSERT INTO pairs (id, prompt_id, response_a, response_b, source, created) VALUES (?, ?, ?, ?, ?, ?)",
            ((i + 1, i + 1, 2 * i + 1, 2 * i + 2, "imported" if i < n_imp else "candidates", now)
             for i in range(n_pairs)))
        con.executemany("INSERT INTO labels (pair_id, annotator_id, choice, created) VALUES (?, ?, 'a', ?)",
                        ((i + 1, imp, now) for i in range(n_imp)))
        cand = range(n_imp + 1, n_pairs + 1)
        done = list(cand)[: int(len(cand) * labeled_share)]
        rows = []
        for j, pid in enumerate(done):
            choice = rnd.choice(["a", "b"] * 4 + ["tie", "skip"])
            rows.append((pid, anns[j % annotators], choice, int(rnd.random() < 0.5), now - len(done) + j))
        con.executemany("INSERT INTO labels (pair_id, annotator_id, choice, a_shown_left, created) "
                        "VALUES (?, ?, ?, ?, ?)", rows)
        con.executemany("INSERT OR IGNORE INTO pair_order (pair_id, annotator_id, a_shown_left) VALUES (?, ?, ?)",
                        ((r[0], r[1], r[3]) for r in rows))
    return ws


def background(ws_dir: Path, names: list[str], pace: float, stop: threading.Event) -> threading.Thread:
    """The other annotators: each labels one pair every `pace` seconds, through the core, until stopped."""
    def run():
        ws = Workspace(ws_dir)
        rnd = random.Random(1)
        while not stop.is_set():
            for n in names:
                s = L.next_pair(ws, n, f"bg-{n}")
                if s is not None:
                    L.save_label(ws, s, n, f"bg-{n}", rnd.choice(["left", "right", "tie"]))
            stop.wait(pace)
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def importer(ws_dir: Path, rows: int) -> threading.Thread:
    """A user's import of `rows` preference rows, through the core, while the timed annotator labels: it
    starts once the timed page shows its first pair (or at once in core mode) and runs to its end."""
    from rloo_studio.label.importing import import_file

    path = ws_dir.parent / "import.jsonl"
    with open(path, "w") as f:
        for i in range(rows):
            f.write(json.dumps({"prompt": f"Imported {i}: what is {i}+1?", "chosen": f"{i + 1}",
                                "rejected": f"{i}"}) + "\n")

    def run():
        READY.wait(600)
        t0 = time.perf_counter()
        res = import_file(Workspace(ws_dir), path)
        print(json.dumps({"import_rows": res.rows, "import_s": round(time.perf_counter() - t0, 1)}), file=sys.stderr)
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


READY = threading.Event()  # set when timing starts


def time_core(ws: Workspace, name: str, n: int) -> list[float]:
    times, sess = [], "bench"
    shown = L.next_pair(ws, name, sess)
    READY.set()
    for i in range(n + 5):
        t0 = time.perf_counter()
        L.save_on_screen(ws, shown, str(shown.pair_id), name, sess, "left" if i % 2 else "right")
        shown = L.next_pair(ws, name, sess)
        L.progress(ws, name)
        if i >= 5:  # the first few warm up the caches
            times.append((time.perf_counter() - t0) * 1000)
    return times


# Installed in the page: each key press's time from the keydown event to the first animation frame
# after the next pair's status line is in the page (what a person waits for), measured by the page's
# own clock, so that the driver's round trips (Playwright: about 50-65 ms a command here) are not in it.
IN_PAGE = """() => {
  window.__lat = [];
  const box = document.querySelector('#lbl-status');
  const text = () => box.innerText || '';
  document.addEventListener('keydown', () => { window.__t0 = performance.now(); window.__before = text(); }, true);
  new MutationObserver(() => {
    const t0 = window.__t0, t = text();
    if (t0 == null || !/pair #\\d+/.test(t) || t === window.__before) return;
    window.__t0 = null;
    requestAnimationFrame(() => window.__lat.push(performance.now() - t0));
  }).observe(box, {subtree: true, childList: true, characterData: true});
}"""


def time_browser(ws_dir: Path, name: str, n: int) -> tuple[list[float], list[float]]:
    """(in-page key-to-frame latencies, the same presses timed by the driver) in ms."""
    from browser import App, launch_browser
    from playwright.sync_api import sync_playwright

    app = App(ws_dir)
    app.wait_ready()
    driver = []
    status = "(document.querySelector('#lbl-status')?.innerText || '')"
    try:
        with sync_playwright() as p:
            b = launch_browser(p)
            page = b.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(app.url)
            page.wait_for_function(f"() => {status}.includes('Enter your name')", timeout=180000)  # first load
            page.get_by_label("Your name").focus()
            page.keyboard.type(name)
            page.keyboard.press("Enter")
            page.wait_for_function(f"() => /pair #\\d+/.test({status})", timeout=180000)
            page.evaluate(IN_PAGE)
            READY.set()
            for i in range(n + 5):
                before = page.evaluate(f"() => {status}")
                t0 = time.perf_counter()
                page.keyboard.press("1" if i % 2 else "2")
                page.wait_for_function(f"b => {{ const t = {status}; return /pair #\\d+/.test(t) && t !== b; }}",
                                       arg=before, polling="raf", timeout=60000)
                if i >= 5:  # the first few warm up the page
                    driver.append((time.perf_counter() - t0) * 1000)
                page.wait_for_timeout(READ_MS)  # a person reads the new pair before the next key
            in_page = page.evaluate("() => window.__lat")[5:]
            b.close()
    finally:
        app.stop()
    return in_page, driver


def stats(times: list[float]) -> dict:
    times = sorted(times)
    return {"p50_ms": round(statistics.median(times), 1), "p95_ms": round(times[int(0.95 * (len(times) - 1))], 1),
            "max_ms": round(times[-1], 1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=10_000, help="pairs in the store (default %(default)s)")
    ap.add_argument("--annotators", type=int, default=5, help="annotators, the timed one included")
    ap.add_argument("--labels", type=int, default=120, help="key presses timed")
    ap.add_argument("--pace", type=float, default=2.0, help="seconds between two labels of a background annotator")
    ap.add_argument("--mode", choices=["browser", "core"], default="browser")
    ap.add_argument("--during-import", type=int, default=0, metavar="ROWS",
                    help="time the key presses while a ROWS-row import runs (through the core)")
    args = ap.parse_args()
    ws_dir = Path(tempfile.mkdtemp()) / "ws"
    ws = build(ws_dir, args.pairs, args.annotators)
    load0 = round(os.getloadavg()[0], 2)
    stop = threading.Event()
    bg = background(ws_dir, [f"ann{k}" for k in range(1, args.annotators)], args.pace, stop)
    if args.during_import:
        importer(ws_dir, args.during_import)
    try:
        if args.mode == "core":
            times, driver = time_core(ws, "ann0", args.labels), None
        else:
            times, driver = time_browser(ws_dir, "ann0", args.labels)
    finally:
        stop.set()
        bg.join(30)
    out = {"pairs": args.pairs, "annotators": args.annotators, "mode": args.mode, "labels": len(times),
           "during_import": args.during_import, **stats(times),
           "load_average": [load0, round(os.getloadavg()[0], 2)]}
    if driver:
        out["driver"] = stats(driver)  # the same presses timed by Playwright, its round trips included
    print(json.dumps(out))


if __name__ == "__main__":
    main()
