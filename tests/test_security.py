"""Security defaults of the running app: loopback, auth on every page and API, upload limits."""
import json
import urllib.error
import urllib.request

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
