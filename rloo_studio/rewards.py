"""Reward functions for TRL's RLOOTrainer.

TRL calls each as f(prompts=, completions=, completion_ids=, **kwargs); kwargs carry the
prompt set's extra columns (e.g. `answer`) and trainer_state. Thinking is found on token
ids, with the </think> id read from the tokenizer.
"""
from __future__ import annotations

import re
from typing import Callable

from .demo import last_number
from .models import think_token_ids
from .thinking import parse, split_ids

SELF_QUESTION = re.compile(r"\?|\b(wait|let me check|double[- ]check|is that right)\b", re.I)


def _text(completion) -> str:
    # Conversational prompts give completions as [{"role": "assistant", "content": ...}].
    if isinstance(completion, list):
        return "".join(m.get("content", "") for m in completion)
    return completion


def make_think_format_reward(tokenizer) -> Callable:
    """Seed recipe bands: no </think> -1.0; thinking <10 tokens 0.3, 10-29 0.7, >=30 1.0; +0.1 self-questioning."""
    open_id, close_id = think_token_ids(tokenizer)
    if close_id is None:
        raise ValueError("the tokenizer has no </think> token; the think-format reward needs one")

    def think_format(prompts=None, completions=None, completion_ids=None, **kwargs) -> list[float]:
        out = []
        for ids in completion_ids:
            s = split_ids(ids, open_id, close_id)
            if not s.closed:
                out.append(-1.0)
                continue
            n = len(s.thinking)
            r = 0.3 if n < 10 else 0.7 if n < 30 else 1.0
            if n and SELF_QUESTION.search(tokenizer.decode(s.thinking, skip_special_tokens=True)):
                r += 0.1
            out.append(r)
        return out

    return think_format


def make_answer_present_reward(tokenizer) -> Callable:
    """1.0 when some non-blank answer text follows </think>, else 0.0."""
    open_id, close_id = think_token_ids(tokenizer)
    eos = {tokenizer.eos_token_id, tokenizer.pad_token_id}

    def answer_present(prompts=None, completions=None, completion_ids=None, **kwargs) -> list[float]:
        out = []
        for ids in completion_ids:
            s = split_ids(ids, open_id, close_id) if close_id is not None else None
            ans = [t for t in (s.answer if s and s.closed else []) if t not in eos]
            out.append(1.0 if tokenizer.decode(ans, skip_special_tokens=True).strip() else 0.0)
        return out

    return answer_present


def correctness(prompts=None, completions=None, answer=None, **kwargs) -> list[float]:
    """1.0 when the last number of the answer (after </think>) equals the `answer` column."""
    if answer is None:
        raise ValueError("the correctness reward needs an `answer` column in the prompt set")
    out = []
    for c, a in zip(completions, answer):
        p = parse(_text(c))
        out.append(1.0 if p.closed and last_number(p.answer) == str(a).strip() else 0.0)
    return out
