"""Before / after for an RLOO run: the same held-out prompts answered by the base and the trained
policy, at the run's temperature and length with a fixed seed; eval.json in the run folder."""
from __future__ import annotations

import dataclasses
import json

from rloo_studio.core.errors import ConfigError
from rloo_studio.core.models import load_policy
from rloo_studio.core.sampling import sample
from rloo_studio.label.prompts import load_prompts
from rloo_studio.rloo.config import RlooJobConfig, run_config
from rloo_studio.rloo.evaluate import EVAL_FILE, figures_line, read_eval, reward_trend, score_samples  # noqa: F401
from rloo_studio.runs.catalog import adapter_dir
from rloo_studio.runs.runner import RunContext, read_metrics


def eval_problems(ws, cfg: RlooJobConfig) -> list[dict]:
    return load_prompts(ws, cfg.eval_prompt_set)[: cfg.eval_prompts]


def answer_prompts(model, tok, problems: list[dict], cfg: RlooJobConfig, should_stop=None):
    """Sample one response per problem at the run's temperature and length, with a fixed seed."""
    was_training = model.training
    model.eval()
    try:
        return sample(model, tok, [p["prompt"] for p in problems], max_new_tokens=cfg.max_completion_length,
                      temperature=cfg.temperature, seed=cfg.eval_seed, should_stop=should_stop,
                      enable_thinking=cfg.enable_thinking)
    finally:
        model.train(was_training)


def summary(m: dict) -> str:
    return f"{figures_line(m)}; format {m['format_rate']:.1%} on {m['n']} held-out prompts"


def evaluate_into(ctx: RunContext, cfg: RlooJobConfig, model, tok, when: str) -> dict:
    """Score the policy on held-out prompts; record it under `when` in eval.json (kept across resume), and
    after training the reward's trend over the run (evaluate.reward_trend), so eval.json says alone whether the
    reward rose while the accuracy moved."""
    path = ctx.dir / EVAL_FILE
    data = read_eval(ctx.ws, ctx.run_id)
    if when == "before" and "before" in data:  # a resumed run keeps its first measurement
        return data["before"]
    ctx.log(f"answering {cfg.eval_prompts} held-out prompts ({when})")
    problems = eval_problems(ctx.ws, cfg)
    outs = answer_prompts(model, tok, problems, cfg)
    m = score_samples(outs, problems, cfg.answer_format)
    m["summary"] = summary(m)
    data[when] = m
    if when == "after":
        data["reward"] = reward_trend(read_metrics(ctx.dir))
    path.write_text(json.dumps(data, indent=1))
    ctx.log(f"{when}: {m['summary']}")
    return m


def compare(ws, run_id: str, n: int = 50) -> dict:
    """The same held-out prompts answered by the base and the trained policy of a run.

    {'base': metrics, 'trained': metrics, 'rows': [{prompt, answer, base, trained}]}; one model
    load: the base is the trained model with its adapter switched off.
    """
    cfg = run_config(ws, run_id)
    ad = adapter_dir(ws, run_id)
    if not (ad / "adapter_config.json").exists():
        raise ConfigError(f"run {run_id} has no saved adapter yet; wait until it stops or finishes")
    cfg = dataclasses.replace(cfg, eval_prompts=n)
    problems = eval_problems(ws, cfg)
    model, tok = load_policy(cfg.model, ad, of_run=True)  # 4-bit and trust as the run was trained
    trained = answer_prompts(model, tok, problems, cfg)
    with model.disable_adapter():
        before = answer_prompts(model, tok, problems, cfg)
    rows = [{"prompt": p["prompt"], "answer": p.get("answer"), "base": b.response, "trained": t.response}
            for p, b, t in zip(problems, before, trained)]
    return {"base": score_samples(before, problems, cfg.answer_format),
            "trained": score_samples(trained, problems, cfg.answer_format), "rows": rows}
