"""What watching a run in the browser costs: the same RLOO run (preset, seed, steps) from the command line and
launched from the RLOO tab with the page following it, on the same workspace, alternating.

    .venv/bin/python bench/bench_watching.py [--rounds 3] [--steps 20] [--preset demo-cpu]

The app runs the whole time on one demo workspace; a headless Chromium at 1400x1000 opens the RLOO tab only for the
watched runs. Each run's time is its own: from its status.json `started` to `ended` (model load, steps, no
before/after). An uncounted warm-up pair first (the page's first load, the files' first read), then the two ways
alternate. Prints a JSON line per run and the median watched / CLI ratio (the target: at most 1.1).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
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


def watched(browser, url: str, ws: Path, preset: str, steps: int) -> float:
    """Launched from the RLOO tab, the page following it to its end."""
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
        expect(page.locator("#rloo-status")).to_contain_text("completed", timeout=3_600_000)
    finally:
        page.close()
    return duration(ws, newest(ws, before))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--preset", default="demo-cpu")
    a = ap.parse_args()
    from playwright.sync_api import sync_playwright

    from rloo_studio.label.demo_data import open_workspace

    ws = Path(tempfile.mkdtemp(prefix="bench-watch-")) / "ws"
    open_workspace(ws, demo=True)
    app = App(ws)
    app.wait_ready()
    times: dict[str, list[float]] = {"cli": [], "watched": []}
    try:
        with sync_playwright() as p:
            browser = launch_browser(p)
            for r in range(a.rounds + 1):  # round 0: the uncounted warm-up
                for way in ("cli", "watched") if r % 2 == 0 else ("watched", "cli"):  # each way first in turn
                    s = from_cli(ws, a.preset, a.steps) if way == "cli" else \
                        watched(browser, app.url, ws, a.preset, a.steps)
                    print(json.dumps({"round": r, "way": way, "seconds": round(s, 1)}), flush=True)
                    if r:
                        times[way].append(s)
            browser.close()
    finally:
        app.stop()
    cli, seen = statistics.median(times["cli"]), statistics.median(times["watched"])
    print(json.dumps({"steps": a.steps, "preset": a.preset, "cli_median_s": round(cli, 1),
                      "watched_median_s": round(seen, 1), "watched_over_cli": round(seen / cli, 3)}))


if __name__ == "__main__":
    main()
