"""Measure a policy on held-out prompts with an `answer` column: format rate and accuracy."""
from __future__ import annotations

import json
from typing import Callable

from rloo_studio.core import bootstrap  # noqa: F401
from rloo_studio.core.answers import EXTRACTORS, matches
from rloo_studio.core.paths import DEMO_DATA, DEMO_MODEL
from rloo_studio.core.thinking import parse


def heldout_prompts(n: int | None = None) -> list[dict]:
    rows = [json.loads(x) for x in (DEMO_DATA / "prompts_heldout.jsonl").read_text().splitlines() if x.strip()]
    return rows[:n] if n else rows


def grade(response: str, answer, stopped: bool = True, answer_format: str = "last_number") -> dict:
    """Format and correctness of one whole response (sampling.Sample.response: the <think> that the
    chat template opened is written out). formatted: reasoning closed and generation stopped at EOS;
    correct: the answer after </think>, read in `answer_format` (answers.ANSWER_FORMATS), equals `answer`."""
    p = parse(response)
    correct = answer is not None and p.closed and matches(EXTRACTORS[answer_format](p.answer), answer)
    return {"formatted": p.closed and stopped and bool(p.answer), "correct": correct, "thinking": p.has_thinking}


def score_samples(samples, problems: list[dict], answer_format: str = "last_number") -> dict:
    grades = [grade(s.response or s.text, p.get("answer"), s.stopped, answer_format)
              for s, p in zip(samples, problems)]
    n = max(len(grades), 1)
    return {
        "n": len(grades),
        "format_rate": sum(g["formatted"] for g in grades) / n,
        "accuracy": sum(g["correct"] for g in grades) / n,
        "thinking_rate": sum(g["thinking"] for g in grades) / n,
    }


def evaluate_policy(model: str | None = None, adapter: str | None = None, problems: list[dict] | None = None,
                    n: int = 500, seed: int = 1234, max_new_tokens: int = 64, temperature: float = 1.0,
                    backend: str = "transformers", progress: Callable | None = None,
                    trust_remote_code: bool = False) -> dict:
    """Sample once per prompt at `temperature`; grade format (closed </think> + EOS) and the answer."""
    from rloo_studio.core.models import load_policy
    from rloo_studio.core.sampling import sample

    problems = problems or heldout_prompts(n)
    m, tok = load_policy(model or str(DEMO_MODEL), adapter, backend=backend, trust_remote_code=trust_remote_code)
    outs = sample(m, tok, [p["prompt"] for p in problems], max_new_tokens=max_new_tokens, temperature=temperature,
                  seed=seed, progress=progress)
    return score_samples(outs, problems)
