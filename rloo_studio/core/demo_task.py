"""The bundled demo task: 3-digit addition word problems answered with <think> reasoning.

Used by scripts/build_demo.py (to make the demo model and data) and by `python -m
rloo_studio eval-demo` (to measure a model on the held-out prompts). No gradio, no torch.
"""
from __future__ import annotations

import random

from rloo_studio.core.answers import last_number  # noqa: F401  (the demo's answer format; grade() and the demo reward use it)
from rloo_studio.core.thinking import parse

NAMES = ["Ana", "Ben", "Chen", "Dara", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jun"]
ITEMS = ["apples", "coins", "books", "stamps", "shells", "cards", "pens", "beads"]
TEMPLATES = [
    "What is {a} + {b}?",
    "Add {a} and {b}.",
    "Compute {a} + {b}.",
    "{name} has {a} {item} and gets {b} more. How many {item} now?",
    "A box holds {a} {item}. {b} {item} are added. How many {item} are in the box?",
]
NO_THINK_FRACTION = 0.15  # share of training targets that skip the reasoning


def make_problem(rng: random.Random) -> dict:
    a, b = rng.randint(100, 999), rng.randint(100, 999)
    prompt = rng.choice(TEMPLATES).format(a=a, b=b, name=rng.choice(NAMES), item=rng.choice(ITEMS))
    return {"prompt": prompt, "answer": str(a + b)}


def reasoning_steps(a: int, b: int) -> list[str]:
    """One step per digit, units first: '7+5+0=12' (digit + digit + carry)."""
    steps, carry = [], 0
    for da, db in zip(reversed(str(a)), reversed(str(b))):
        s = int(da) + int(db) + carry
        steps.append(f"{da}+{db}+{carry}={s}")
        carry = s // 10
    return steps


def target_response(problem: dict, think: bool = True) -> str:
    a, b = (int(x) for x in _operands(problem["prompt"]))
    body = "\n\n".join(reasoning_steps(a, b)) if think else ""
    return f"<think>\n{body}\n</think>\n\nThe answer is {problem['answer']}."


def _operands(prompt: str) -> list[str]:
    return [w.strip(".?") for w in prompt.split() if w.strip(".?").isdigit()][:2]


def grade(response: str, answer: str | None, stopped: bool = True, start: str = "answer") -> dict:
    """Format and correctness of one sampled response (`start`: where the chat prompt left it,
    thinking.Template.start).

    formatted: reasoning closed with </think> and generation stopped at EOS (not cut off).
    correct: the last number after </think> equals `answer`.
    """
    p = parse(response, start=start)
    formatted = p.closed and stopped and bool(p.answer)
    correct = answer is not None and p.closed and last_number(p.answer) == str(answer)
    return {"formatted": formatted, "correct": correct, "thinking": p.has_thinking}
