"""How often a page loses a user's action to a late answer, in headless Chromium against a demo app of its own.

    .venv/bin/python bench/race_probe.py raw  [--n 30]   # Label: type a name, Enter, then Raw text at once
    .venv/bin/python bench/race_probe.py stop [--n 15]   # RLOO: launch a demo run, Stop it, follow it to the end

raw:  each load in a fresh context; after the pair shows, Raw text is checked; a loss is a page whose raw texts
      are not drawn within 5 s (then 30 s more are given, to tell a slow answer from a lost one).
stop: each try launches a 500-step demo run, stops it after 1.5-3.5 s; a loss is a page that does not show the
      run stopped, Stop greyed out and Resume pressable within 60 s.
Races show on a loaded host: docs/RELIABILITY.md ran three `yes > /dev/null` beside it on 2 cores. Prints one line a
try and a last line "lost K of N".
"""
from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from browser import fill, launch_browser, running_app  # noqa: E402
from playwright.sync_api import expect, sync_playwright  # noqa: E402


def raw_try(page, i: int) -> str:
    expect(page.locator("#lbl-status")).to_contain_text("Enter your name", timeout=60000)
    page.get_by_label("Your name").fill(f"probe-{i}")
    page.get_by_label("Your name").press("Enter")
    expect(page.locator("#lbl-status")).to_contain_text("pair #", timeout=60000)
    t = time.time()
    page.get_by_label("Raw text").check()
    raw = page.locator("#lbl-left-text pre.raw-response")
    try:
        expect(raw).to_be_visible(timeout=5000)
        return f"ok in {time.time() - t:.2f} s"
    except AssertionError:
        try:
            expect(raw).to_be_visible(timeout=30000)
            return f"slow: drawn after {time.time() - t:.1f} s"
        except AssertionError:
            return "LOST: Raw text checked, the texts never drawn raw"


def stop_try(page, i: int) -> str:
    page.get_by_role("tab", name="RLOO").click()
    expect(page.locator("#rloo-status")).to_contain_text(re.compile("RLOO run|Run rloo"), timeout=60000)
    page.locator("#rloo-preset input").click()
    page.get_by_role("option", name="demo-cpu", exact=True).click()
    expect(page.locator("#rloo-model input")).to_have_value(re.compile(r"^demo model · "), timeout=60000)
    for field, value in (("num-generations", 2), ("per-device-train-batch-size", 4), ("max-completion-length", 2),
                         ("max-steps", 500), ("eval-prompts", 0)):
        fill(page, f"rloo-{field}", value)
    page.locator("#rloo-launch").click()
    expect(page.locator("#rloo-status")).to_contain_text("last: loss", timeout=60000)
    page.wait_for_timeout(1500 + 500 * (i % 5))
    page.locator("#rloo-stop").click()
    t = time.time()
    for what, check in (("the run stopped", lambda: expect(page.locator("#rloo-status")).to_contain_text("stopped")),
                        ("Stop greyed out", lambda: expect(page.locator("#rloo-stop")).to_be_disabled()),
                        ("Resume pressable", lambda: expect(page.locator("#rloo-resume")).to_be_enabled())):
        try:
            check()
        except AssertionError:
            return f"LOST: {what} not shown within 60 s"
    return f"ok in {time.time() - t:.1f} s"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["raw", "stop"])
    ap.add_argument("--n", type=int, default=30)
    args = ap.parse_args()
    attempt = raw_try if args.case == "raw" else stop_try
    lost = 0
    with running_app(Path(tempfile.mkdtemp()) / "ws") as app, sync_playwright() as p:
        expect.set_options(timeout=60000)
        browser = launch_browser(p)
        for i in range(args.n):
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            page = context.new_page()
            page.goto(app.url)
            result = attempt(page, i)
            lost += result.startswith("LOST")
            print(i, result, flush=True)
            context.close()
    print(f"lost {lost} of {args.n}")


if __name__ == "__main__":
    main()
