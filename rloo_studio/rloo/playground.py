"""Try the policy: one prompt answered by the base model and by base + an RLOO run's adapter, streamed.

`play()` is a generator: it yields the state of both answers after every new token (the base first, then
the adapter, same seed and sampling settings), each with its reasoning split from the answer
(thinking.parse on the whole response) and, once finished, the reward of each by the run's chosen
rewards (reward-model scores raw: no batch normalization over two answers).

The model is loaded once and kept (one base + adapter at a time); generation holds a lock, so two
pages take turns. It runs in the caller's thread beside any training job (which has its own thread):
nothing here waits for a job, so the page never blocks on training.
"""
from __future__ import annotations

import dataclasses
import queue
import threading
from dataclasses import dataclass
from typing import Iterator

from rloo_studio.core import kept
from rloo_studio.core.errors import ConfigError, DataError, StudioError
from rloo_studio.core.thinking import chat_prompt, full_response, parse, template_info
from rloo_studio.core.workspace import Workspace
from rloo_studio.runs.catalog import adapter_dir, find_run, trained_adapters
from rloo_studio.runs.runner import read_jsonl


@dataclass
class PlaySettings:
    max_new_tokens: int = 128
    """Answer length cap in tokens."""
    temperature: float = 0.0
    """0: greedy (the same answer every time); above 0: sampled."""
    top_p: float = 1.0
    seed: int = 0
    """Both sides sample with this seed, so a difference comes from the weights."""
    enable_thinking: bool = True

    def validate(self) -> None:
        if not 1 <= int(self.max_new_tokens) <= 4096:
            raise ConfigError(f"max new tokens must be between 1 and 4096, got {self.max_new_tokens}")
        if self.temperature < 0:
            raise ConfigError(f"temperature must be 0 (greedy) or more, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ConfigError(f"top_p must be above 0 and at most 1, got {self.top_p}")


@dataclass
class Side:
    """One answer as it grows."""

    text: str = ""  # the whole response (the <think> the template opened written out)
    thinking: str = ""
    answer: str = ""
    closed: bool = False  # reasoning closed with </think>
    tokens: int = 0
    done: bool = False
    stopped: bool = False  # ended with EOS (False when cut at max_new_tokens)
    rewards: dict | None = None  # name -> value (None: could not be computed), once done
    notes: list[str] = dataclasses.field(default_factory=list)  # why a reward is missing


_LOCK = threading.Lock()
LOCK_WAIT_S = 120  # a second page waits this long for the first one's answer, then is told to try again
_LOADED: dict = {}  # {"key": ..., "model": PeftModel | model, "tok": ..., "rewards": {...}}


def _load(ws: Workspace, run_id: str | None, base: str | None):
    """(model with the adapter (or the bare base), tokenizer, run config or None), cached by what they are."""
    from rloo_studio.core.models import load_policy, resolve
    from rloo_studio.rloo.config import run_config

    cfg, ad = None, None
    if run_id:
        rid = find_run(ws, run_id, "rloo")["id"]
        ad = adapter_dir(ws, rid)
        if not (ad / "adapter_config.json").exists():
            raise DataError(f"Run {rid} saved no adapter yet: try it once it has finished (or been stopped).")
        cfg = run_config(ws, rid)
    base = (base or "").strip() or (cfg.model if cfg else "")
    if not base:
        raise DataError("Choose an RLOO run or type a base model.")
    path = resolve(base)
    stamp = (ad / "adapter_model.safetensors").stat().st_mtime if ad else None
    key = (path, str(ad), stamp, bool(cfg and cfg.load_in_4bit))
    if _LOADED.get("key") != key:
        _LOADED.clear()
        # a run's 4-bit and trust as it was trained (trust only on the run's own base); on the GPU when there is one
        model, tok = load_policy(path, ad, of_run=True)
        _LOADED.update(key=key, model=model, tok=tok, rewards={})
    return _LOADED["model"], _LOADED["tok"], cfg


class _Ids:
    """A transformers streamer that hands each new token id to a queue (the prompt is skipped)."""

    def __init__(self):
        self.q: queue.Queue = queue.Queue()
        self.first = True

    def put(self, value):
        if self.first:  # generate() sends the prompt first
            self.first = False
            return
        for t in value.reshape(-1).tolist():
            self.q.put(t)

    def end(self):
        self.q.put(None)


def _stream(model, tok, prompt_text: str, s: PlaySettings, use_adapter: bool) -> Iterator[int]:
    """Token ids as generate() makes them, in a worker thread; the adapter switched off for the base side."""
    import contextlib

    import torch

    enc = tok(prompt_text, return_tensors="pt", add_special_tokens=False).to(next(model.parameters()).device)
    streamer, err, halt = _Ids(), [], threading.Event()
    sample = s.temperature > 0
    from transformers import StoppingCriteria, StoppingCriteriaList

    class Halt(StoppingCriteria):  # the page went away: stop generating
        def __call__(self, input_ids, scores, **kwargs):
            return halt.is_set()

    kw = dict(max_new_tokens=int(s.max_new_tokens), do_sample=sample, streamer=streamer,
              stopping_criteria=StoppingCriteriaList([Halt()]),
              eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    if sample:
        kw.update(temperature=float(s.temperature), top_p=float(s.top_p))
    else:
        kw.update(temperature=None, top_p=None, top_k=None)

    def work():
        try:
            off = model.disable_adapter() if (not use_adapter and hasattr(model, "disable_adapter")) \
                else contextlib.nullcontext()
            with off, torch.no_grad():
                torch.manual_seed(int(s.seed))
                model.generate(**enc, **kw)
        except Exception as exc:  # noqa: BLE001 — shown to the user below
            err.append(exc)
            streamer.end()

    t = threading.Thread(target=work, daemon=True)
    t.start()
    try:
        while (tid := streamer.q.get()) is not None:
            yield tid
    finally:
        halt.set()
        t.join()
    if err:
        from rloo_studio.core.errors import explain

        raise StudioError(f"Generation failed: {explain(err[0])}")


def _fill(side: Side, tok, tpl, ids: list[int]) -> None:
    body = [i for i in ids if i != tok.eos_token_id]
    side.text = full_response(tpl, tok.decode(body, skip_special_tokens=True))
    p = parse(side.text, start="answer")
    side.thinking, side.answer, side.closed, side.tokens = p.thinking, p.answer, p.closed, len(ids)


def play(ws: Workspace, prompt: str, run_id: str | None, settings: PlaySettings | None = None,
         base: str | None = None, answer: str | None = None) -> Iterator[dict[str, Side]]:
    """Stream {"base": Side, "adapter": Side} (no "adapter" without a run). `answer`: the expected answer
    for rewards that need one (correctness); by default the run's prompt set's answer when the prompt is in it."""
    s = settings or PlaySettings()
    s.validate()
    prompt = (prompt or "").strip()
    if not prompt:
        raise DataError("Type a prompt first.")
    if not _LOCK.acquire(timeout=LOCK_WAIT_S):
        raise DataError("The playground is still answering another prompt (in another tab?): try again in a moment.")
    try:
        model, tok, cfg = _load(ws, run_id, base)
        think = cfg.enable_thinking if cfg else s.enable_thinking
        tpl = template_info(tok, think)
        text = chat_prompt(tok, prompt, think)
        out = {"base": Side()}
        if cfg:
            out["adapter"] = Side()
        for name, side in out.items():
            ids: list[int] = []
            for tid in _stream(model, tok, text, s, use_adapter=name == "adapter"):
                ids.append(tid)
                _fill(side, tok, tpl, ids)
                yield out
            side.done, side.stopped = True, tok.eos_token_id in ids
            _fill(side, tok, tpl, ids)
            if cfg:
                side.rewards, side.notes = _rewards(ws, run_id, cfg, tok, prompt, ids, side, answer)
            yield out
    finally:
        _LOCK.release()


def _rewards(ws, run_id, cfg, tok, prompt, ids, side: Side, answer) -> tuple[dict, list[str]]:
    """The run's rewards of one answer, weighted as in training; a reward that cannot be computed is None."""
    from rloo_studio.rloo.job import build_rewards

    funcs = _LOADED["rewards"].get(run_id)
    if funcs is None:
        raw = dataclasses.replace(cfg, reward_model_normalize=False, reward_model_clip=None)
        funcs = build_rewards(raw, ws, tok, device=next(_LOADED["model"].parameters()).device)
        _LOADED["rewards"][run_id] = funcs
    cols = next((r for r in read_jsonl(ws.run_dir(run_id) / "prompts.jsonl") if r.get("prompt") == prompt), {})
    cols = {k: [v] for k, v in cols.items() if k != "prompt"}
    if answer is not None and str(answer).strip():
        cols["answer"] = [str(answer).strip()]
    out, notes = {}, []
    body = tok.decode([i for i in ids if i != tok.eos_token_id], skip_special_tokens=True)  # as TRL passes it
    for name, f in zip(cfg.rewards, funcs):
        try:
            v = f(prompts=[[{"role": "user", "content": prompt}]],
                  completions=[[{"role": "assistant", "content": body}]],
                  completion_ids=[ids], trainer_state=None, **cols)[0]
            out[name] = None if v is None else float(v)
        except (ValueError, StudioError) as exc:
            out[name] = None
            notes.append(f"{name}: {'needs the expected answer (type it)' if 'answer' in str(exc) else exc}")
    return out, notes


def total(rewards: dict | None, cfg_rewards: list[str], weights: list[float]) -> float | None:
    """The weighted sum over the rewards that could be computed (None when none could)."""
    if not rewards:
        return None
    vals = [w * rewards[n] for n, w in zip(cfg_rewards, weights) if rewards.get(n) is not None]
    return sum(vals) if vals else None


def loaded() -> str | None:
    """What the playground keeps in memory (the base model's path and the adapter), or None."""
    key = _LOADED.get("key")
    if not key:
        return None
    path, adapter = key[0], key[1]
    return f"{path}" + (f" + the adapter {adapter}" if adapter and adapter != "None" else "")


def unload(timeout: float = 10) -> str | None:
    """Free the kept model and its reward models (e.g. before a large training job); returns what was kept
    (None: nothing was). A prompt being answered is finished first; after `timeout` seconds a DataError says so."""
    if not _LOCK.acquire(timeout=timeout):
        raise DataError("The playground is answering a prompt right now: unload once it has answered.")
    try:
        was = loaded()
        _LOADED.clear()
    finally:
        _LOCK.release()
    kept.release_memory()
    return was


def _kept() -> list[kept.Kept]:
    """The Playground's model (base + adapter) and the reward models its rewards loaded."""
    model, what = _LOADED.get("model"), loaded()
    if model is None or what is None:
        return []
    rewards = sum(kept.model_bytes(getattr(f, "model", None)) for fs in _LOADED.get("rewards", {}).values() for f in fs)
    return [kept.Kept("the Playground's model", what, kept.model_bytes(model) + rewards)]


kept.register("the Playground's model", _kept, unload)


def run_choices(ws: Workspace) -> list[tuple[str, str]]:
    return trained_adapters(ws, "rloo")


