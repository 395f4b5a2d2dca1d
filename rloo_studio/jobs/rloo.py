"""RLOO job: a typed config -> TRL RLOOTrainer on a prompt set -> LoRA adapter in the run folder."""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import bootstrap  # noqa: F401  (unsloth before trl)
from ..config import to_dict
from ..errors import ConfigError
from ..models import LoraSpec
from ..paths import DEMO_MODEL
from .runner import RunContext

RULE_REWARDS = ("correctness", "think_format", "answer_present")


@dataclass
class RlooJobConfig:
    model: str = str(DEMO_MODEL)
    """Policy: a local folder or a hub id already in the local cache."""
    backend: str = "auto"
    """auto (Unsloth when available), unsloth, or transformers (plain transformers + PEFT)."""
    load_in_4bit: bool = False
    """Load the base weights in 4-bit (bitsandbytes NF4)."""
    lora: LoraSpec = field(default_factory=LoraSpec)
    """LoRA adapter on the policy."""
    prompt_set: str = "demo-train"
    """Name of a prompt set in the workspace; its extra columns (answer, ...) reach the rewards."""
    rewards: list[str] = field(default_factory=lambda: ["correctness", "think_format"])
    """Reward functions, from: correctness, think_format, answer_present."""
    reward_weights: list[float] = field(default_factory=lambda: [1.0, 0.2])
    """One weight per reward function (RLOOConfig.reward_weights)."""
    num_generations: int = 4
    """Completions per prompt (k); the leave-one-out baseline needs at least 2."""
    beta: float = 0.05
    """KL penalty coefficient; 0 loads no reference model."""
    learning_rate: float = 5e-4
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
    """[low, high] to clip each reward, or None."""
    save_steps: int = 25
    """Checkpoint every N steps (resume starts from the last one)."""
    logging_steps: int = 1

    def validate(self) -> None:
        if self.num_generations < 2:
            raise ConfigError("num_generations must be at least 2: RLOO compares each completion with the others of its prompt.")
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
        unknown = [r for r in self.rewards if r not in RULE_REWARDS]
        if unknown:
            raise ConfigError(f"unknown reward {unknown[0]!r}; choose from {', '.join(RULE_REWARDS)}")
        if not self.rewards:
            raise ConfigError("choose at least one reward function")
        if len(self.reward_weights) != len(self.rewards):
            raise ConfigError(f"give one weight per reward: {len(self.rewards)} rewards, {len(self.reward_weights)} weights")


def _reward_funcs(cfg: RlooJobConfig, tok):
    from .. import rewards as R

    make = {
        "correctness": lambda: R.correctness,
        "think_format": lambda: R.make_think_format_reward(tok),
        "answer_present": lambda: R.make_answer_present_reward(tok),
    }
    return [make[r]() for r in cfg.rewards]


def train_rloo(cfg: RlooJobConfig, ctx: RunContext) -> str:
    import torch
    from datasets import Dataset
    from trl import RLOOConfig, RLOOTrainer

    from ..models import add_lora, load_causal_lm
    from ..prompts import load_prompt_set
    from .callback import StudioCallback

    cfg.validate()
    try:
        rows = load_prompt_set(ctx.ws, cfg.prompt_set)
    except KeyError as exc:
        raise ConfigError(str(exc.args[0])) from None
    if "correctness" in cfg.rewards and "answer" not in rows[0]:
        raise ConfigError(f"prompt set {cfg.prompt_set!r} has no answer column; drop the correctness reward")
    ctx.log(f"loading {cfg.model}")
    model, tok, backend = load_causal_lm(cfg.model, cfg.backend, cfg.load_in_4bit,
                                         max_seq_length=1024 + cfg.max_completion_length)
    model = add_lora(model, cfg.lora, backend, seed=cfg.seed)
    ctx.log(f"backend {backend}; {len(rows)} prompts from {cfg.prompt_set}")
    data = Dataset.from_list([{**r, "prompt": [{"role": "user", "content": r["prompt"]}]} for r in rows])
    cuda = torch.cuda.is_available()
    args = RLOOConfig(
        output_dir=str(ctx.dir / "checkpoints"),
        use_cpu=not cuda, bf16=cuda and torch.cuda.is_bf16_supported(),
        learning_rate=cfg.learning_rate, beta=cfg.beta, num_generations=cfg.num_generations,
        max_completion_length=cfg.max_completion_length, temperature=cfg.temperature,
        per_device_train_batch_size=cfg.per_device_train_batch_size,
        gradient_accumulation_steps=cfg.gradient_accumulation_steps, max_steps=cfg.max_steps, seed=cfg.seed,
        normalize_advantages=cfg.normalize_advantages, mask_truncated_completions=cfg.mask_truncated_completions,
        reward_clip_range=tuple(cfg.reward_clip_range) if cfg.reward_clip_range else None,
        reward_weights=cfg.reward_weights, logging_steps=cfg.logging_steps, save_steps=cfg.save_steps,
        save_strategy="steps", report_to=[], disable_tqdm=True, remove_unused_columns=False,
    )
    trainer = RLOOTrainer(
        model=model, reward_funcs=_reward_funcs(cfg, tok), args=args, train_dataset=data,
        processing_class=tok, callbacks=[StudioCallback(ctx)],
    )
    last = _last_checkpoint(ctx)
    trainer.train(resume_from_checkpoint=last)
    trainer.save_model(str(ctx.dir / "adapter"))
    tok.save_pretrained(str(ctx.dir / "adapter"))
    step = trainer.state.global_step
    return f"{'stopped' if ctx.should_stop() else 'finished'} at step {step}/{cfg.max_steps}; adapter saved"


def _last_checkpoint(ctx: RunContext) -> str | None:
    from transformers.trainer_utils import get_last_checkpoint

    d = ctx.dir / "checkpoints"
    return get_last_checkpoint(str(d)) if d.exists() else None


