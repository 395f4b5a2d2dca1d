"""Shared helpers of the process-reward-model study (docs/PRM.md): problem sets, exact step labels, sampling from
prefixes, grading. The scripts here are the study's, run as it was run (2026-12-06): each writes its data and results
under PRM_STUDY_DIR (default /tmp/prm_study), never into the repository."""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

MAIN = Path(__file__).resolve().parents[2]
LAB = Path(os.environ.get("PRM_STUDY_DIR", "/tmp/prm_study"))
LAB.mkdir(parents=True, exist_ok=True)
sys.path.insert(0, str(MAIN))
sys.path.insert(0, str(MAIN / "scripts"))

import torch  # noqa: E402

torch.set_num_threads(1)

from rloo_studio.core import demo_task as demo  # noqa: E402
from rloo_studio.core.answers import last_number  # noqa: E402
from rloo_studio.core.thinking import parse  # noqa: E402

DEMO_MODEL = MAIN / "rloo_studio" / "assets" / "demo-model"


def problem_sets(seed: int = 0) -> dict:
    """build_demo.make_problems(0): heldout (== rloo_studio/assets/demo-data/prompts_heldout.jsonl),
    rl_train (== prompts_train), train (20,000), validation (200)."""
    import build_demo

    return build_demo.make_problems(seed)


def operands(prompt: str) -> tuple[int, int]:
    a, b = demo._operands(prompt)
    return int(a), int(b)


def exact_labels(prompt: str, response: str) -> dict:
    """Exact step labels of a response (text after the chat prompt, starting '<think>').

    steps: the <think> steps (blank-line split). A step k is right iff steps[0..k] all equal
    demo_task.reasoning_steps(a, b)[0..k] (so labels are monotone: once wrong, every later step is wrong;
    a 4th+ step is wrong). first_wrong: index of the first wrong step or None.
    correct: the answer after </think> is a+b. complete: 3 right steps."""
    a, b = operands(prompt)
    gold = demo.reasoning_steps(a, b)
    p = parse(response)
    steps = [s.text for s in p.steps]
    labels = demo.step_labels(prompt, response)
    first = next((k for k, lab in enumerate(labels) if not lab), None)
    correct = p.closed and last_number(p.answer) == str(a + b)
    return {"steps": steps, "spans": [(s.start, s.end) for s in p.steps], "labels": labels, "first_wrong": first,
            "correct": bool(correct), "closed": p.closed, "complete": len(steps) == len(gold) and all(labels)}


def kind(ex: dict) -> str:
    """clean (right, steps right), slip (wrong, a wrong step), answer_slip (wrong, steps right),
    lucky (right answer, a wrong step), nothink (no steps)."""
    if not ex["steps"]:
        return "nothink"
    if ex["correct"]:
        return "clean" if ex["first_wrong"] is None else "lucky"
    return "slip" if ex["first_wrong"] is not None else "answer_slip"


def load_causal(path):
    from transformers import AutoTokenizer, Qwen3ForCausalLM

    tok = AutoTokenizer.from_pretrained(str(path))
    m = Qwen3ForCausalLM.from_pretrained(str(path)).eval()
    return m, tok


def chat(tok, prompt: str) -> str:
    return tok.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True)


@torch.no_grad()
def generate(model, tok, texts: list[str], max_new_tokens: int = 64, temperature: float = 1.0, batch_size: int = 256,
             seed: int | None = None) -> list[tuple[str, bool]]:
    """Continue each full text (chat prompt + any partial response); returns (decoded continuation, stopped)."""
    if seed is not None:
        torch.manual_seed(seed)
    eos, pad = tok.eos_token_id, tok.pad_token_id
    side, tok.padding_side = tok.padding_side, "left"
    out = []
    try:
        for i in range(0, len(texts), batch_size):
            chunk = texts[i:i + batch_size]
            enc = tok(chunk, return_tensors="pt", padding=True, add_special_tokens=False)
            gen = model.generate(**enc, do_sample=temperature > 0, temperature=temperature if temperature > 0 else None,
                                 top_p=1.0, max_new_tokens=max_new_tokens, eos_token_id=eos, pad_token_id=pad)
            for row in gen[:, enc["input_ids"].shape[1]:].tolist():
                stopped = eos in row
                ids = row[:row.index(eos) + 1] if stopped else row
                out.append((tok.decode(ids, skip_special_tokens=True), stopped))
    finally:
        tok.padding_side = side
    return out


def sample_responses(model, tok, problems: list[dict], n: int = 1, seed: int = 1234, temperature: float = 1.0,
                     max_new_tokens: int = 64, batch_size: int = 256) -> list[dict]:
    """n responses per problem (problem order), each with exact labels."""
    texts = [chat(tok, p["prompt"]) for p in problems for _ in range(n)]
    gens = generate(model, tok, texts, max_new_tokens, temperature, batch_size, seed)
    rows = []
    for j, (text, stopped) in enumerate(gens):
        p = problems[j // n]
        ex = exact_labels(p["prompt"], text)
        rows.append({"prompt": p["prompt"], "answer": p["answer"], "response": text, "stopped": stopped,
                     "formatted": demo.grade(text, p["answer"], stopped)["formatted"], **ex, "kind": kind(ex)})
    return rows


def summarize(rows: list[dict]) -> dict:
    n = max(len(rows), 1)
    think = [r for r in rows if r["steps"]]
    wrong = [r for r in rows if not r["correct"]]
    kinds = {}
    for r in rows:
        kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
    return {"n": len(rows), "accuracy": round(sum(r["correct"] for r in rows) / n, 4),
            "reasoning_rate": round(len(think) / n, 4), "format_rate": round(sum(r["formatted"] for r in rows) / n, 4),
            "accuracy_reasoning": round(sum(r["correct"] for r in think) / max(len(think), 1), 4),
            # slips per answer: wrong steps that start an error chain, i.e. responses with a first wrong step
            "slip_rate": round(sum(r["first_wrong"] is not None for r in rows) / n, 4),
            "wrong_steps_per_answer": round(sum(sum(not lab for lab in r["labels"]) for r in rows) / n, 3),
            "mean_steps": round(sum(len(r["steps"]) for r in rows) / n, 3),
            "kinds": kinds, "n_wrong": len(wrong)}


def write_jsonl(path, rows):
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text("".join(json.dumps(r) + "\n" for r in rows))


def read_jsonl(path):
    return [json.loads(x) for x in Path(path).read_text().splitlines() if x.strip()]


class Timer:
    def __init__(self):
        self.t = time.time()

    def __call__(self):
        return round(time.time() - self.t, 1)
