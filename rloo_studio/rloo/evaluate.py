"""Measure a policy on held-out prompts with an `answer` column: format rate and accuracy, overall and
split by whether the answer reasons (a reward model that learned only "reason first" moves the share that
reasons; only a check of the answer moves the accuracy among those that do)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from rloo_studio.core.answers import EXTRACTORS, matches
from rloo_studio.core.demo_task import step_labels
from rloo_studio.core.paths import DEMO_DATA, DEMO_MODEL
from rloo_studio.core.thinking import parse


def heldout_prompts(n: int | None = None) -> list[dict]:
    rows = [json.loads(x) for x in (DEMO_DATA / "prompts_heldout.jsonl").read_text().splitlines() if x.strip()]
    return rows[:n] if n else rows


def grade(response: str, answer, stopped: bool = True, answer_format: str = "last_number",
          prompt: str | None = None) -> dict:
    """Format and correctness of one whole response (sampling.Sample.response: the <think> that the
    chat template opened is written out). formatted: reasoning closed and generation stopped at EOS;
    correct: the answer after </think>, read in `answer_format` (answers.ANSWER_FORMATS), equals `answer`.
    With the prompt of a demo addition and reasoning: wrong_steps, its steps that are not the exact ones
    (demo_task.step_labels)."""
    p = parse(response)
    correct = answer is not None and p.closed and matches(EXTRACTORS[answer_format](p.answer), answer)
    g = {"formatted": p.closed and stopped and bool(p.answer), "correct": correct, "thinking": p.has_thinking}
    labels = step_labels(prompt, response, answer) if prompt is not None and p.steps else None
    if labels is not None:
        g["wrong_steps"] = labels.count(False)
    return g


def score_samples(samples, problems: list[dict], answer_format: str = "last_number") -> dict:
    grades = [grade(s.response or s.text, p.get("answer"), s.stopped, answer_format, p.get("prompt"))
              for s, p in zip(samples, problems)]
    return split_figures(grades)


def split_figures(grades: list[dict]) -> dict:
    """n, format_rate, accuracy, thinking_rate (the share of answers that reason), and the accuracy among the
    answers that reason and among those that do not (None where there are none), with their counts; where the
    steps could be checked (demo additions): slip_rate, the share of those reasoning answers with a wrong step, and
    wrong_steps_per_answer among them."""
    reasoning = [g for g in grades if g["thinking"]]
    direct = [g for g in grades if not g["thinking"]]
    n = max(len(grades), 1)
    return {
        "n": len(grades),
        "format_rate": sum(g["formatted"] for g in grades) / n,
        "accuracy": sum(g["correct"] for g in grades) / n,
        "thinking_rate": len(reasoning) / n,
        "n_reasoning": len(reasoning),
        "accuracy_reasoning": _rate(reasoning),
        "accuracy_not_reasoning": _rate(direct),
        **_slips([g for g in reasoning if "wrong_steps" in g]),
    }


def _slips(checked: list[dict]) -> dict:
    if not checked:
        return {}
    return {"slip_rate": sum(g["wrong_steps"] > 0 for g in checked) / len(checked),
            "wrong_steps_per_answer": sum(g["wrong_steps"] for g in checked) / len(checked)}


def _rate(grades: list[dict]) -> float | None:
    return sum(g["correct"] for g in grades) / len(grades) if grades else None


def evaluate_policy(model: str | None = None, adapter: str | None = None, problems: list[dict] | None = None,
                    n: int = 500, seed: int = 1234, max_new_tokens: int = 64, temperature: float = 1.0,
                    backend: str = "transformers", progress: Callable | None = None,
                    trust_remote_code: bool = False) -> dict:
    """Sample once per prompt at `temperature`; grade format (closed </think> + EOS) and the answer."""
    from rloo_studio.core import bootstrap  # noqa: F401  (unsloth before transformers; here, so that the
    from rloo_studio.core.models import load_policy  # figures and words above load no torch: `runs show`)
    from rloo_studio.core.sampling import sample

    problems = problems or heldout_prompts(n)
    m, tok = load_policy(model or str(DEMO_MODEL), adapter, backend=backend, trust_remote_code=trust_remote_code)
    outs = sample(m, tok, [p["prompt"] for p in problems], max_new_tokens=max_new_tokens, temperature=temperature,
                  seed=seed, progress=progress)
    return score_samples(outs, problems)


# -- before / after: eval.json of an RLOO run, and what it says was learned ----------------------

EVAL_FILE = "eval.json"  # {"before": figures, "after": figures, "reward": reward_trend(...)}
DROP = 0.05  # a fall in accuracy among reasoning answers worth saying in words (a 200-prompt rate moves ~3 points)


def read_eval(ws, run_id: str) -> dict:
    return read_eval_file(ws.run_dir(run_id))


def read_eval_file(run_dir) -> dict:
    try:
        return json.loads((Path(run_dir) / EVAL_FILE).read_text())
    except (OSError, ValueError):
        return {}


def reward_trend(records: list[dict], window: int = 5) -> dict | None:
    """The training reward over the first and the last `window` logged steps: a reward model's raw score where
    the job logged one (rewards/<name>/raw_mean; its normalized reward averages 0 over every batch by
    construction), else TRL's weighted total reward. None before two logged steps."""
    steps = [r for r in records if isinstance(r.get("reward"), (int, float))]
    raw = sorted({k for r in steps for k in r if k.startswith("rewards/") and k.endswith("/raw_mean")})
    key = raw[0] if raw else "reward"
    values = [r[key] for r in steps if isinstance(r.get(key), (int, float))]
    if len(values) < 2:
        return None
    w = max(1, min(window, len(values) // 2))
    return {"key": key, "first": sum(values[:w]) / w, "last": sum(values[-w:]) / w, "steps": len(values)}


def _pct(v) -> str:
    return "–" if v is None else f"{v:.1%}"


def figures_line(m: dict) -> str:
    """'accuracy 48.0% · reasons 55.0% · right 87.3% of the time when it reasons, 0.0% when it does not'."""
    line = (f"accuracy {_pct(m['accuracy'])} · reasons {_pct(m.get('thinking_rate'))} · right "
            f"{_pct(m.get('accuracy_reasoning'))} of the time when it reasons, {_pct(m.get('accuracy_not_reasoning'))} "
            "when it does not")
    if m.get("slip_rate") is not None:
        line += (f" · a wrong step in {_pct(m['slip_rate'])} of its reasoning answers "
                 f"({m['wrong_steps_per_answer']:.2f} per answer)")
    return line


def learned(ev: dict) -> str:
    """In words, what the run's before/after (eval.json) says the policy learned; '' without both."""
    b, a, trend = ev.get("before"), ev.get("after"), ev.get("reward")
    if not (b and a):
        return ""
    gain = (a["accuracy"] - b["accuracy"]) * 100
    rb, ra = b.get("accuracy_reasoning"), a.get("accuracy_reasoning")
    to_reason = a.get("thinking_rate", 0) - b.get("thinking_rate", 0) >= DROP
    rose = trend is not None and trend["last"] > trend["first"]
    worse = rb is not None and ra is not None and rb - ra >= DROP
    words = [f"Held-out accuracy {b['accuracy']:.1%} → {a['accuracy']:.1%} ({gain:+.1f} points)."]
    if worse and (rose or to_reason):
        what = (f"The policy learned to reason ({b['thinking_rate']:.0%} → {a['thinking_rate']:.0%} of its answers)"
                if to_reason else "The reward rose")
        words.append(f"{what}, but its arithmetic got worse: {rb:.0%} → {ra:.0%} among reasoning answers.")
    elif to_reason:
        kept = "" if rb is None or ra is None else f"; right {rb:.0%} → {ra:.0%} of the time when it reasons"
        words.append(f"The policy learned to reason: {b['thinking_rate']:.0%} → {a['thinking_rate']:.0%} of its "
                     f"answers{kept}.")
    elif rb is not None and ra is not None and ra - rb >= DROP:
        words.append(f"Its arithmetic improved: {rb:.0%} → {ra:.0%} right among reasoning answers.")
    sb, sa = b.get("slip_rate"), a.get("slip_rate")
    if sb is not None and sa is not None and abs(sa - sb) >= DROP:
        words.append(f"Its reasoning slips {'less' if sa < sb else 'more'}: a wrong step in {sb:.0%} → {sa:.0%} of "
                     f"its reasoning answers ({b['wrong_steps_per_answer']:.2f} → {a['wrong_steps_per_answer']:.2f} "
                     "wrong steps per answer).")
    return " ".join(words)


EVAL_COLUMNS = (("accuracy", "accuracy"), ("reasons", "thinking_rate"),
                ("right when it reasons", "accuracy_reasoning"), ("right when it does not", "accuracy_not_reasoning"))
SLIP_COLUMNS = (("reasoning answers with a wrong step", "slip_rate"),
                ("wrong steps per answer", "wrong_steps_per_answer"))


def eval_rows(ev: dict) -> tuple[list[str], list[list[str]]]:
    """(headers, rows) of the job's own held-out measurement (eval.json): one row per figure (accuracy overall, the
    share of answers that reason, the accuracy among those that do and do not, and where the steps were checked the
    slips), with its value before, after and the change: a narrow table, for the live run's column."""
    b, a = ev.get("before"), ev.get("after")
    if not b:
        return [], []
    figures = EVAL_COLUMNS + (SLIP_COLUMNS if b.get("slip_rate") is not None else ())
    headers = [f"held-out, n={b['n']}", "before training", *(["after", "change"] if a else [])]
    rows = [[title, _cell(k, b.get(k)), *([_cell(k, a.get(k)), _points(b.get(k), a.get(k), k)] if a else [])]
            for title, k in figures]
    return headers, rows


def _cell(key: str, v) -> str:
    return "–" if v is None else f"{v:.2f}" if key == "wrong_steps_per_answer" else _pct(v)


def _points(before, after, key: str = "") -> str:
    if before is None or after is None:
        return "–"
    if key == "wrong_steps_per_answer":
        return f"{round(after - before, 2) + 0.0:+.2f}"  # + 0.0: a change that rounds to nothing is +0.00, not -0.00
    return f"{round((after - before) * 100, 1) + 0.0:+.1f} points"


def run_show(run_dir) -> dict:
    """What `runs show` adds for an RLOO run: the reward model against the rule rewards over its latest
    completions, its before / after with what it learned in words (eval.json), and the steps with a token view."""
    from rloo_studio.reward.blind import run_figures
    from rloo_studio.rloo.tokens import recorded

    ev = read_eval_file(run_dir)
    return {**run_figures(run_dir), **({"before_after": {**ev, "learned": learned(ev)}} if ev else {}),
            "token_view_steps": sorted(recorded(Path(run_dir)))}
