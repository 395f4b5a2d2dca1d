"""The page's first script (ui/page_start.py): put at the top of the app page's <head>, and nowhere else."""
import asyncio
from concurrent.futures import ThreadPoolExecutor

import httpx
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Route

from rloo_studio.ui.page_start import SCRIPT, ActFirst

PAGE = "<!doctype html><html><head><meta charset='utf-8'><script type='module' src='gradio.js'></script></head></html>"


class client:
    """Requests to a Starlette app behind ActFirst, served in this process."""

    routes = [Route("/", lambda r: HTMLResponse(PAGE)), Route("/config", lambda r: JSONResponse({"head": "<head>"})),
              Route("/other", lambda r: HTMLResponse(PAGE))]

    def __init__(self):
        self.app = Starlette(routes=self.routes, middleware=[Middleware(ActFirst)])

    def request(self, method: str, path: str) -> httpx.Response:
        async def go():
            async with httpx.AsyncClient(transport=httpx.ASGITransport(self.app), base_url="http://app") as c:
                return await c.request(method, path)
        with ThreadPoolExecutor(1) as pool:  # a loop of its own: Playwright's may be running in this thread
            return pool.submit(asyncio.run, go()).result()

    def get(self, path: str) -> httpx.Response:
        return self.request("GET", path)

    def post(self, path: str) -> httpx.Response:
        return self.request("POST", path)


def test_the_script_comes_first_in_the_page_head():
    r = client().get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert r.text == PAGE.replace("<head>", "<head>" + SCRIPT.decode(), 1)
    assert int(r.headers["content-length"]) == len(r.content)
    assert r.text.index("requestAnimationFrame") < r.text.index("gradio.js")


def test_other_answers_are_left_as_they_are():
    c = client()
    assert c.get("/config").json() == {"head": "<head>"}
    assert c.get("/other").text == PAGE
    assert c.post("/").status_code == 405
