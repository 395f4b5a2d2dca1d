"""Security defaults of the running app: loopback, auth on every page and API, upload limits."""
import json
import os
import stat
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from browser import App


def status(url, data=None, headers=None):
    req = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    a = App(tmp_path_factory.mktemp("sec") / "ws", "--max-upload-mb", "1", env={"RLOO_STUDIO_AUTH": "ann:pw-123"})
    a.wait_ready()
    yield a
    a.stop()


def test_env_auth_guards_api_and_login_works(guarded):
    for path in ("config", "gradio_api/info", "gradio_api/queue/status"):
        code, _ = status(guarded.url + path)
        assert code == 401, path
    code, _ = status(guarded.url + "login", data=b"username=ann&password=wrong",
                     headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert code in (400, 401)
    code, _ = status(guarded.url + "login", data=b"username=ann&password=pw-123",
                     headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert code == 200


def test_unauthenticated_upload_is_refused(guarded):
    body = b"--x\r\nContent-Disposition: form-data; name=\"files\"; filename=\"a.jsonl\"\r\n\r\n{}\r\n--x--\r\n"
    code, _ = status(guarded.url + "gradio_api/upload", data=body,
                     headers={"Content-Type": "multipart/form-data; boundary=x"})
    assert code == 401


def test_upload_size_limit(tmp_path):
    a = App(tmp_path / "ws", "--max-upload-mb", "1")
    try:
        a.wait_ready()
        big = b"x" * (2 * 2**20)
        body = (b"--x\r\nContent-Disposition: form-data; name=\"files\"; filename=\"big.jsonl\"\r\n\r\n" + big
                + b"\r\n--x--\r\n")
        code, text = status(a.url + "gradio_api/upload", data=body,
                            headers={"Content-Type": "multipart/form-data; boundary=x"})
        assert code == 413, (code, text[:200])
        small = b"--x\r\nContent-Disposition: form-data; name=\"files\"; filename=\"s.jsonl\"\r\n\r\n{}\r\n--x--\r\n"
        code, text = status(a.url + "gradio_api/upload", data=small,
                            headers={"Content-Type": "multipart/form-data; boundary=x"})
        assert code == 200 and json.loads(text)
    finally:
        a.stop()


def test_uploads_stay_in_the_workspace_and_only_exports_are_served(tmp_path):
    ws = tmp_path / "ws"
    a = App(ws)
    try:
        a.wait_ready()
        name = f"private-{os.getpid()}.jsonl"
        body = (f"--x\r\nContent-Disposition: form-data; name=\"files\"; filename=\"{name}\"\r\n\r\n"
                "{}\r\n--x--\r\n").encode()
        code, text = status(a.url + "gradio_api/upload", data=body,
                            headers={"Content-Type": "multipart/form-data; boundary=x"})
        assert code == 200
        (uploaded,) = json.loads(text)
        incoming = (ws / "incoming").resolve()
        assert incoming in Path(uploaded).resolve().parents  # not Gradio's machine-wide /tmp/gradio
        assert stat.S_IMODE(incoming.stat().st_mode) == 0o700  # other users of the machine cannot read it
        assert not list((Path(tempfile.gettempdir()) / "gradio").rglob(name))
        (ws / "exports" / "out.jsonl").write_text("{}\n")
        (ws / "runs" / "r1").mkdir(parents=True)
        (ws / "runs" / "r1" / "config.yaml").write_text("x: 1\n")
        (ws / "uploads" / "u").mkdir(parents=True)
        (ws / "uploads" / "u" / "mine.jsonl").write_text("{}\n")

        def served(path) -> int:
            return status(a.url + "gradio_api/file=" + urllib.parse.quote(str(path)))[0]

        assert served(ws / "exports" / "out.jsonl") == 200
        for path in (ws / "studio.db", ws / "studio.db-wal", ws / "runs" / "r1" / "config.yaml",
                     ws / "uploads" / "u" / "mine.jsonl", "/etc/passwd"):
            assert served(path) == 403, path
    finally:
        a.stop()
