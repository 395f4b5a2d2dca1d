"""Click-to-next-pair latency of the Label tab in Chromium (p50 / p95 over N labels).

    .venv/bin/python bench/bench_label.py [--labels 120]

Starts the real app on a fresh demo workspace (with 2,000 extra candidate pairs imported, so the
queue does not run out), labels from the keyboard, and times each key press until the next
pair's id is on the page.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from playwright.sync_api import sync_playwright  # noqa: E402

from browser import App, launch_browser  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--labels", type=int, default=120)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    ws_dir = tmp / "ws"
    from rloo_studio.importing import import_file
    from rloo_studio.workspace import Workspace

    ws = Workspace(ws_dir, seed_demo=True)
    cand = tmp / "cand.jsonl"
    cand.write_text("".join(json.dumps({"prompt": f"p{i}", "responses": [f"<think>a{i}</think>x", f"y{i}"]}) + "\n"
                            for i in range(2000)))
    import_file(ws, cand)
    app = App(ws_dir)
    app.wait_ready()
    times = []
    try:
        with sync_playwright() as p:
            b = launch_browser(p)
            page = b.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(app.url)
            page.wait_for_function("() => (document.querySelector('#lbl-status')?.innerText || '').includes('Enter your name')")
            page.get_by_label("Your name").focus()
            page.keyboard.type("bench")
            page.keyboard.press("Enter")
            page.wait_for_function("() => /pair #\\d+/.test((document.querySelector('#lbl-status')?.innerText || ''))")
            for i in range(args.labels + 5):
                before = page.evaluate("() => (document.querySelector('#lbl-status')?.innerText || '')")
                t0 = time.perf_counter()
                page.keyboard.press("1" if i % 2 else "2")
                page.wait_for_function(
                    "b => { const t = (document.querySelector('#lbl-status')?.innerText || '');"
                    " return /pair #\\d+/.test(t) && t !== b; }", arg=before, polling="raf", timeout=20000)
                if i >= 5:  # the first few warm up the page
                    times.append((time.perf_counter() - t0) * 1000)
            b.close()
    finally:
        app.stop()
    times.sort()
    p50 = statistics.median(times)
    p95 = times[int(0.95 * (len(times) - 1))]
    print(json.dumps({"labels": len(times), "p50_ms": round(p50, 1), "p95_ms": round(p95, 1),
                      "max_ms": round(times[-1], 1), "target_p95_ms": 150}))


if __name__ == "__main__":
    main()
