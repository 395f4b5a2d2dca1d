"""vLLM server vs transformers generate, on the same model, prompts and lengths: the generation an RLOO step does.

    python bench/vllm_timing.py --url http://127.0.0.1:8000 [--prompts 8 --k 8 --new-tokens 512 --repeats 3]
    (also: python bench/gpu_check.py --vllm URL)

Needs a GPU and a vLLM server (make vllm-server MODEL=...): it reads the served model's name from /v1/models, loads
the same model with transformers in this process, and times, interleaved (after one uncounted call each): the
server's /v1/completions with n=k for each prompt (sent together), and model.generate for the prompts x k sampled
at temperature 1, ignoring EOS so both write exactly --new-tokens tokens. Prints tokens/s of each and the ratio
(the goal: vLLM >= 5x). Needs only the standard library to talk to the server.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor


def _post(url: str, body: dict, timeout: float = 600) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def served_model(url: str) -> str:
    with urllib.request.urlopen(f"{url}/v1/models", timeout=10) as r:
        return json.loads(r.read())["data"][0]["id"]


def vllm_tokens(url: str, model: str, prompts: list[str], k: int, new_tokens: int) -> int:
    body = lambda p: {"model": model, "prompt": p, "n": k, "max_tokens": new_tokens, "temperature": 1.0,  # noqa: E731
                      "ignore_eos": True}
    with ThreadPoolExecutor(len(prompts)) as pool:
        outs = list(pool.map(lambda p: _post(f"{url}/v1/completions", body(p)), prompts))
    return sum(o["usage"]["completion_tokens"] for o in outs)


def hf_tokens(model, tok, prompts: list[str], k: int, new_tokens: int) -> int:
    import torch

    tok.padding_side = "left"
    enc = tok([p for p in prompts for _ in range(k)], return_tensors="pt", padding=True).to(model.device)
    with torch.no_grad():
        out = model.generate(**enc, do_sample=True, temperature=1.0, max_new_tokens=new_tokens,
                             min_new_tokens=new_tokens, pad_token_id=tok.pad_token_id or tok.eos_token_id)
    torch.cuda.synchronize()
    return (out.shape[1] - enc["input_ids"].shape[1]) * out.shape[0]


def timing(url: str, prompts: int = 8, k: int = 8, new_tokens: int = 512, repeats: int = 3) -> dict:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    url = url.rstrip("/")
    name = served_model(url)
    tok = AutoTokenizer.from_pretrained(name)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    model = AutoModelForCausalLM.from_pretrained(name, dtype=torch.bfloat16).to("cuda").eval()
    texts = [f"Question {i}: explain, step by step, how to add {100 + i} and {250 + 3 * i}." for i in range(prompts)]
    runs = {"vllm": lambda: vllm_tokens(url, name, texts, k, new_tokens),
            "transformers": lambda: hf_tokens(model, tok, texts, k, new_tokens)}
    for fn in runs.values():
        fn()  # warm-up, not counted
    rates: dict[str, list[float]] = {n: [] for n in runs}
    for _ in range(repeats):
        for n, fn in runs.items():  # interleaved
            t0 = time.perf_counter()
            tokens = fn()
            rates[n].append(tokens / (time.perf_counter() - t0))
    v, h = statistics.median(rates["vllm"]), statistics.median(rates["transformers"])
    return {"model": name, "prompts": prompts, "k": k, "new_tokens": new_tokens, "vllm_tokens_per_s": round(v, 1),
            "transformers_tokens_per_s": round(h, 1), "ratio": round(v / h, 2), "device": torch.cuda.get_device_name(0)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True)
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--new-tokens", type=int, default=512)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    import torch

    if not torch.cuda.is_available():
        sys.exit("no CUDA device: the vLLM timing needs a GPU and a vLLM server (docs/VLLM.md)")
    print(json.dumps(timing(a.url, a.prompts, a.k, a.new_tokens, a.repeats)))


if __name__ == "__main__":
    main()
