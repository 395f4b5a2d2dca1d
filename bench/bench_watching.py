"""What watching a run in the browser costs: the same RLOO run (preset, seed, steps) from the command line and
launched from the RLOO tab with the page following it, and launched from the tab with the page closed at once (the
app's own cost, nobody watching), on the same workspace, alternating.

    .venv/bin/python bench/bench_watching.py [--rounds 3] [--steps 20] [--preset demo-cpu]

The app runs the whole time on one demo workspace; a headless Chromium at 1400x1000 opens the RLOO tab only for the
watched runs. Each run's time is its own: from its status.json `started` to `ended` (model load, steps, no
before/after). An uncounted warm-up pair first (the page's first load, the files' first read), then the two ways
alternate. Prints a JSON line per run and the median watched / CLI ratio (the target: at most 1.1).
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from browser import App, fill, launch_browser, reveal  # noqa: E402


def duration(ws: Path, rid: str) -> float:
    st = json.loads((ws / "runs" / rid / "status.json").read_text())
    assert st["status"] == "completed", st
    return float(st["ended"]) - float(st["started"])


def newest(ws: Path, before: set) -> str:
    (rid,) = {p.name for p in (ws / "runs").glob("rloo-*")} - before
    return rid


def from_cli(ws: Path, preset: str, steps: int) -> float:
    before = {p.name for p in (ws / "runs").glob("rloo-*")}
    subprocess.run([sys.executable, "-m", "rloo_studio", "train-rloo", "--workspace", str(ws), "--preset", preset,
                    "--set", f"max_steps={steps}", "--set", "eval_prompts=0", "--set", "seed=0"], cwd=ROOT,
                   check=True, capture_output=True)
    return duration(ws, newest(ws, before))


def watched(browser, url: str, ws: Path, preset: str, steps: int, follow: bool = True) -> float:
    """Launched from the RLOO tab, the page following it to its end (`follow`), or closed once the run started: the
    same run in the app with nobody watching."""
    from playwright.sync_api import expect

    before = {p.name for p in (ws / "runs").glob("rloo-*")}
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(url)
        page.get_by_role("tab", name="RLOO").click()
        page.locator("#rloo-preset input").click()
        page.get_by_role("option", name=preset, exact=True).click()
        fill(page, "rloo-max-steps", steps)
        for key in ("rloo-eval-prompts", "rloo-seed"):  # in folded groups: opened as a person would
            reveal(page, key)
            fill(page, key, 0)
        page.locator("#rloo-launch").click()
        check = page.locator("#rloo-check")
        expect(check).to_contain_text("Started run rloo-", timeout=120_000)
        rid = re.search(r"Started run (rloo-[\w-]+)", check.inner_text())[1]
        if follow:
            status = page.locator("#rloo-status")
            expect(status).to_contain_text(rid, timeout=120_000)  # the page follows the run it started
            expect(status).to_contain_text("completed", timeout=3_600_000)
    finally:
        page.close()
    while not follow and json.loads((ws / "runs" / rid / "status.json").read_text())["status"] in ("queued", "running"):
        time.sleep(0.5)
    assert newest(ws, before) == rid
    return duration(ws, rid)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--preset", default="demo-cpu")
    ap.add_argument("--ways", default="cli,watched,app", help="which of cli, watched, app to run (all three: the "
                    "medians and ratios)")
    a = ap.parse_args()
    from playwright.sync_api import sync_playwright

    from rloo_studio.label.demo_data import open_workspace

    ws = Path(tempfile.mkdtemp(prefix="bench-watch-")) / "ws"
    open_workspace(ws, demo=True)
    app = App(ws)
    app.wait_ready()
    ways = tuple(a.ways.split(","))
    times: dict[str, list[float]] = {w: [] for w in ways}
    try:
        with sync_playwright() as p:
            browser = launch_browser(p)
            for r in range(a.rounds + 1):  # round 0: the uncounted warm-up
                for way in ways[r % 3:] + ways[:r % 3]:  # each way first in turn
                    s = from_cli(ws, a.preset, a.steps) if way == "cli" else \
                        watched(browser, app.url, ws, a.preset, a.steps, follow=way == "watched")
                    print(json.dumps({"round": r, "way": way, "seconds": round(s, 1)}), flush=True)
                    if r:
                        times[way].append(s)
            browser.close()
    finally:
        app.stop()
    if set(ways) != {"cli", "watched", "app"}:
        print(json.dumps({w: round(statistics.median(t), 1) for w, t in times.items()}))
        return
    cli, seen, alone = (statistics.median(times[w]) for w in ("cli", "watched", "app"))
    print(json.dumps({"steps": a.steps, "preset": a.preset, "cli_median_s": round(cli, 1),
                      "watched_median_s": round(seen, 1), "app_unwatched_median_s": round(alone, 1),
                      "watched_over_cli": round(seen / cli, 3), "unwatched_over_cli": round(alone / cli, 3)}))


if __name__ == "__main__":
    main()
