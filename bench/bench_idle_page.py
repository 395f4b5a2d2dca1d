"""What a page left open on a tab costs while nothing runs (or, with --run, while it follows a run): CPU seconds of
Chromium and of the app.

    .venv/bin/python bench/bench_idle_page.py [--seconds 10] [--rounds 3] [--compare OTHER_TREE]
                                              [--run | --loads {new-context,same-context,closed-context}]

Starts the app (this tree's, and with --compare another checkout's, each with its own workspace: a copy of
one demo workspace) and one headless Chromium per tree at 1400x1000, opens each tab in turn, waits until its
first ticks are drawn, then counts the CPU time (user + system) of Chromium's processes and of the app's over
--seconds. The trees and tabs alternate within each round after an uncounted warm-up round. Prints one JSON
line per tree and tab: the median CPU seconds per 10 s of each, and with --compare the ratio to the other tree.
--run: each workspace has an RLOO run going the whole time (`train-rloo` from the CLI, the demo preset with no
step limit to speak of and no evaluation, at the lowest priority; stopped at the end), which the RLOO tab
follows; its CPU is not counted. --loads: instead of tabs, the app opened in a new browser context (its own cache
and storage), in a new tab of the context that has it open, or in a context whose earlier tabs of it were closed
(as when one test's page closes before the next opens), left until 4 s after the Label tab asks for a name, and
closed (CPU seconds per load, not per 10 s).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from browser import CHROMIUM, CHROMIUM_ARGS, free_port  # noqa: E402

TABS = ["Label", "Reward model", "Inspect", "RLOO", "Runs"]


class Tree:
    """One checkout's app on its own copy of the workspace, and its own Chromium."""

    def __init__(self, tree: Path, ws: Path, playwright, run: bool = False):
        self.name, port = str(tree), free_port()
        self.job = subprocess.Popen(  # a run of another process: the app follows it as it would its own
            [sys.executable, "-m", "rloo_studio", "train-rloo", "--workspace", str(ws), "--set", "max_steps=100000",
             "--set", "eval_prompts=0"], cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=lambda: os.nice(19)) if run else None  # niced: the page gets the CPU it asks for
        self.url = f"http://127.0.0.1:{port}/"
        self.log = open(ws.parent / f"app-{port}.log", "w")
        self.app = subprocess.Popen([sys.executable, "app.py", "--workspace", str(ws), "--port", str(port)],
                                    cwd=tree, stdout=self.log, stderr=subprocess.STDOUT)
        before = {p.pid for p in psutil.Process().children(recursive=True)}
        self.browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        self.chromium = [p for p in psutil.Process().children(recursive=True)
                         if p.pid not in before and "chrom" in p.name().lower()]
        self.context = self.browser.new_context(viewport={"width": 1400, "height": 1000})
        self.page = self.context.new_page()
        self.closed = None  # --loads closed-context: a context whose tabs of the app are each closed before the next
        self._wait_ready()
        self.page.goto(self.url)
        self.page.get_by_role("tab", name="Runs").wait_for(timeout=180_000)

    def _wait_ready(self, timeout: float = 300) -> None:
        import urllib.request

        t0 = time.time()
        while time.time() - t0 < timeout:
            if self.app.poll() is not None:
                raise RuntimeError(Path(self.log.name).read_text()[-3000:])
            try:
                with urllib.request.urlopen(self.url, timeout=2):
                    return
            except OSError:
                time.sleep(0.5)
        raise TimeoutError(self.url)

    def cpu(self) -> tuple[float, float]:
        """(CPU seconds of Chromium's processes, of the app's) so far; the browser's children come and go."""
        procs = {p.pid: p for p in self.chromium}
        for p in self.chromium:
            try:
                procs.update({c.pid: c for c in p.children(recursive=True)})
            except psutil.NoSuchProcess:
                pass
        return sum(_cpu(p) for p in procs.values()), _cpu(psutil.Process(self.app.pid))

    def measure(self, tab: str, seconds: float) -> tuple[float, float]:
        """CPU seconds per 10 s of (Chromium, the app) with the page open on `tab`."""
        self.page.get_by_role("tab", name=tab).click()
        self.page.wait_for_timeout(4000)  # the tab's fresh tick and first timer ticks drawn
        (b0, a0), t0 = self.cpu(), time.monotonic()
        time.sleep(seconds)
        (b1, a1), dt = self.cpu(), time.monotonic() - t0
        return (b1 - b0) * 10 / dt, (a1 - a0) * 10 / dt

    def load(self, where: str, settle_s: float = 4.0) -> tuple[float, float]:
        """CPU seconds of (Chromium, the app) for opening the app, until `settle_s` after the Label tab asks for a
        name: in a new browser context (its own cache and storage), a new tab of the context that has it open, or
        a context whose earlier tabs of it were closed."""
        (b0, a0) = self.cpu()
        if where == "closed-context" and self.closed is None:
            self.closed = self.browser.new_context(viewport={"width": 1400, "height": 1000})
        context = {"same-context": self.context, "closed-context": self.closed}.get(where) or \
            self.browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        page.goto(self.url)
        page.locator("#lbl-status").get_by_text("Enter your name").wait_for(timeout=120_000)
        page.wait_for_timeout(settle_s * 1000)
        (b1, a1) = self.cpu()  # before closing: a closed tab's renderer process ends, and its CPU time with it
        page.close()
        if where == "new-context":
            context.close()
        return b1 - b0, a1 - a0

    def close(self) -> None:
        if self.job:
            self.job.terminate()
            self.job.wait(60)
        self.browser.close()
        self.app.terminate()
        self.app.wait(30)
        self.log.close()


def _cpu(p: psutil.Process) -> float:
    try:
        t = p.cpu_times()
        return t.user + t.system  # a process's children are counted as processes of their own
    except psutil.NoSuchProcess:
        return 0.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=10.0, help="seconds counted per tab and round")
    ap.add_argument("--rounds", type=int, default=3, help="counted rounds (after one uncounted warm-up)")
    ap.add_argument("--compare", type=Path, help="another checkout of the studio (with its own .venv or this one)")
    ap.add_argument("--tabs", default=",".join(TABS), help="comma-separated tab names")
    ap.add_argument("--run", action="store_true", help="an RLOO run goes on in each workspace meanwhile")
    ap.add_argument("--loads", choices=["new-context", "same-context", "closed-context"],
                    help="measure opening the app (in a new browser context, a new tab of the open one, or a context "
                         "whose earlier tabs were closed) instead of tabs")
    args = ap.parse_args()
    tabs = args.tabs.split(",")
    from playwright.sync_api import sync_playwright

    from rloo_studio.label.demo_data import open_workspace

    tmp = Path(tempfile.mkdtemp())
    open_workspace(tmp / "seed", demo=True)
    trees = [ROOT] + ([args.compare.resolve()] if args.compare else [])
    tabs = [f"(opening the app: {args.loads})"] if args.loads else tabs
    figures = {(str(t), tab): ([], []) for t in trees for tab in tabs}
    with sync_playwright() as p:
        running = []
        for i, tree in enumerate(trees):
            shutil.copytree(tmp / "seed", tmp / f"ws{i}")
            running.append(Tree(tree, tmp / f"ws{i}", p, args.run))
        try:
            for r in range(args.rounds + 1):
                for tab in tabs:
                    for t in (running if r % 2 == 0 else running[::-1]):
                        browser_s, app_s = (t.load(args.loads) if args.loads
                                            else t.measure(tab, args.seconds))
                        if r:  # round 0 warms up
                            figures[(t.name, tab)][0].append(browser_s)
                            figures[(t.name, tab)][1].append(app_s)
        finally:
            for t in running:
                t.close()
    for (tree, tab), (browser_s, app_s) in figures.items():
        unit = "" if args.loads else "_per_10s"
        out = {"tree": tree, "tab": tab, f"chromium_cpu_s{unit}": round(statistics.median(browser_s), 2),
               f"app_cpu_s{unit}": round(statistics.median(app_s), 2), "rounds": len(browser_s)}
        if args.compare and tree == str(ROOT):
            other = figures[(str(args.compare.resolve()), tab)]
            out["ratio_chromium"] = round(out[f"chromium_cpu_s{unit}"] / max(statistics.median(other[0]), 1e-9), 2)
            out["ratio_app"] = round(out[f"app_cpu_s{unit}"] / max(statistics.median(other[1]), 1e-9), 2)
        print(json.dumps(out))


if __name__ == "__main__":
    main()
