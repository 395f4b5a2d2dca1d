"""Generation by a vLLM server (rloo/vllm_server.py): what cannot run on these machines (no GPU, and vLLM cannot share
the app's environment) is refused in words before a run exists; the arguments TRL gets are TRL's own. The HTTP server
below only answers the two questions Launch asks (/health and /v1/models): it is no vLLM, and nothing trains on it."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from browser import free_port

from rloo_studio.core.errors import ConfigError
from rloo_studio.rloo.config import RlooJobConfig, trl_args
from rloo_studio.rloo.vllm_server import check


@pytest.fixture
def answering():
    """A server at a free port that says it serves `model` (set by the test)."""
    state = {"model": "Qwen/Qwen3-0.6B"}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            body = b"" if self.path == "/health" else json.dumps({"data": [{"id": state["model"]}]}).encode()
            self.send_response(200 if self.path in ("/health", "/v1/models") else 404)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield state, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_trl_gets_server_mode_arguments_it_takes(tmp_path):
    from trl import RLOOConfig

    cfg = RlooJobConfig(use_vllm=True, vllm_server_base_url="http://10.0.0.5:8001/", vllm_server_timeout=60)
    kw = trl_args(cfg)
    assert (kw["use_vllm"], kw["vllm_mode"], kw["vllm_server_base_url"], kw["vllm_server_timeout"]) == \
        (True, "server", "http://10.0.0.5:8001", 60.0)
    args = RLOOConfig(**kw, output_dir=str(tmp_path), use_cpu=True, report_to=[])
    assert (args.use_vllm, args.vllm_mode, args.vllm_server_base_url) == (True, "server", "http://10.0.0.5:8001")
    assert "vllm_mode" not in trl_args(RlooJobConfig()) and trl_args(RlooJobConfig())["use_vllm"] is False
    with pytest.raises(ConfigError, match="must be an http:// or https:// address"):
        RlooJobConfig(use_vllm=True, vllm_server_base_url="localhost:8000").validate()


def test_a_url_that_does_not_answer_is_said_with_what_to_do():
    cfg = RlooJobConfig(use_vllm=True, vllm_server_base_url=f"http://127.0.0.1:{free_port()}")
    with pytest.raises(ConfigError, match="no vLLM server answers at http://127.0.0.1:.*make vllm-server"):
        check(cfg)


def test_a_server_of_another_model_is_refused_then_this_environment_is(answering):
    state, url = answering
    cfg = RlooJobConfig(use_vllm=True, vllm_server_base_url=url, model="Qwen/Qwen3-4B-Thinking-2507")
    with pytest.raises(ConfigError, match="serves Qwen/Qwen3-0.6B, not this run's model Qwen/Qwen3-4B-Thinking-2507"):
        check(cfg)
    state["model"] = "/models/hub/Qwen/Qwen3-4B-Thinking-2507"  # a server given the model's folder
    with pytest.raises(ConfigError,
                       match="this environment has no vllm package.*\\.venv-vllm/bin/python -m rloo_studio"):
        check(cfg)


def test_the_cli_refuses_before_a_run_exists(answering, tmp_path, capsys):
    from rloo_studio.cli import main

    state, url = answering
    ws = tmp_path / "ws"
    assert main(["train-rloo", "--workspace", str(ws), "--demo", "--set", "use_vllm=true",
                 "--set", f"vllm_server_base_url={url}"]) == 2
    err = capsys.readouterr().err
    assert "serves Qwen/Qwen3-0.6B, not this run's model" in err and "Traceback" not in err
    assert not list((ws / "runs").iterdir())
