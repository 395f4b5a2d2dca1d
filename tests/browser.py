"""Start the real app in a subprocess and drive it with Debian's Chromium through Playwright."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import TimeoutError as PlaywrightTimeout

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]
ARTIFACTS = ROOT / "test-artifacts"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# What this process started, printed at the end of a test run (tests/conftest.py): the counts a faster suite controls.
STARTED = {"app": 0, "chromium": 0}


class App:
    def __init__(self, workspace: Path, *extra: str, env: dict | None = None):
        STARTED["app"] += 1
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.log = open(workspace.parent / f"app-{self.port}.log", "w")
        self.proc = subprocess.Popen(
            [sys.executable, str(ROOT / "app.py"), "--workspace", str(workspace), "--port", str(self.port), *extra],
            cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})},
        )

    def wait_ready(self, timeout: float = 120) -> float:
        t0 = time.time()
        while time.time() - t0 < timeout:
            if self.proc.poll() is not None:
                raise RuntimeError(f"app exited: {Path(self.log.name).read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(self.url, timeout=2) as r:
                    if r.status == 200:
                        return time.time() - t0
            except Exception:
                time.sleep(0.3)
        raise TimeoutError(Path(self.log.name).read_text()[-3000:])

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


def launch_browser(p):
    STARTED["chromium"] += 1
    return p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)


class SharedChromium:
    """One headless Chromium for a whole test run, launched on first use (again only if it crashed).
    Playwright's sync API serves the thread that started it: pages of this browser belong to the main thread."""

    def __init__(self):
        self._playwright = self._browser = None

    def get(self):
        if self._browser is None or not self._browser.is_connected():
            if self._playwright is None:
                from playwright.sync_api import sync_playwright

                self._playwright = sync_playwright().start()
            self._browser = launch_browser(self._playwright)
        return self._browser

    def close(self) -> None:
        if self._browser is not None and self._browser.is_connected():
            self._browser.close()
        if self._playwright is not None:
            self._playwright.stop()
        self._playwright = self._browser = None


SHARED: SharedChromium | None = None  # set for the test run by tests/conftest.py


def screenshot(page, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


@contextmanager
def running_app(ws_dir: Path, *extra: str, seed: bool = True, timeout: float = 600, env: dict | None = None):
    """The real app on a (by default demo-seeded) workspace, stopped afterwards; `.ws_dir` is set."""
    if seed:
        from rloo_studio.label.demo_data import open_workspace

        open_workspace(ws_dir, demo=True)
    a = App(ws_dir, *extra, env=env)
    a.ws_dir = ws_dir
    try:
        a.wait_ready(timeout)
        yield a
    finally:
        a.stop()


def fill(page, elem_id: str, value) -> None:
    """Type into a form field by its elem_id and leave it, as a person would.

    A field inside an accordion that has just opened can be re-mounted from the
    server's config right after it is typed into, losing the text; so type, leave
    the field, and type again until the value stays.
    """
    reveal(page, elem_id)
    box = page.locator(f"#{elem_id} input, #{elem_id} textarea").first
    for _ in range(5):
        box.fill(str(value))
        box.press("Tab")
        page.wait_for_timeout(300)
        if box.input_value() == str(value) or _listed_as(box.input_value(), value):
            return
    raise AssertionError(f"#{elem_id} would not keep the value {value!r}")


def folded_in(elem_id: str) -> str | None:
    """The title of the folded section of the Reward model, RLOO or Process reward tab that holds a setting's field,
    by the tab's layout (None: the field is in view, or is no setting of those tabs)."""
    from rloo_studio.ui import prm_tab, reward_tab, rloo_tab
    from rloo_studio.ui.fields import elem_id as field_id

    kind = elem_id.split("-")[0]
    layouts = ((reward_tab.KIND, reward_tab.LAYOUT), (rloo_tab.KIND, rloo_tab.LAYOUT),
               (prm_tab.KIND, prm_tab.PRM_LAYOUT))
    for tab_kind, layout in layouts:
        for title, rows, _ in layout if tab_kind == kind else ():
            if title and any(field_id(kind, key) == elem_id for keys in rows for key in keys):
                return title
    return None


def reveal(page, elem_id: str) -> None:
    """Open the folded section that holds a field, as a person would, when the field is not on the page yet
    (Gradio draws an accordion's contents when it is first opened)."""
    title = folded_in(elem_id)
    field = page.locator(f"#{elem_id}").first
    if not title:
        return
    for _ in range(3):
        try:  # a section clicked open a moment ago may still be drawing: give it time before clicking again
            field.wait_for(state="visible", timeout=3_000 if _ == 0 else 30_000)
            return
        except PlaywrightTimeout:
            if _ < 2:
                page.get_by_role("button", name=title).first.click()
    raise AssertionError(f"#{elem_id} stayed hidden in the section {title!r}")


def unfold(page, kind: str) -> None:
    """Open every folded section of the Reward model ('reward') or RLOO ('rloo') tab's settings, so that a check
    of the page sees every field."""
    from rloo_studio.ui import reward_tab, rloo_tab

    tab = {"reward": reward_tab, "rloo": rloo_tab}[kind]
    for title, rows, _ in tab.LAYOUT:
        if title:
            page.get_by_role("button", name=title).first.click()
    page.get_by_role("button", name="What the settings above do").first.click()
    page.wait_for_timeout(500)


def in_view(page, *elem_ids: str) -> dict:
    """The elements whose box is not wholly inside the 1400x1000 viewport with the page scrolled to the top, as
    {elem_id: box} (empty: all in view)."""
    page.evaluate("window.scrollTo(0, 0)")
    page.wait_for_timeout(300)
    size = page.viewport_size
    out = {}
    for i in elem_ids:
        box = page.locator(f"#{i}").first.bounding_box()
        if box is None or box["x"] < 0 or box["y"] < 0 or box["x"] + box["width"] > size["width"] \
                or box["y"] + box["height"] > size["height"]:
            out[i] = box
    return out


def _listed_as(shown: str, value) -> bool:
    """A model dropdown shows a listed model by its label ('demo model · 4.1 MB · bundled',
    'parent/name · 12 MB · folder'), not by the path typed into it."""
    from rloo_studio.core.model_choices import bundled_choices

    path = Path(str(value))
    for c in bundled_choices():
        if path.resolve() == Path(c.value).resolve():
            return shown == c.label
    return path.name in shown.split(" · ")[0] and shown.split(" · ")[-1] in ("folder", "HF cache", "ships its own code")


@contextmanager
def open_page(url: str, height: int = 1000):
    """The app's page in a fresh browser context (its own cookies and localStorage), closed on the way out:
    a context of the test run's one Chromium (tests/conftest.py), or of a Chromium of its own outside pytest."""
    if SHARED is None:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            b = launch_browser(p)
            try:
                yield _goto(b.new_page(viewport={"width": 1400, "height": height}), url)
            finally:
                b.close()
        return
    context = SHARED.get().new_context(viewport={"width": 1400, "height": height})
    try:
        yield _goto(context.new_page(), url)
    finally:
        context.close()


def _goto(page, url: str):
    page.goto(url)
    return page
