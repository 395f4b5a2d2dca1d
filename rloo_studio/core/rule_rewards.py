"""The studio's own rule rewards for TRL's RLOOTrainer: think_format, answer_present, correctness.

Standard library only: the RLOO job uses them (rloo.rewards.rule_reward), and each RLOO run folder gets
this file, thinking.py and answers.py copied beside its reproduce.py, which scores with the same code.

TRL calls each reward as f(prompts=, completions=, completion_ids=, **kwargs). Thinking is found on token
ids, with the </think> id read from the tokenizer, from where the chat template's generation prompt leaves
a completion (thinking.Template): after Qwen3-Thinking's `...assistant\\n<think>\\n` a completion begins
inside the reasoning, and one cut before </think> is all reasoning. A setting that cannot work raises
ValueError in plain words.
"""
from __future__ import annotations

import re
from typing import Callable

if __package__:  # rloo_studio.core
    from .answers import EXTRACTORS, matches
    from .thinking import parse, split_ids, template_info
else:  # the copy beside reproduce.py, with thinking.py and answers.py
    from answers import EXTRACTORS, matches
    from thinking import parse, split_ids, template_info

SELF_QUESTION = re.compile(r"\?|\b(wait|let me check|double[- ]check|is that right)\b", re.I)


def think_token_ids(tok) -> tuple[int | None, int | None]:
    """Ids of <think> and </think> from the tokenizer (None where the vocabulary lacks one)."""
    unk = tok.unk_token_id
    ids = [tok.convert_tokens_to_ids(t) for t in ("<think>", "</think>")]
    return tuple(None if i is None or i == unk else i for i in ids)


def text_of(completion) -> str:
    # Conversational prompts give completions as [{"role": "assistant", "content": ...}].
    if isinstance(completion, list):
        return "".join(m.get("content", "") for m in completion)
    return completion


def make_think_format_reward(tokenizer, enable_thinking: bool = True) -> Callable:
    """Seed recipe bands: no </think> -1.0; thinking <10 tokens 0.3, 10-29 0.7, >=30 1.0; +0.1 self-questioning."""
    open_id, close_id = think_token_ids(tokenizer)
    if close_id is None:
        raise ValueError("the tokenizer has no </think> token; the think_format reward needs one")
    start = template_info(tokenizer, enable_thinking).start

    def think_format(prompts=None, completions=None, completion_ids=None, **kwargs) -> list[float]:
        out = []
        for ids in completion_ids:
            s = split_ids(ids, open_id, close_id, start)
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


def make_answer_present_reward(tokenizer, enable_thinking: bool = True) -> Callable:
    """1.0 when some non-blank answer text follows </think>, else 0.0."""
    open_id, close_id = think_token_ids(tokenizer)
    eos = {tokenizer.eos_token_id, tokenizer.pad_token_id}
    start = template_info(tokenizer, enable_thinking).start

    def answer_present(prompts=None, completions=None, completion_ids=None, **kwargs) -> list[float]:
        out = []
        for ids in completion_ids:
            s = split_ids(ids, open_id, close_id, start) if close_id is not None else None
            ans = [t for t in (s.answer if s and s.closed else []) if t not in eos]
            out.append(1.0 if tokenizer.decode(ans, skip_special_tokens=True).strip() else 0.0)
        return out

    return answer_present


def make_correctness_reward(tokenizer=None, answer_format: str = "last_number",
                            enable_thinking: bool = True) -> Callable:
    """1.0 when the answer (after </think>) in `answer_format` (answers.ANSWER_FORMATS: the last number,
    the last \\boxed{}, or '#### N') equals the `answer` column; reasoning must be closed."""
    if answer_format not in EXTRACTORS:
        raise ValueError(f"unknown answer_format {answer_format!r}; choose one of {', '.join(EXTRACTORS)}")
    extract = EXTRACTORS[answer_format]
    start = template_info(tokenizer, enable_thinking).start if tokenizer is not None else "answer"

    def correctness(prompts=None, completions=None, answer=None, **kwargs) -> list[float]:
        if answer is None:
            raise ValueError("the correctness reward needs an `answer` column in the prompt set")
        out = []
        for c, a in zip(completions, answer):
            p = parse(text_of(c), start=start)
            out.append(1.0 if p.closed and matches(extract(p.answer), a) else 0.0)
        return out

    return correctness


RULES = ("correctness", "think_format", "answer_present")


def rule_reward(name: str, tokenizer, answer_format: str = "last_number", enable_thinking: bool = True) -> Callable:
    """One rule reward by the name TRL logs it under (rewards/<name>/mean)."""
    if name == "correctness":
        return make_correctness_reward(tokenizer, answer_format, enable_thinking)
    if name == "think_format":
        return make_think_format_reward(tokenizer, enable_thinking)
    if name == "answer_present":
        return make_answer_present_reward(tokenizer, enable_thinking)
    raise ValueError(f"unknown rule reward {name!r}; choose one of {', '.join(RULES)}")
