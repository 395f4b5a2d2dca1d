"""The bundled demo task: 3-digit addition word problems answered with <think> reasoning.

Used by scripts/build_demo.py (to make the demo model and data) and by `python -m
rloo_studio eval-demo` (to measure a model on the held-out prompts). No gradio, no torch.
"""
from __future__ import annotations

import random

from rloo_studio.core.answers import last_number  # noqa: F401  (the demo's answer format; grade() and the demo reward use it)
from rloo_studio.core.thinking import CLOSE, OPEN, parse

NAMES = ["Ana", "Ben", "Chen", "Dara", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jun"]
ITEMS = ["apples", "coins", "books", "stamps", "shells", "cards", "pens", "beads"]
TEMPLATES = [
    "What is {a} + {b}?",
    "Add {a} and {b}.",
    "Compute {a} + {b}.",
    "{name} has {a} {item} and gets {b} more. How many {item} now?",
    "A box holds {a} {item}. {b} {item} are added. How many {item} are in the box?",
]
NO_THINK_FRACTION = 0.15  # share of training targets that skip the reasoning (from scratch)
HALF_NO_THINK_FRACTION = 0.5  # the fine-tune after it: half skip, so the policy reasons about half the time
# What the demo policy must leave for the loop to teach (scripts/build_demo.py stops on it): it reasons on
# about half of its answers, and is right when it reasons; the answers without reasoning are the room that a
# reward model which learned "reason first" can fill (docs/DEMO_MODEL.md).
REASONING_SHARE = (0.45, 0.55)
ACCURACY_WHEN_REASONING = 0.85


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


def step_labels(prompt: str, response: str, answer=None) -> list[bool] | None:
    """Exact labels of a response's <think> steps on a demo addition: step k is right when steps 0..k all equal
    reasoning_steps(a, b)[0..k] (so once wrong, every later step is wrong; a step past the last digit is wrong).
    None when the prompt is not a demo addition (two numbers, and `answer`, when given, is their sum)."""
    ops = _operands(prompt)
    if len(ops) != 2 or (answer is not None and str(answer) != str(int(ops[0]) + int(ops[1]))):
        return None
    gold = reasoning_steps(int(ops[0]), int(ops[1]))
    labels, ok = [], True
    for k, step in enumerate(parse(response).steps):
        ok = ok and k < len(gold) and step.text == gold[k]
        labels.append(ok)
    return labels


def target_response(problem: dict, think: bool = True) -> str:
    a, b = (int(x) for x in _operands(problem["prompt"]))
    body = "\n\n".join(reasoning_steps(a, b)) if think else ""
    return f"<think>\n{body}\n</think>\n\nThe answer is {problem['answer']}."


def _operands(prompt: str) -> list[str]:
    return [w.strip(".?") for w in prompt.split() if w.strip(".?").isdigit()][:2]


def grade(response: str, answer: str | None, stopped: bool = True, start: str = "answer") -> dict:
    """Format and correctness of one sampled response (`start`: where the chat prompt left it,
    thinking.Template.start).

    formatted: reasoning closed with </think> and generation stopped at EOS (not cut off), each tag at most once
    (the parser reads '<think></think>3+9=12</think>…' leniently, as reasoning, but a person would not call it
    well formed).
    correct: the last number after </think> equals `answer`.
    """
    p = parse(response, start=start)
    once = response.count(OPEN) <= 1 and response.count(CLOSE) <= 1
    formatted = p.closed and stopped and bool(p.answer) and once
    correct = answer is not None and p.closed and last_number(p.answer) == str(answer)
    return {"formatted": formatted, "correct": correct, "thinking": p.has_thinking}


# -- demo preference pairs labeled by the known answer (a synthetic annotator, not a person) ------

ANSWER_KEY = "answer key (synthetic)"
"""Who labels the bundled demo pairs: the known answer, not a person. scripts/build_demo.py builds pairs.jsonl with
answer_key_pairs (slip and format kinds, below); answer_key_score ranks any two responses the same way."""


def answer_key_score(response: str, answer: str, stopped: bool = True) -> float:
    """How the answer key ranks one response: right first, then well formed, then reasoned."""
    g = grade(response, answer, stopped)
    return 2 * g["correct"] + g["formatted"] + 0.5 * g["thinking"]


def answer_key_pairs(prompt: str, answer: str, samples: list[tuple[str, bool]], rng: random.Random) -> list[dict]:
    """Preference pairs from one prompt's sampled responses [(text, stopped)], labeled by the known answer.

    The chosen side always reasons in <think>, closes it, stops and is correct. At most two pairs:
    - a "slip" pair: the rejected side also reasons and is well formed, but its answer is wrong (an
      arithmetic slip in a step, a dropped carry, or an answer that does not follow its steps) —
      only checking the arithmetic tells the two apart;
    - a "format" pair: the rejected side answers without reasoning (right or wrong).
    Each pair: {prompt, chosen, rejected, answer, kind: "slip" | "format"}."""
    graded = [(t, grade(t, answer, stopped)) for t, stopped in samples]
    ok = [(t, g) for t, g in graded if g["formatted"]]
    right = sorted({t for t, g in ok if g["thinking"] and g["correct"]})
    slips = sorted({t for t, g in ok if g["thinking"] and not g["correct"]})
    bare = sorted({t for t, g in ok if not g["thinking"]})
    out = []
    if right and slips:
        out.append({"prompt": prompt, "chosen": rng.choice(right), "rejected": rng.choice(slips), "answer": answer,
                    "kind": "slip"})
    if right and bare:
        out.append({"prompt": prompt, "chosen": rng.choice(right), "rejected": rng.choice(bare), "answer": answer,
                    "kind": "format"})
    return out
