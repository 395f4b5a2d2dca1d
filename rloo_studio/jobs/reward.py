"""Reward-model job: labeled pairs -> TRL RewardTrainer with a LoRA SEQ_CLS adapter (score head included)."""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from .. import bootstrap  # noqa: F401  (unsloth before trl)
from ..errors import ConfigError, DataError
from ..models import LoraSpec
from ..paths import DEMO_MODEL
from .runner import RunContext


@dataclass
class RewardJobConfig:
    model: str = str(DEMO_MODEL)
    """Base model: a local folder or a hub id already in the local cache; gets a fresh score head."""
    load_in_4bit: bool = False
    lora: LoraSpec = field(default_factory=lambda: LoraSpec(r=16, alpha=16))
    learning_rate: float = 1e-3
    num_train_epochs: float = 3.0
    max_steps: int = -1
    """Stop after this many steps; -1 trains for num_train_epochs."""
    per_device_train_batch_size: int = 16
    gradient_accumulation_steps: int = 1
    max_length: int = 1024
    """Tokens per prompt+response; TRL drops (not truncates) longer pairs."""
    center_rewards_coefficient: float | None = 0.01
    """Pulls mean rewards towards 0 (keeps scores comparable across prompts)."""
    eval_fraction: float = 0.1
    """Share of pairs held out to measure pair accuracy."""
    seed: int = 0
    logging_steps: int = 1
    eval_steps: int = 10
    save_steps: int = 20

    def validate(self) -> None:
        if self.learning_rate <= 0:
            raise ConfigError(f"learning_rate must be positive, got {self.learning_rate}.")
        if self.max_length < 8:
            raise ConfigError(f"max_length must be at least 8 tokens, got {self.max_length}.")
        if not 0 <= self.eval_fraction < 1:
            raise ConfigError(f"eval_fraction must be in [0, 1), got {self.eval_fraction}.")
        if self.per_device_train_batch_size < 1:
            raise ConfigError("per_device_train_batch_size must be at least 1.")
        if self.max_steps == 0 or self.max_steps < -1:
            raise ConfigError("max_steps must be -1 (use epochs) or at least 1.")


def pair_rows(tok, pairs: list[dict]) -> list[dict]:
    """Explicit-prompt rows in the exact text format used for scoring: chat prompt + response (+ EOS by TRL)."""
    from ..sampling import chat_prompt

    return [{"prompt": chat_prompt(tok, p["prompt"]), "chosen": p["chosen"], "rejected": p["rejected"]} for p in pairs]


def train_reward(cfg: RewardJobConfig, ctx: RunContext) -> str:
    import torch
    from datasets import Dataset
    from trl import RewardConfig, RewardTrainer

    from ..labels import preference_pairs
    from ..models import load_seq_cls, lora_config
    from .callback import StudioCallback
    from .rloo import _last_checkpoint

    cfg.validate()
    pairs = preference_pairs(ctx.ws)
    if len(pairs) < 4:
        raise DataError(f"Only {len(pairs)} labeled pairs with a preference; label at least 4 (better: 100+).")
    ctx.log(f"loading {cfg.model}")
    model, tok = load_seq_cls(cfg.model, cfg.load_in_4bit)
    rows = pair_rows(tok, pairs)
    random.Random(cfg.seed).shuffle(rows)
    n_eval = int(len(rows) * cfg.eval_fraction)
    train, held = rows[n_eval:], rows[:n_eval]
    ctx.log(f"{len(train)} training pairs, {len(held)} held out")
    cuda = torch.cuda.is_available()
    args = RewardConfig(
        output_dir=str(ctx.dir / "checkpoints"), use_cpu=not cuda, bf16=cuda and torch.cuda.is_bf16_supported(),
        learning_rate=cfg.learning_rate, num_train_epochs=cfg.num_train_epochs, max_steps=cfg.max_steps,
        per_device_train_batch_size=cfg.per_device_train_batch_size, per_device_eval_batch_size=cfg.per_device_train_batch_size,
        gradient_accumulation_steps=cfg.gradient_accumulation_steps, max_length=cfg.max_length,
        center_rewards_coefficient=cfg.center_rewards_coefficient, seed=cfg.seed,
        logging_steps=cfg.logging_steps, save_strategy="steps", save_steps=cfg.save_steps,
        eval_strategy="steps" if held else "no", eval_steps=cfg.eval_steps, report_to=[], disable_tqdm=True,
    )
    trainer = RewardTrainer(
        model=model, args=args, processing_class=tok, train_dataset=Dataset.from_list(train),
        eval_dataset=Dataset.from_list(held) if held else None, peft_config=lora_config(cfg.lora, "SEQ_CLS"),
        callbacks=[StudioCallback(ctx)],
    )
    trainer.train(resume_from_checkpoint=_last_checkpoint(ctx))
    if held and not ctx.should_stop():
        ctx.metric({"step": trainer.state.global_step, **trainer.evaluate()})
    trainer.save_model(str(ctx.dir / "adapter"))
    tok.save_pretrained(str(ctx.dir / "adapter"))
    return f"{'stopped' if ctx.should_stop() else 'finished'} at step {trainer.state.global_step}; adapter saved"
