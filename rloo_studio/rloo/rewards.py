"""Reward functions for TRL's RLOOTrainer.

TRL calls each as f(prompts=, completions=, completion_ids=, **kwargs); kwargs carry the
prompt set's extra columns (e.g. `answer`) and trainer_state. Thinking is found on token
ids, with the </think> id read from the tokenizer.

Four kinds: rule rewards (think format, answer present, correctness: core.rule_rewards, standard
library only, so that reproduce.py runs the same code), TRL's reward library (accuracy with
math-verify, soft overlong punishment, repetition penalty), a trained reward model scored in
batches, and custom functions from Python files in the workspace.

Every reward reads a completion from where the chat template's generation prompt leaves it
(thinking.Template): after Qwen3-Thinking's `...assistant\n<think>\n` a completion begins inside
the reasoning, and one cut before </think> is all reasoning.
"""
from __future__ import annotations

import functools
import importlib.util
import inspect
import math
import sys
import traceback
from pathlib import Path
from typing import Callable, Sequence

from rloo_studio.core import rule_rewards
from rloo_studio.core.errors import ConfigError, StudioError
from rloo_studio.core.reward_input import format_ids, prompt_ids
from rloo_studio.core.rule_rewards import text_of, think_token_ids
from rloo_studio.core.thinking import chat_prompt, full_response, template_info

CUSTOM_DIR = "rewards"  # custom reward files live in <workspace>/rewards/


class RewardError(StudioError):
    """A reward function failed; the message names it and says what went wrong."""


def rule_reward(name: str, tokenizer=None, answer_format: str = "last_number",
                enable_thinking: bool = True) -> Callable:
    """think_format, answer_present or correctness (core.rule_rewards: the code reproduce.py gets a copy of);
    a setting they cannot work with is a ConfigError."""
    try:
        return rule_rewards.rule_reward(name, tokenizer, answer_format, enable_thinking)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


# -- TRL's reward library ----------------------------------------------------------------------

def trl_reward(name: str, tokenizer=None, enable_thinking: bool = True, max_completion_length: int = 256,
               overlong_cache: int = 0, ngram: int = 3) -> Callable:
    """One of TRL's rewards (trl.rewards), named as the studio logs it:

    accuracy             accuracy_reward: math-verify compares the completion with the `solution` column
    reasoning_accuracy   reasoning_accuracy_reward: the same, on the text after </think> only
    soft_overlong        get_soft_overlong_punishment(max_completion_length, cache): 0 up to
                         max - cache tokens, then down to -1 at the limit (DAPO)
    repetition_penalty   get_repetition_penalty_reward(ngram): -1 x the share of repeated n-grams

    reasoning_accuracy gets each completion written out whole (thinking.full_response), so that the
    </think> a template put into the prompt (enable_thinking=False) is there to split on.
    """
    from trl import rewards as trl_rewards


    if name == "accuracy":
        fn = trl_rewards.accuracy_reward
    elif name == "reasoning_accuracy":
        tpl = template_info(tokenizer, enable_thinking) if tokenizer is not None else None

        def fn(prompts=None, completions=None, completion_ids=None, **kwargs):
            whole = [[{"role": "assistant", "content": full_response(tpl, text_of(c)) if tpl else text_of(c)}]
                     for c in completions]
            return trl_rewards.reasoning_accuracy_reward(whole, **kwargs)
    elif name == "soft_overlong":
        cache = overlong_cache or max(1, max_completion_length // 4)
        fn = trl_rewards.get_soft_overlong_punishment(max_completion_len=max_completion_length, soft_punish_cache=cache)
    elif name == "repetition_penalty":
        fn = trl_rewards.get_repetition_penalty_reward(ngram_size=ngram, max_penalty=-1.0)
    else:
        raise ConfigError(f"unknown TRL reward {name!r}; choose accuracy, reasoning_accuracy, soft_overlong or "
                          "repetition_penalty")
    if name == "accuracy":
        def call(prompts=None, completions=None, completion_ids=None, **kwargs):
            msgs = [c if isinstance(c, list) else [{"role": "assistant", "content": c}] for c in completions]
            return trl_rewards.accuracy_reward(msgs, **kwargs)
        return guarded(call, name)
    return guarded(fn, name)


# -- reward model ------------------------------------------------------------------------------

def shares_tokenizer(a, b) -> bool:
    """Same vocabulary and EOS: completion ids of one are valid input ids of the other."""
    return a is b or (a.get_vocab() == b.get_vocab() and a.eos_token_id == b.eos_token_id)


def ids_from_text(tok, prompt, completion, enable_thinking: bool = True) -> list[int]:
    """Decode + re-tokenize path: the text the reward model trained on (chat prompt + completion text
    without a <think> the prompt already opened + EOS), tokenized as RewardTrainer tokenizes it."""
    return format_ids(tok, prompt, text_of(completion), enable_thinking)


def ids_from_tokens(tok, prompt, completion_ids: Sequence[int], enable_thinking: bool = True) -> list[int]:
    """Token-id path: chat prompt ids (with a BOS where the tokenizer adds one, as in training) + the
    completion's own ids, ending in exactly one EOS."""
    return (prompt_ids(tok, chat_prompt(tok, prompt, enable_thinking))
            + _body_ids(tok, completion_ids, enable_thinking) + [tok.eos_token_id])


def _body_ids(tok, completion_ids: Sequence[int], enable_thinking: bool = True) -> list[int]:
    """The completion's ids without trailing EOS / padding, and without a leading <think> (and the
    white space after it) when the generation prompt already opened one."""
    ids = _strip_end(tok, completion_ids)
    tpl = template_info(tok, enable_thinking)
    open_id = think_token_ids(tok)[0]
    if tpl.opens and ids and ids[0] == open_id:
        ids = ids[1:]
        after = tpl.open_text[len("<think>"):]
        if after and ids and tok.decode(ids[:1]) == after:
            ids = ids[1:]
    return ids


def _strip_end(tok, completion_ids: Sequence[int]) -> list[int]:
    drop = {tok.eos_token_id, tok.pad_token_id}
    ids = list(completion_ids)
    while ids and ids[-1] in drop:
        ids.pop()
    return ids


def score_ids(model, tok, id_lists: list[list[int]], batch_size: int = 16) -> list[float]:
    """Reward-model scores of token-id sequences (reward.scoring: the one scorer Inspect uses too)."""
    from rloo_studio.inspect.scoring import Scorer, final_scores  # torch: only when a reward model scores

    return final_scores(Scorer(model, tok, "reward model", True), id_lists, batch_size)


def make_reward_model_reward(model, rm_tok, policy_tok, batch_size: int = 16, use_ids: bool | None = None,
                             name: str = "reward_model", enable_thinking: bool = True) -> Callable:
    """Score completions with a trained reward model (a sequence classifier).

    When the reward model shares the policy's tokenizer, the completion ids go in as they are
    (no decode / re-tokenize round trip); otherwise the decoded text is re-tokenized. Either way the
    text is the one the reward model trained on: its chat prompt (enable_thinking as the policy's)
    and the completion, with no second <think> when the prompt opened one.
    """
    use_ids = shares_tokenizer(rm_tok, policy_tok) if use_ids is None else use_ids

    def reward_model(prompts=None, completions=None, completion_ids=None, **kwargs) -> list[float]:
        return score_ids(model, rm_tok, inputs(prompts, completions, completion_ids), batch_size)

    def inputs(prompts, completions, completion_ids) -> list[list[int]]:
        if not use_ids:
            return [ids_from_text(rm_tok, p, c, enable_thinking) for p, c in zip(prompts, completions)]
        # each prompt comes k times in a generation batch: tokenize it once
        cache: dict[str, list[int]] = {}
        out = []
        for p, c in zip(prompts, completion_ids):
            key = repr(p)
            if key not in cache:
                cache[key] = ids_from_tokens(rm_tok, p, [], enable_thinking)[:-1]
            out.append(cache[key] + _body_ids(rm_tok, c, enable_thinking) + [rm_tok.eos_token_id])
        return out

    reward_model.inputs = inputs  # for tests and benchmarks: the exact ids that get scored

    reward_model.__name__ = name
    reward_model.uses_ids = use_ids
    return reward_model


def shaped(fn: Callable, normalize: bool = False, clip: Sequence[float] | None = None,
           std_floor: float = 0.0) -> Callable:
    """Wrap a reward: standardize over the generation batch (mean 0, dividing by the batch's std but never by
    less than `std_floor`), then clip to [low, high].

    The floor is in the reward's own units. A reward model's scores are Bradley-Terry logits, so scores that
    differ by much less than 1 are ones the model hardly tells apart: once nearly every completion of a batch
    looks alike to it (all reason, say), the batch's std is that noise, and dividing by it would turn the
    noise into full-size rewards that erode what the policy already does right."""
    if not normalize and not clip:
        return fn

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        values = list(fn(*args, **kwargs))
        if normalize and len(values) > 1:
            mean = sum(values) / len(values)
            std = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
            values = [(v - mean) / max(std + 1e-6, std_floor) for v in values]
            log = kwargs.get("log_metric")  # TRL's: the raw figures beside rewards/<name>/mean (which is 0 here)
            if log is not None:
                log(f"rewards/{getattr(fn, '__name__', 'reward')}/raw_mean", mean)
                log(f"rewards/{getattr(fn, '__name__', 'reward')}/raw_std", std)
        if clip:
            values = [min(max(v, clip[0]), clip[1]) for v in values]
        return values

    return wrapper


# -- custom reward files -----------------------------------------------------------------------

def custom_reward_path(ws_root: Path, spec: str) -> tuple[Path, str]:
    """'file.py' or 'file.py:function' -> (path inside <workspace>/rewards/, function name)."""
    file, _, func = spec.partition(":")
    base = (Path(ws_root) / CUSTOM_DIR).resolve()
    path = (base / file.strip()).resolve()
    if path.parent != base or path.suffix != ".py":
        raise ConfigError(f"custom reward {spec!r}: give a .py file name inside {base} (no folders, no paths "
                          "outside it)")
    if not path.exists():
        raise ConfigError(f"custom reward file {path} does not exist; put your .py file in {base}")
    return path, (func.strip() or "reward")


def load_custom_reward(ws_root: Path, spec: str) -> Callable:
    """Import a reward function from a Python file in the workspace; every failure becomes a plain message."""
    path, func_name = custom_reward_path(ws_root, spec)
    mod_name = f"rloo_studio_custom_{path.stem}"
    try:
        mod_spec = importlib.util.spec_from_file_location(mod_name, path)
        module = importlib.util.module_from_spec(mod_spec)
        sys.modules.pop(mod_name, None)
        mod_spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 — user code: any error becomes a message
        raise ConfigError(f"{path.name} could not be loaded: {_where(exc, path)}") from None
    fn = getattr(module, func_name, None)
    if not callable(fn):
        found = [n for n, v in vars(module).items() if inspect.isfunction(v) and v.__module__ == mod_name]
        raise ConfigError(f"{path.name} has no function {func_name!r}; it defines: "
                          f"{', '.join(found) or 'no functions'}")
    params = inspect.signature(fn).parameters.values()
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        raise ConfigError(
            f"{path.name}:{func_name} must accept **kwargs: TRL calls it as "
            f"{func_name}(prompts=..., completions=..., completion_ids=..., **columns)"
        )
    return guarded(fn, f"{path.stem}.{func_name}" if func_name != "reward" else path.stem, path)


def guarded(fn: Callable, name: str, path: Path | None = None) -> Callable:
    """Turn an exception inside a reward function into a RewardError naming it; check the output's length."""

    def wrapper(prompts=None, completions=None, completion_ids=None, **kwargs):
        try:
            out = list(fn(prompts=prompts, completions=completions, completion_ids=completion_ids, **kwargs))
        except Exception as exc:  # noqa: BLE001
            raise RewardError(f"reward function {name} raised {_where(exc, path)}") from None
        if len(out) != len(completions):
            raise RewardError(f"reward function {name} returned {len(out)} values for {len(completions)} completions; "
                              "return one number (or None) per completion")
        return out

    wrapper.__name__ = name
    return wrapper


def _where(exc: BaseException, path: Path | None) -> str:
    """'TypeError: msg (line 7)' with the line in the user's file when the traceback passes through it."""
    line = ""
    if path is not None:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename) == path]
        if frames:
            line = f" (line {frames[-1].lineno}: {frames[-1].line})"
        elif isinstance(exc, SyntaxError) and exc.lineno:
            line = f" (line {exc.lineno})"
    return f"{type(exc).__name__}: {exc}{line}"
