"""Step labels from rollouts (Math-Shepherd): a step is right when continuations written from it reach the answer.

For prompts with a known answer (an `answer` column), the job samples responses from a policy, and from the end of
each of their <think> steps it samples `continuations` endings from a completer model (by default the policy; a
stronger one gives cleaner labels). A step is good when any ending reaches the right answer ('hard'), or at least
`soft_threshold` of them ('soft'); bad otherwise. The labels are stored under the annotator ROLLOUTS ("rollouts
(automatic)"), never mixed with a person's (label/steps.py). Prompts are done in batches, each committed with a
checkpoint marker after it, so Stop keeps what was done and Resume continues from the next batch with the same
seeds: a resumed run labels what the uninterrupted one would have.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from rloo_studio.core.answers import ANSWER_FORMATS, EXTRACTORS, matches
from rloo_studio.core.errors import ConfigError
from rloo_studio.core.job_config import MAX_SEED
from rloo_studio.core.paths import DEMO_MODEL
from rloo_studio.core.thinking import parse

RULES = ("hard", "soft")


@dataclass
class RolloutConfig:
    policy: str = field(default=str(DEMO_MODEL), metadata={"help": (
        "The model whose responses get step labels: a local folder or a Hugging Face hub id already in the local "
        "cache. Label what the policy you will train writes.")})
    policy_run: str = field(default="", metadata={"help": (
        "An RLOO run whose trained adapter goes on the policy (empty: the bare policy).")})
    completer: str = field(default="", metadata={"help": (
        "The model that writes the endings from each step (empty: the policy itself). A model that rarely slips "
        "gives cleaner labels: an ending that fails from a right step calls the step wrong.")})
    trust_remote_code: bool = field(default=False, metadata={"help": (
        "Run Python code shipped with the models; only for models whose source you trust.")})
    prompt_set: str = field(default="demo-train", metadata={"help": (
        "The prompts (a prompt set with an answer column: the endings are checked against it).")})
    prompts: int = field(default=100, metadata={"help": "How many prompts of the set (its first ones)."})
    samples: int = field(default=2, metadata={"help": "Responses sampled from the policy per prompt."})
    continuations: int = field(default=4, metadata={"help": (
        "Endings written from each step (N): more give steadier labels and cost time in proportion.")})
    rule: str = field(default="hard", metadata={"choices": RULES, "help": (
        "hard: a step is good when any ending reaches the answer; soft: when at least soft_threshold of them do.")})
    soft_threshold: float = field(default=0.5, metadata={"help": "The share of endings a soft label needs."})
    max_new_tokens: int = field(default=96, metadata={"help": "Most tokens of a response, and of an ending."})
    temperature: float = field(default=1.0, metadata={"help": "Sampling temperature of responses and endings."})
    answer_format: str = field(default="last_number", metadata={"choices": ANSWER_FORMATS, "help": (
        "How an ending's answer after </think> is read: last_number, boxed or hash.")})
    batch_prompts: int = field(default=10, metadata={"help": (
        "Prompts done per batch; each batch is committed with a checkpoint that Resume continues after.")})
    seed: int = field(default=0, metadata={"help": "Sampling seed: the same seed and settings label the same."})
    enable_thinking: bool = field(default=True, metadata={"help": (
        "Hybrid chat templates (Qwen3): the policy reasons in <think> (there is nothing to label otherwise).")})

    def validate(self) -> None:
        if self.rule not in RULES:
            raise ConfigError(f"rule must be one of {', '.join(RULES)}, got {self.rule!r}.")
        if self.answer_format not in ANSWER_FORMATS:
            raise ConfigError(f"answer_format must be one of {', '.join(ANSWER_FORMATS)}, got {self.answer_format!r}.")
        if min(self.prompts, self.samples, self.continuations, self.max_new_tokens, self.batch_prompts) < 1:
            raise ConfigError("prompts, samples, continuations, max_new_tokens and batch_prompts must be at least 1.")
        if not 0 < self.soft_threshold <= 1:
            raise ConfigError(f"soft_threshold must be above 0 and at most 1, got {self.soft_threshold}.")
        if self.temperature <= 0:
            raise ConfigError(f"temperature must be above 0 (endings must vary), got {self.temperature}.")
        if not 0 <= self.seed <= MAX_SEED:
            raise ConfigError(f"seed must be a whole number from 0 to {MAX_SEED}, got {self.seed}.")


def launch_check(ws, cfg: RolloutConfig) -> list[dict]:
    """The prompts the job would label, or a StudioError in words (no answer column, a model not there)."""
    from rloo_studio.core.model_options import check_remote_code
    from rloo_studio.core.models import resolve
    from rloo_studio.label.prompts import load_prompts
    from rloo_studio.runs.catalog import find_run
    from rloo_studio.runs.jobs import policy_kinds, title

    cfg.validate()
    rows = load_prompts(ws, cfg.prompt_set)[:cfg.prompts]
    if not all("answer" in r for r in rows):
        raise ConfigError(f"prompt set {cfg.prompt_set!r} has no answer column: the endings cannot be checked. "
                          "Import prompts with an answer column.")
    for name in (cfg.policy, cfg.completer):
        if name.strip():
            check_remote_code(resolve(name), cfg.trust_remote_code)
    if cfg.policy_run.strip() and find_run(ws, cfg.policy_run)["kind"] not in policy_kinds():
        raise ConfigError(f"policy_run {cfg.policy_run!r} is not a policy run: give the id of a "
                          f"{' or '.join(title(k) for k in policy_kinds())} run, or leave it empty.")
    return rows


def verdicts(endings: list[list[str]], answer, cfg: RolloutConfig) -> tuple[list[int], list[float]]:
    """(verdict per step, share of its endings that reached the answer)."""
    shares = [sum(reaches(e, answer, cfg.answer_format) for e in ends) / len(ends) for ends in endings]
    good = [s > 0 if cfg.rule == "hard" else s >= cfg.soft_threshold for s in shares]
    return [1 if g else -1 for g in good], shares


def reaches(response: str, answer, answer_format: str) -> bool:
    p = parse(response)
    return p.closed and matches(EXTRACTORS[answer_format](p.answer), answer)


def label_from_rollouts(cfg: RolloutConfig, ctx) -> str:
    from rloo_studio.runs.checkpoints import checkpoint_step, mark_checkpoint
    from rloo_studio.runs.runner import resume_point

    rows = launch_check(ctx.ws, cfg)
    start = checkpoint_step(resume_point(ctx))  # prompts already done (their labels are stored)
    policy, completer = _models(cfg, ctx)
    made = {"responses": 0, "steps": 0, "right": 0}
    for i in range(start, len(rows), cfg.batch_prompts):
        if ctx.should_stop():
            break
        batch = rows[i:i + cfg.batch_prompts]
        for key, n in _label_batch(ctx, cfg, batch, policy, completer, seed=cfg.seed + i).items():
            made[key] += n
        done = i + len(batch)
        mark_checkpoint(ctx, done)  # after the batch's labels committed: Resume starts after it
        ctx.metric({"step": done, "responses": made["responses"], "steps": made["steps"],
                    "right_share": made["right"] / made["steps"] if made["steps"] else 0.0})
        ctx.set_progress(done, len(rows), "prompts")
    share = f"{made['right'] / made['steps']:.0%}" if made["steps"] else "none"
    return (f"{'stopped' if ctx.should_stop() else 'finished'}: {made['steps']} steps of {made['responses']} "
            f"responses labeled from rollouts in this part ({share} right)")


def _models(cfg: RolloutConfig, ctx):
    from rloo_studio.core.models import load_policy
    from rloo_studio.runs.catalog import adapter_dir

    adapter = adapter_dir(ctx.ws, cfg.policy_run.strip()) if cfg.policy_run.strip() else None
    ctx.log(f"loading the policy {cfg.policy}" + (f" with the adapter of {cfg.policy_run}" if adapter else ""))
    policy = load_policy(cfg.policy, adapter, trust_remote_code=cfg.trust_remote_code)
    if not cfg.completer.strip():
        return policy, policy
    ctx.log(f"loading the completer {cfg.completer}")
    return policy, load_policy(cfg.completer, None, trust_remote_code=cfg.trust_remote_code)


def _label_batch(ctx, cfg: RolloutConfig, batch: list[dict], policy, completer, seed: int) -> dict:
    """Sample the batch's responses, write endings from each step, store the labels; returns what was made."""
    from rloo_studio.core.sampling import continue_responses, sample
    from rloo_studio.label.steps import write_rollout_labels

    (pm, ptok), (cm, ctok) = policy, completer
    samples = sample(pm, ptok, [r["prompt"] for r in batch], n=cfg.samples, max_new_tokens=cfg.max_new_tokens,
                     temperature=cfg.temperature, seed=seed, enable_thinking=cfg.enable_thinking)
    todo = []  # (row, response, its step prefixes)
    for k, s in enumerate(samples):
        steps = parse(s.response).steps
        if steps:
            todo.append((batch[k // cfg.samples], s.response, [s.response[:st.end] for st in steps]))
    starts = [(row["prompt"], prefix) for row, _, prefixes in todo for prefix in prefixes]
    ends = continue_responses(cm, ctok, starts, n=cfg.continuations, max_new_tokens=cfg.max_new_tokens,
                              temperature=cfg.temperature, seed=seed + 1_000_003, enable_thinking=cfg.enable_thinking)
    made, at = {"responses": 0, "steps": 0, "right": 0}, 0
    for row, response, prefixes in todo:
        endings = [[e.response for e in ends[at + j]] for j in range(len(prefixes))]
        at += len(prefixes)
        verdict, shares = verdicts(endings, row["answer"], cfg)
        extra = {key: v for key, v in row.items() if key != "prompt"}
        write_rollout_labels(ctx.ws, row["prompt"], extra, response, verdict, shares, cfg.prompt_set,
                             f"rollouts:{ctx.run_id}")
        made["responses"] += 1
        made["steps"] += len(verdict)
        made["right"] += sum(v > 0 for v in verdict)
    return made
