"""RLOO rewarded by a process reward model: one number per completion from its steps' probabilities of being right.

TRL's RLOO is sequence-level: each reward function returns one number per completion, and the leave-one-out
baseline compares them. A process reward model gives one probability per <think> step, so they are reduced to one:
`min` (the weakest step: PURE 2025 found min-form credit matches verifiable rewards, where summing step rewards
collapses training), `product` (Lightman et al.: every step right; it penalises long chains), `last` (the last step:
an outcome model again) or `mean`. A completion without reasoning steps earns 0: there is nothing to verify.
`correct_only` (PAPO) gives the process reward only to answers that are right, so that it ranks the right answers
by their reasoning and never pays for a well-argued wrong answer. `filtered` (PROF, 2025) uses the model beside an
answer key another way: in each prompt's group, the completions whose outcome and process disagree (a right answer
the model doubts, a wrong one it trusts) get no advantage, so that what is learned is what both agree on.

An unfinished completion (its reasoning never closed, or no answer after </think>: stopped mid-reasoning, or cut at
max_completion_length) earns 0 unless `pay_unfinished`: a reward for right-so-far steps that never asks for an answer
teaches a policy to stop early, before the steps it could slip on (seen on the demo: '<think>\n6+7+0=' scored 0.9999,
the best of its group).

Each call logs, beside the reward, what the warnings against reward hacking read (rloo/health.py): the share of
right answers (when the prompt set has an answer column), the mean number of steps, the share of completions
with a step the model doubts, the share of unfinished completions and what finished and unfinished ones were paid.
"""
from __future__ import annotations

import functools
from typing import Callable

from rloo_studio.core.rule_rewards import make_correctness_reward, text_of
from rloo_studio.core.thinking import full_response, parse, template_info

AGGREGATES = ("min", "product", "last", "mean")
NAME = "process_reward"


def finished(response: str) -> bool:
    """A whole response (its <think> in front) closed its reasoning and wrote an answer after it."""
    p = parse(response)
    return p.closed and bool(p.answer.strip())


class BatchScores:
    """One pass of the process reward model per batch of completions, shared by process_reward and the filter: TRL
    calls every reward function of a step with the same completions list, so the list itself (held, and compared by
    identity) names the batch."""

    def __init__(self, scorer, policy_tok, answer_format: str = "last_number", enable_thinking: bool = True,
                 batch_size: int = 16):
        self.scorer, self.batch_size = scorer, batch_size
        self.tpl = template_info(policy_tok, enable_thinking)
        self.correctness = make_correctness_reward(policy_tok, answer_format, enable_thinking)
        self._for, self._value = None, None

    def __call__(self, prompts, completions, answer=None) -> tuple[list[dict], list[bool], list | None]:
        """(each completion's steps scored, finished or not, right or not: None without an answer column)."""
        from rloo_studio.inspect.process import score_steps

        if self._for is not completions:
            # the whole response as the policy wrote it: a <think> its chat template opened is put back in front
            items = [(p, full_response(self.tpl, text_of(c))) for p, c in zip(prompts, completions)]
            scored = score_steps(self.scorer, items, batch_size=self.batch_size)
            right = (self.correctness(prompts=prompts, completions=completions, answer=answer)
                     if answer is not None else None)
            self._for, self._value = completions, (scored, [finished(r) for _, r in items], right)
        return self._value


def make_process_reward(scorer, policy_tok, aggregate: str = "min", correct_only: bool = False,
                        answer_format: str = "last_number", enable_thinking: bool = True,
                        batch_size: int = 16, pay_unfinished: bool = False) -> Callable:
    """`scorer`: an inspect.process.ProcessScorer (its own model and tokenizer; the completion goes in as text,
    so the policy and the process reward model need not share a tokenizer). The function's `batch` is its
    BatchScores, which `filtered` shares."""
    if aggregate not in AGGREGATES:
        raise ValueError(f"unknown aggregate {aggregate!r}; choose one of {', '.join(AGGREGATES)}")
    batch = BatchScores(scorer, policy_tok, answer_format, enable_thinking, batch_size)

    def process_reward(prompts=None, completions=None, completion_ids=None, answer=None, log_metric=None,
                       **kwargs) -> list[float]:
        scored, done, right = batch(prompts, completions, answer)
        values = [s[aggregate] if s[aggregate] is not None and (d or pay_unfinished) else 0.0
                  for s, d in zip(scored, done)]
        if correct_only and right is not None:
            values = [v * r for v, r in zip(values, right)]
        if log_metric is not None:
            _log(log_metric, scored, values, done, right)
        return values

    process_reward.__name__ = NAME
    process_reward.batch = batch
    return process_reward


def consistent(scored: list[dict], done: list[bool], right: list, aggregate: str = "min") -> list[bool]:
    """Whether each completion's outcome and process agree: a right answer whose steps the model trusts (the
    aggregate at least THRESHOLD), or a wrong one whose steps it doubts. An unfinished completion, or one without
    steps, has no process to trust: it agrees with a wrong answer."""
    from rloo_studio.inspect.process import THRESHOLD

    return [bool(r) == (d and (s[aggregate] or 0.0) >= THRESHOLD) for s, d, r in zip(scored, done, right)]


def filtered(fn: Callable, batch: BatchScores, aggregate: str = "min") -> Callable:
    """`fn` (any reward function) answering None for the completions whose outcome and process disagree (PROF,
    2025): when every reward of a completion is None, TRL's RLOO leaves it out of its group's leave-one-out baseline
    and gives it no advantage. The share left out is logged as process/filtered (once per batch, by the first)."""
    @functools.wraps(fn)
    def gated(prompts=None, completions=None, answer=None, log_metric=None, **kwargs):
        values = fn(prompts=prompts, completions=completions, answer=answer, log_metric=log_metric, **kwargs)
        scored, done, right = batch(prompts, completions, answer)
        keep = consistent(scored, done, right, aggregate)
        if log_metric is not None and fn.__name__ == NAME:
            log_metric("process/filtered", 1 - sum(keep) / max(len(keep), 1))
        return [v if k else None for v, k in zip(values, keep)]

    return gated


def _log(log_metric, scored: list[dict], values: list[float], done: list[bool], right: list | None) -> None:
    """What rloo/health.py's warnings read, beside TRL's own rewards/process_reward/mean."""
    n = max(len(scored), 1)
    log_metric("process/steps", sum(len(s["steps"]) for s in scored) / n)
    log_metric("process/doubted", sum(s["first_doubt"] is not None for s in scored) / n)
    log_metric("process/unfinished", sum(not d for d in done) / n)
    for name, keep in (("finished", True), ("unfinished", False)):
        paid = [v for v, d in zip(values, done) if d is keep]
        if paid:  # TRL averages a metric over the calls that logged it
            log_metric(f"process/{name}_reward", sum(paid) / len(paid))
    if right is not None:
        log_metric("process/accuracy", sum(right) / n)
