"""A script the page runs before Gradio's own: the elapsed-time counters of Gradio's status trackers count on a timer
of 10 a second instead of on animation frames.

Gradio 6.31's status tracker shows how long an event has been pending with a requestAnimationFrame loop that stops
only when the tracker sees the status change. A tracker removed while still pending never sees it: the page's own
loading indicator, taken away the moment the app is loaded, leaves such a loop running on every page for as long
as it stays open. Each frame it asks for makes Chromium produce one, 60 a second: a page idle on the Label tab cost
Chromium 1.04 CPU-s per 10 s, and 0.12 with this script (docs/BENCHMARKS.md, An idle page). A counter that shows
tenths of a second needs no more than 10 updates a second, and a timer that nothing draws costs next to nothing.

Gradio's module keeps its own reference to requestAnimationFrame as it loads, which a script in `head` (added by the
page after it loads) comes too late to change; so ActFirst puts this one at the top of the page's <head>. A Gradio
whose status tracker is built into another file goes on as before: the script only recognises its file.
"""
from __future__ import annotations

SCRIPT = b"""<script>
(() => {
  const frame = window.requestAnimationFrame.bind(window);
  window.requestAnimationFrame = cb => (new Error().stack || '').includes('/statustracker-')
    ? setTimeout(() => cb(performance.now()), 100) : frame(cb);
})();
</script>"""


class ActFirst:
    """ASGI middleware: SCRIPT at the top of the <head> of the app's page (GET /, served whole as HTML)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("method") != "GET" or scope.get("path") != "/":
            return await self.app(scope, receive, send)
        start, body = None, []

        async def send_with_script(message):
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
                return
            if message["type"] != "http.response.body":
                return await send(message)
            body.append(message.get("body", b""))
            if message.get("more_body"):
                return
            page, headers = b"".join(body), list(start["headers"])
            fields = {k.lower(): v for k, v in headers}
            if fields.get(b"content-type", b"").startswith(b"text/html") and b"content-encoding" not in fields \
                    and b"<head>" in page:
                page = page.replace(b"<head>", b"<head>" + SCRIPT, 1)
                headers = [(k, str(len(page)).encode() if k.lower() == b"content-length" else v) for k, v in headers]
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": page})

        await self.app(scope, receive, send_with_script)
