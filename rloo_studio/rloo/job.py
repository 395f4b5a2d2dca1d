"""RLOO job: a typed config -> TRL RLOOTrainer on a prompt set -> LoRA adapter in the run folder.

The run folder gets, besides the runner's files: samples.jsonl (every completion with each
reward, the weighted total, the leave-one-out advantage, length and a truncated flag),
eval.json (before/after on held-out prompts when eval_prompts > 0), checkpoints/, adapter/.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field

from rloo_studio.core import bootstrap  # noqa: F401  (unsloth before trl)
from rloo_studio.core.errors import ConfigError  # noqa: E402
from rloo_studio.core.models import LoraSpec
from rloo_studio.core.paths import DEMO_MODEL
from rloo_studio.rloo.compare import evaluate_into
from rloo_studio.rloo.samples import SamplesCallback
from rloo_studio.runs.runner import RunContext, resume_point

TRL_REWARDS = ("accuracy", "reasoning_accuracy", "soft_overlong", "repetition_penalty")
"""From TRL's reward library (trl.rewards): accuracy_reward and reasoning_accuracy_reward (math-verify,
need a `solution` column), get_soft_overlong_punishment, get_repetition_penalty_reward."""
RULE_REWARDS = ("correctness", "think_format", "answer_present", *TRL_REWARDS)
SOLUTION_REWARDS = ("accuracy", "reasoning_accuracy")
REWARD_MODEL = "reward_model"
CUSTOM_PREFIX = "custom:"
LABELED_PAIRS = "labeled-pairs"  # prompt_set value: the prompts of the labeled preference pairs


@dataclass
class RlooJobConfig:
    model: str = str(DEMO_MODEL)
    """Policy: a local folder or a hub id already in the local cache."""
    backend: str = "auto"
    """auto (Unsloth when available), unsloth, or transformers (plain transformers + PEFT)."""
    load_in_4bit: bool = False
    """Load the base weights in 4-bit (bitsandbytes NF4)."""
    trust_remote_code: bool = False
    """Run Python code shipped with the model (auto_map in its config). Off by default: that code runs on
    this machine with your permissions, so tick it only for a model whose source you trust."""
    lora: LoraSpec = field(default_factory=LoraSpec)
    """LoRA adapter on the policy."""
    prompt_set: str = "demo-train"
    """A prompt set in the workspace, or 'labeled-pairs'; extra columns (answer, ...) reach the rewards."""
    rewards: list[str] = field(default_factory=lambda: ["correctness", "think_format"])
    """Reward functions: correctness, think_format, answer_present, TRL's accuracy, reasoning_accuracy (math-verify,
    needs a solution column), soft_overlong, repetition_penalty; reward_model, custom:FILE.py[:FUNCTION]."""
    reward_weights: list[float] = field(default_factory=lambda: [1.0, 0.2])
    """One weight per reward function (RLOOConfig.reward_weights)."""
    reward_model_run: str = ""
    """Run id of a trained reward-model run; needed by the reward_model reward."""
    reward_model_normalize: bool = True
    """Standardize reward-model scores over each generation batch (its raw scale is arbitrary)."""
    reward_model_clip: list[float] | None = field(default_factory=lambda: [-3.0, 3.0])
    """[low, high] to clip the reward-model reward after normalizing, or None."""
    reward_model_batch_size: int = 16
    """Completions scored per reward-model forward pass."""
    num_generations: int = 4
    """Completions per prompt (k, 2-16); the leave-one-out baseline needs at least 2."""
    beta: float = 0.05
    """KL penalty coefficient; 0 loads no reference model."""
    learning_rate: float = 5e-4
    optim: str = "adamw_torch"
    """Optimizer name as in transformers (adamw_8bit saves memory on a GPU)."""
    max_completion_length: int = 64
    """Completions are cut here; a cut before </think> earns no answer reward."""
    temperature: float = 1.0
    per_device_train_batch_size: int = 16
    """Completions (not prompts) per device per step; a multiple of num_generations."""
    gradient_accumulation_steps: int = 1
    max_steps: int = 50
    seed: int = 0
    normalize_advantages: bool = False
    mask_truncated_completions: bool = False
    reward_clip_range: list[float] | None = None
    """[low, high] to clip the weighted total reward, or None."""
    save_steps: int = 25
    """Checkpoint every N steps (resume starts from the last one)."""
    logging_steps: int = 1
    eval_prompts: int = 0
    """Before/after: answer this many prompts of eval_prompt_set before and after training (0: skip)."""
    eval_prompt_set: str = "demo-heldout"
    eval_seed: int = 1234
    enable_thinking: bool = True
    """Hybrid chat templates (Qwen3): the policy reasons in <think> before answering (False: the template closes an
    empty block and completions are answers). Goes to TRL as chat_template_kwargs; the rewards, the reward model
    and the before/after read completions the same way. Templates without the switch ignore it."""
    answer_format: str = "last_number"
    """How the correctness reward and the before/after read the answer after </think>: last_number (the last number),
    boxed (the last \\boxed{}), or hash ('#### N', GSM8K)."""
    repetition_ngram: int = field(default=3, metadata={"form": False})
    """repetition_penalty: n-gram size of TRL's get_repetition_penalty_reward (a reward of -1 x the share of
    repeated n-grams)."""
    overlong_cache: int = field(default=0, metadata={"form": False})
    """soft_overlong: completions longer than max_completion_length - overlong_cache tokens lose up to 1 (TRL's
    get_soft_overlong_punishment, DAPO); 0 takes a quarter of max_completion_length."""

    def validate(self) -> None:
        if not 2 <= self.num_generations <= 16:
            raise ConfigError(f"num_generations must be between 2 and 16 (got {self.num_generations}): RLOO compares "
                              "each completion with the others of its prompt.")
        if self.per_device_train_batch_size % self.num_generations:
            raise ConfigError(
                f"per_device_train_batch_size ({self.per_device_train_batch_size}) must be a multiple of "
                f"num_generations ({self.num_generations}); try {self.num_generations * max(1, self.per_device_train_batch_size // self.num_generations)}."
            )
        if self.learning_rate <= 0:
            raise ConfigError(f"learning_rate must be positive, got {self.learning_rate}.")
        if self.max_completion_length < 1:
            raise ConfigError(f"max_completion_length must be at least 1, got {self.max_completion_length}.")
        if self.max_steps < 1:
            raise ConfigError(f"max_steps must be at least 1, got {self.max_steps}.")
        if self.beta < 0:
            raise ConfigError(f"beta must be 0 or more, got {self.beta}.")
        if self.temperature <= 0:
            raise ConfigError(f"temperature must be above 0 (RLOO needs varied samples), got {self.temperature}.")
        if self.gradient_accumulation_steps < 1:
            raise ConfigError("gradient_accumulation_steps must be at least 1.")
        if not self.rewards:
            raise ConfigError("choose at least one reward function")
        from rloo_studio.core.answers import ANSWER_FORMATS

        if self.answer_format not in ANSWER_FORMATS:
            raise ConfigError(f"answer_format must be one of {', '.join(ANSWER_FORMATS)}, got {self.answer_format!r}")
        if self.repetition_ngram < 1:
            raise ConfigError(f"repetition_ngram must be at least 1, got {self.repetition_ngram}")
        if not 0 <= self.overlong_cache < self.max_completion_length:
            raise ConfigError(f"overlong_cache must be 0 (a quarter of max_completion_length) or less than "
                              f"max_completion_length ({self.max_completion_length}), got {self.overlong_cache}")
        for r in self.rewards:
            if r not in RULE_REWARDS and r != REWARD_MODEL and not r.startswith(CUSTOM_PREFIX):
                raise ConfigError(f"unknown reward {r!r}; choose from {', '.join(RULE_REWARDS)}, {REWARD_MODEL}, "
                                  f"or {CUSTOM_PREFIX}FILE.py")
        if len(set(self.rewards)) != len(self.rewards):
            raise ConfigError("each reward function may appear only once")
        if len(self.reward_weights) != len(self.rewards):
            raise ConfigError(f"give one weight per reward: {len(self.rewards)} rewards, {len(self.reward_weights)} weights")
        if REWARD_MODEL in self.rewards and not self.reward_model_run.strip():
            raise ConfigError("the reward_model reward needs reward_model_run: the id of a trained reward-model run")
        for name, rng in (("reward_clip_range", self.reward_clip_range), ("reward_model_clip", self.reward_model_clip)):
            if rng is not None and (len(rng) != 2 or rng[0] >= rng[1]):
                raise ConfigError(f"{name} must be [low, high] with low < high, got {rng}")
        if self.eval_prompts < 0:
            raise ConfigError("eval_prompts must be 0 (skip) or more")


# -- presets -----------------------------------------------------------------------------------
QWEN3_THINKING = "Qwen/Qwen3-4B-Thinking-2507"


def _seed_recipe(**kw) -> RlooJobConfig:
    """Qwen3 Thinking on a GPU: lr 1e-5, beta 0.05, k=4, adamw_8bit; thinking needs long completions."""
    base = dict(model=QWEN3_THINKING, backend="auto", learning_rate=1e-5, beta=0.05, num_generations=4,
                optim="adamw_8bit", temperature=1.0, rewards=["think_format", "answer_present"],
                reward_weights=[1.0, 0.5], prompt_set=LABELED_PAIRS, max_steps=500, save_steps=50,
                eval_prompts=0)
    return RlooJobConfig(**{**base, **kw})


PRESETS = {
    # Measured on a 2-core CPU (docs/RLOO.md): raises held-out accuracy of the demo model in minutes.
    "demo-cpu": lambda: RlooJobConfig(
        lora=LoraSpec(r=16, alpha=32), rewards=["correctness"], reward_weights=[1.0], num_generations=8,
        beta=0.02, learning_rate=5e-4, max_completion_length=64, per_device_train_batch_size=32,
        max_steps=40, save_steps=20, eval_prompts=200),
    "gpu-16gb": lambda: _seed_recipe(load_in_4bit=True, max_completion_length=1536, per_device_train_batch_size=4,
                                     gradient_accumulation_steps=8),
    "gpu-24gb": lambda: _seed_recipe(load_in_4bit=False, max_completion_length=2048, per_device_train_batch_size=8,
                                     gradient_accumulation_steps=4),
}


def preset(name: str) -> RlooJobConfig:
    if name not in PRESETS:
        raise ConfigError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}")
    return PRESETS[name]()


# -- checks that need the workspace ------------------------------------------------------------

def load_prompts(ws, name: str) -> list[dict]:
    if name == LABELED_PAIRS:
        from rloo_studio.label.store import preference_pairs

        seen, rows = set(), []
        for p in preference_pairs(ws):
            if p["prompt"] not in seen:
                seen.add(p["prompt"])
                rows.append({"prompt": p["prompt"]})
        if not rows:
            raise ConfigError("there are no labeled pairs yet; label some or choose another prompt set")
        return rows
    from rloo_studio.label.prompts import load_prompt_set

    try:
        return load_prompt_set(ws, name)
    except KeyError as exc:
        raise ConfigError(str(exc.args[0])) from None


def preflight(cfg: RlooJobConfig, ws) -> list[dict]:
    """Everything that can be checked before loading the model; returns the prompt rows."""
    from rloo_studio.runs.catalog import adapter_dir
    from rloo_studio.rloo.rewards import custom_reward_path

    from rloo_studio.core.models import check_remote_code, resolve

    cfg.validate()
    # a model that is not there, or that needs its own code, is said before launch, not after a failed run
    check_remote_code(resolve(cfg.model), cfg.trust_remote_code)
    rows = load_prompts(ws, cfg.prompt_set)
    if "correctness" in cfg.rewards and "answer" not in rows[0]:
        raise ConfigError(f"prompt set {cfg.prompt_set!r} has no answer column; drop the correctness reward")
    needs_solution = [r for r in cfg.rewards if r in SOLUTION_REWARDS]
    if needs_solution and "solution" not in rows[0]:
        raise ConfigError(f"prompt set {cfg.prompt_set!r} has no solution column; the {needs_solution[0]} reward "
                          "compares the answer with it (import prompts with a solution column, or drop it)")
    if needs_solution:
        import importlib.util

        if importlib.util.find_spec("math_verify") is None:
            raise ConfigError(f"the {needs_solution[0]} reward needs the math-verify package: "
                              "pip install -r requirements.txt")
    if REWARD_MODEL in cfg.rewards:
        try:
            ok = (adapter_dir(ws, cfg.reward_model_run) / "adapter_config.json").exists()
        except ValueError:
            ok = False
        if not ok:
            raise ConfigError(f"reward_model_run {cfg.reward_model_run!r} is not a reward run with a saved adapter; "
                              "train one on the Reward model tab first")
    for r in cfg.rewards:
        if r.startswith(CUSTOM_PREFIX):
            custom_reward_path(ws.root, r[len(CUSTOM_PREFIX):])
    return rows


def build_rewards(cfg: RlooJobConfig, ws, tok, device=None) -> list:
    """The reward functions, in cfg.rewards order, named as TRL will log them."""
    from rloo_studio.rloo import rewards as R
    from rloo_studio.core.models import load_reward_adapter, run_trusts_code
    from rloo_studio.runs.catalog import adapter_dir

    out = []
    think = cfg.enable_thinking
    for r in cfg.rewards:
        if r == "correctness":
            out.append(R.make_correctness_reward(tok, cfg.answer_format, think))
        elif r == "think_format":
            out.append(R.make_think_format_reward(tok, think))
        elif r == "answer_present":
            out.append(R.make_answer_present_reward(tok, think))
        elif r in TRL_REWARDS:
            out.append(R.trl_reward(r, tok, think, max_completion_length=cfg.max_completion_length,
                                    overlong_cache=cfg.overlong_cache, ngram=cfg.repetition_ngram))
        elif r == REWARD_MODEL:
            ad = adapter_dir(ws, cfg.reward_model_run)
            rm, rm_tok = load_reward_adapter(ad, trust_remote_code=run_trusts_code(ad))
            if device is not None:
                rm.to(device)
            fn = R.make_reward_model_reward(rm, rm_tok, tok, cfg.reward_model_batch_size, enable_thinking=think)
            out.append(R.shaped(fn, cfg.reward_model_normalize, cfg.reward_model_clip))
        else:
            out.append(R.load_custom_reward(ws.root, r[len(CUSTOM_PREFIX):]))
    return out


def recording(fn, tok):
    """Wrap the first reward so that each completion's token length and truncated flag reach TRL's logs."""
    import functools

    eos = {tok.eos_token_id}

    @functools.wraps(fn)
    def wrapper(*args, completion_ids=None, log_extra=None, **kwargs):
        if log_extra is not None:
            log_extra("length", [len(ids) for ids in completion_ids])
            log_extra("truncated", [not ids or ids[-1] not in eos for ids in completion_ids])
        return fn(*args, completion_ids=completion_ids, log_extra=log_extra, **kwargs)

    return wrapper


# -- training ----------------------------------------------------------------------------------

def train_rloo(cfg: RlooJobConfig, ctx: RunContext) -> str:
    import torch
    from datasets import Dataset
    from trl import RLOOConfig, RLOOTrainer

    from rloo_studio.core.models import add_lora, load_causal_lm
    from rloo_studio.core.thinking import template_kwargs
    from rloo_studio.runs.callback import StudioCallback

    rows = preflight(cfg, ctx.ws)
    prompts_file = ctx.dir / "prompts.jsonl"  # the prompts as they were, for reproduce.py
    if not prompts_file.exists():
        prompts_file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    from rloo_studio.core.memory import for_rloo

    ctx.log(for_rloo(cfg))
    ctx.log(f"loading {cfg.model}")
    model, tok, backend = load_causal_lm(cfg.model, cfg.backend, cfg.load_in_4bit,
                                         max_seq_length=1024 + cfg.max_completion_length,
                                         trust_remote_code=cfg.trust_remote_code)
    model = add_lora(model, cfg.lora, backend, seed=cfg.seed)
    ctx.log(f"backend {backend}; {len(rows)} prompts from {cfg.prompt_set}")
    funcs = build_rewards(cfg, ctx.ws, tok, device=next(model.parameters()).device)
    funcs[0] = recording(funcs[0], tok)
    if cfg.eval_prompts:
        evaluate_into(ctx, cfg, model, tok, "before")  # LoRA B starts at zero: this is the base policy
    data = Dataset.from_list([{**r, "prompt": [{"role": "user", "content": r["prompt"]}]} for r in rows])
    cuda = torch.cuda.is_available()
    args = RLOOConfig(
        output_dir=str(ctx.dir / "checkpoints"),
        use_cpu=not cuda, bf16=cuda and torch.cuda.is_bf16_supported(),
        learning_rate=cfg.learning_rate, optim=cfg.optim, beta=cfg.beta, num_generations=cfg.num_generations,
        max_completion_length=cfg.max_completion_length, temperature=cfg.temperature,
        per_device_train_batch_size=cfg.per_device_train_batch_size,
        gradient_accumulation_steps=cfg.gradient_accumulation_steps, max_steps=cfg.max_steps, seed=cfg.seed,
        normalize_advantages=cfg.normalize_advantages, mask_truncated_completions=cfg.mask_truncated_completions,
        reward_clip_range=tuple(cfg.reward_clip_range) if cfg.reward_clip_range else None,
        reward_weights=cfg.reward_weights, logging_steps=cfg.logging_steps, save_steps=cfg.save_steps,
        save_strategy="steps", disable_tqdm=True, remove_unused_columns=False,
        report_to=["tensorboard"],  # event files under checkpoints/runs/, beside metrics.jsonl
        chat_template_kwargs=template_kwargs(cfg.enable_thinking),  # TRL renders the prompts with it
    )
    trainer = RLOOTrainer(
        model=model, reward_funcs=funcs, args=args, train_dataset=data,
        processing_class=tok, callbacks=[StudioCallback(ctx)],
    )
    last = resume_point(ctx)
    trainer.add_callback(SamplesCallback(ctx, trainer, cfg))
    if last:
        restore_policy_adapter(trainer.model, last)
    trainer.train(resume_from_checkpoint=last)
    trainer.save_model(str(ctx.dir / "adapter"))
    tok.save_pretrained(str(ctx.dir / "adapter"))
    step = trainer.state.global_step
    msg = f"{'stopped' if ctx.should_stop() else 'finished'} at step {step}/{cfg.max_steps}; adapter saved"
    if cfg.eval_prompts and not ctx.should_stop():
        ev = evaluate_into(ctx, cfg, model, tok, "after")
        msg += "; " + ev["summary"]
    return msg


def restore_policy_adapter(model, checkpoint: str) -> None:
    """Load the policy's trained LoRA weights from a checkpoint before the Trainer resumes.

    RLOOTrainer, given a PEFT model, adds a frozen "ref" adapter (a copy of the starting weights)
    that PEFT saves in checkpoint-N/ref/. The Trainer's resume then loads only adapter subfolders
    when any exist, so the trained "default" adapter at the checkpoint's root would stay at its
    initial weights: the policy would restart from the base while the optimizer state went on.
    The Trainer reloads "ref" itself; optimizer, scheduler and RNG state follow in train()."""
    model.load_adapter(checkpoint, adapter_name="default", is_trainable=True)
    model.set_adapter("default")


def run_config(ws, run_id: str) -> RlooJobConfig:
    """The config a run was launched with (for resume and overlays)."""
    import yaml

    from rloo_studio.core.config import from_dict

    data = yaml.safe_load((ws.run_dir(run_id) / "config.yaml").read_text()) or {}
    names = {f.name for f in dataclasses.fields(RlooJobConfig)}
    return from_dict(RlooJobConfig, {k: v for k, v in data.items() if k in names})
