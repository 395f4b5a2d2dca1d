"""Generation by a vLLM server (TRL's server mode): the checks Launch makes before a run exists.

TRL 1.15's RLOOTrainer with use_vllm and vllm_mode="server" sends each generation batch to a vLLM server and, after
each step, the policy's new weights (over NCCL). vLLM pins other torch and pillow versions than the app's gradio
(docs/VLLM.md), so the server runs in an environment of its own, and so must the run: TRL's client imports vllm to
send the weights. What can be known before loading a model is checked here, each in words: the server answers, it
serves this run's model, and this process can talk to it.
"""
from __future__ import annotations

import importlib.util
import json
import urllib.error
import urllib.request

from rloo_studio.core.errors import ConfigError

HOW = ("start one in the vLLM environment: make vllm-server MODEL=<the run's model> (docs/VLLM.md)")


def _get(url: str, timeout: float) -> dict:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read() or b"{}")


def served_models(base_url: str, timeout: float = 5.0) -> list[str]:
    """The models a vLLM server serves (its /health answers and /v1/models lists them), or a ConfigError in words."""
    base = base_url.strip().rstrip("/")
    try:
        with urllib.request.urlopen(f"{base}/health", timeout=timeout) as r:
            if r.status != 200:
                raise ConfigError(f"use_vllm: the vLLM server at {base} answers /health with {r.status}; it is "
                                  f"still starting or broken: wait, or {HOW}.")
        listed = _get(f"{base}/v1/models", timeout)
    except ConfigError:
        raise
    except (urllib.error.URLError, OSError, ValueError) as exc:
        why = getattr(exc, "reason", exc)
        raise ConfigError(f"use_vllm: no vLLM server answers at {base} ({why}); {HOW}, or untick use_vllm.") from None
    return [m.get("id", "") for m in listed.get("data", []) if isinstance(m, dict)]


def _same(served: str, model: str) -> bool:
    """A hub id or a folder path: the same model when the names match, or the served path ends with the hub id."""
    a, b = served.strip().rstrip("/"), model.strip().rstrip("/")
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def check(cfg) -> None:
    """Refuse, in words, a run that would fail on its vLLM server: none answers, it serves another model, or this
    environment cannot send it the weights."""
    if not cfg.use_vllm:
        return
    served = served_models(cfg.vllm_server_base_url)
    if not any(_same(s, cfg.model) for s in served):
        raise ConfigError(f"use_vllm: the vLLM server at {cfg.vllm_server_base_url} serves "
                          f"{', '.join(served) or 'no model'}, not this run's model {cfg.model}: start it with that "
                          "model (make vllm-server MODEL=...), or point vllm_server_base_url at one that serves it.")
    if importlib.util.find_spec("vllm") is None:
        raise ConfigError("use_vllm: the server answers, but this environment has no vllm package, which TRL's client "
                          "needs to send the server the new weights after each step. Run this RLOO run from the vLLM "
                          "environment: .venv-vllm/bin/python -m rloo_studio train-rloo --workspace ... --config "
                          "FILE.yaml (docs/VLLM.md); the form's 'Run on several GPUs or machines' writes the file.")
