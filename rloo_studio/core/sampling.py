"""Sample responses from a causal LM for chat prompts, in batches, with progress and stop."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import torch

from rloo_studio.core.thinking import chat_prompt, continuation, full_response, template_info


@dataclass(frozen=True)
class Sample:
    prompt: str
    text: str  # decoded completion, special tokens removed, <think> tags kept
    ids: list[int]  # completion token ids up to and including EOS
    stopped: bool  # ended with EOS (False: cut at max_new_tokens)
    response: str = ""  # the whole response: `text` with the <think> (or the empty closed block) that the
    # chat template's generation prompt put before it, so that it reads the same under any template


@torch.no_grad()
def sample(
    model,
    tokenizer,
    prompts: Sequence[str],
    n: int = 1,
    max_new_tokens: int = 256,
    temperature: float = 1.0,
    top_p: float = 1.0,
    batch_size: int = 64,
    seed: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    enable_thinking: bool = True,
) -> list[Sample]:
    """n samples per prompt, in prompt order (prompt 0's n samples first).

    enable_thinking goes to the chat template (hybrid Qwen3 templates: False closes an empty block).

    Left padding, as generation requires; the tokenizer's setting is restored afterwards.
    progress(done, total) is called after each batch; should_stop() ends early between batches.
    """
    if seed is not None:
        torch.manual_seed(seed)
    eos = tokenizer.eos_token_id
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
    jobs = [p for p in prompts for _ in range(n)]
    out: list[Sample] = []
    side, tokenizer.padding_side = tokenizer.padding_side, "left"
    device = next(model.parameters()).device
    tpl = template_info(tokenizer, enable_thinking)
    try:
        for i in range(0, len(jobs), batch_size):
            if should_stop and should_stop():
                break
            chunk = jobs[i : i + batch_size]
            enc = tokenizer([chat_prompt(tokenizer, p, enable_thinking) for p in chunk], return_tensors="pt",
                            padding=True, add_special_tokens=False).to(device)
            gen = model.generate(
                **enc, do_sample=temperature > 0, temperature=temperature if temperature > 0 else None,
                top_p=top_p, max_new_tokens=max_new_tokens, eos_token_id=eos, pad_token_id=pad,
            )
            for p, row in zip(chunk, gen[:, enc["input_ids"].shape[1] :].tolist()):
                stopped = eos in row
                ids = row[: row.index(eos) + 1] if stopped else row
                text = tokenizer.decode(ids, skip_special_tokens=True)
                out.append(Sample(p, text, ids, stopped, full_response(tpl, text)))
            if progress:
                progress(len(out), len(jobs))
    finally:
        tokenizer.padding_side = side
    return out


@torch.no_grad()
def continue_responses(model, tokenizer, starts: Sequence[tuple], n: int = 4, max_new_tokens: int = 128,
                       temperature: float = 1.0, batch_size: int = 64, seed: int | None = None,
                       enable_thinking: bool = True) -> list[list[Sample]]:
    """n continuations of each (prompt, partial response): the model reads the chat prompt and the response so
    far (as it follows the prompt: no second <think>) and writes on. Each Sample's `response` is the partial
    response with the continuation after it. In the order of `starts`."""
    if seed is not None:
        torch.manual_seed(seed)
    eos = tokenizer.eos_token_id
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
    tpl = template_info(tokenizer, enable_thinking)
    jobs = [(p, r) for p, r in starts for _ in range(n)]
    texts: list[Sample] = []
    side, tokenizer.padding_side = tokenizer.padding_side, "left"
    device = next(model.parameters()).device
    try:
        for i in range(0, len(jobs), batch_size):
            chunk = jobs[i: i + batch_size]
            heads = [chat_prompt(tokenizer, p, enable_thinking) + continuation(tpl, r) for p, r in chunk]
            enc = tokenizer(heads, return_tensors="pt", padding=True, add_special_tokens=False).to(device)
            gen = model.generate(**enc, do_sample=temperature > 0, temperature=temperature if temperature > 0 else None,
                                 max_new_tokens=max_new_tokens, eos_token_id=eos, pad_token_id=pad)
            for (p, r), row in zip(chunk, gen[:, enc["input_ids"].shape[1]:].tolist()):
                stopped = eos in row
                ids = row[: row.index(eos) + 1] if stopped else row
                text = tokenizer.decode(ids, skip_special_tokens=True)
                texts.append(Sample(p, text, ids, stopped, r + text))
    finally:
        tokenizer.padding_side = side
    return [texts[k * n:(k + 1) * n] for k in range(len(starts))]
