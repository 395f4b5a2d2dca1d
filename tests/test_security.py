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


def test_upload_size_limit(upload_limit_app):
    a = upload_limit_app
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


def test_uploads_stay_in_the_workspace_and_only_exports_are_served(demo_app):
    a, ws = demo_app, demo_app.ws_dir
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

    # incoming/ is Gradio's temp folder: files there that Gradio did not put there itself
    (incoming / "placed.jsonl").write_text("{}\n")
    (incoming / "sub").mkdir()
    (incoming / "sub" / "placed.jsonl").write_text("{}\n")
    (incoming / ("A" * 64)).mkdir()
    (incoming / ("A" * 64) / "placed.jsonl").write_text("{}\n")
    (Path(uploaded).parent / "deeper").mkdir()
    (Path(uploaded).parent / "deeper" / "placed.jsonl").write_text("{}\n")

    def served(path, route="gradio_api/file=") -> int:
        return status(a.url + route + urllib.parse.quote(str(path)))[0]

    assert served(ws / "exports" / "out.jsonl") == 200
    # An upload not yet imported is served to whoever has its URL (and the password, with --auth):
    # Gradio serves its temp folder and will not pass a file from a blocked folder to the import, and
    # the download link of an export points at Gradio's copy there. Its folder is the SHA-256 of
    # Gradio's seed and the file's bytes: a URL that only someone holding the file can write.
    assert served(uploaded) == 200
    for path in (ws / "studio.db", ws / "studio.db-wal", ws / "runs" / "r1" / "config.yaml",
                 ws / "uploads" / "u" / "mine.jsonl", "/etc/passwd",
                 incoming / "placed.jsonl", incoming / "sub" / "placed.jsonl", incoming / ("A" * 64) / "placed.jsonl",
                 Path(uploaded).parent / "deeper" / "placed.jsonl", Path(uploaded).parent / ".." / "placed.jsonl",
                 incoming / "missing.jsonl", incoming):
        assert served(path) == 403, path
    for route in ("gradio_api/file/", "gradio_api/file=/", "file=", "file/"):  # the other spellings
        assert served(incoming / "placed.jsonl", route) in (403, 404), route
    assert served(str(incoming / "placed.jsonl").replace("/", "//"), "gradio_api/file=") == 403


def test_only_files_gradio_made_are_served_from_incoming(tmp_path):
    from rloo_studio.ui.uploads import served_from_incoming

    inc, h = tmp_path / "incoming", "0123456789abcdef" * 4
    assert served_from_incoming(inc, str(inc / h / "pairs.jsonl"))  # an upload or an export's copy
    assert served_from_incoming(inc, str(tmp_path / "exports" / "pairs.jsonl"))  # outside: Gradio's rules decide
    for bad in (inc / "pairs.jsonl", inc / h, inc / h / "x" / "pairs.jsonl", inc / h.upper() / "pairs.jsonl",
                inc / h[:-1] / "pairs.jsonl", inc / "deep_links" / "x" / "a.json", inc / h / ".." / "pairs.jsonl"):
        assert not served_from_incoming(inc, str(bad)), bad
    assert not served_from_incoming(inc, str(inc / "a\x00b"))
