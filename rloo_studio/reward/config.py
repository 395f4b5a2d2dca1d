"""The reward-model job's config: RewardJobConfig (the single source of defaults for the form, YAML, CLI and
reproduce.py), its presets, and trl_args (its TRL RewardConfig arguments). No model code: reward/job.py trains."""
from __future__ import annotations

from dataclasses import dataclass, field

from rloo_studio.core import memory_fit, trainer_settings
from rloo_studio.core.errors import ConfigError
from rloo_studio.core.job_config import OPTIMIZERS, JobConfig, override
from rloo_studio.core.model_options import LoraSpec
from rloo_studio.core.paths import DEMO_MODEL

OVER_LENGTH = ("drop", "truncate_thinking", "fit")
"""What to do with pairs longer than max_length: let TRL drop them, cut <think> steps until they
fit, or raise max_length to the longest pair."""
MIN_PAIRS = 4
"""Fewest labeled pairs with a preference a reward run trains on (the job and the tab's check refuse fewer)."""


@dataclass
class RewardJobConfig(JobConfig):
    """One reward-model run. The defaults are the demo-on-CPU preset (tuned on the bundled pairs)."""

    model: str = override("model", str(DEMO_MODEL), help=(
        "Base model: a local folder or a Hugging Face hub id already in the local cache (nothing is downloaded); "
        "it gets a fresh score head. Use the policy you will train with RLOO, or a model of its family."))
    lora: LoraSpec = override("lora", LoraSpec(r=8, alpha=16, dropout=0.05), help=(
        "The LoRA adapter trained on the base model; the score head is trained in full and saved with it."))
    learning_rate: float = override("learning_rate", 3e-3, help=(
        "Peak learning rate (linear decay to 0). LoRA on the tiny demo model takes ~3e-3; 1e-5 for Qwen3 4B+."))
    max_steps: int = override("max_steps", -1, help=(
        "Stop after this many optimizer steps; -1 trains for num_train_epochs."))
    per_device_train_batch_size: int = override("per_device_train_batch_size", 8, help=(
        "Pairs per step and device (each pair is two sequences, chosen and rejected); lower it if training "
        "runs out of memory."))
    seed: int = override("seed", 0, help=(
        "Seeds the held-out split, the score head's initialisation and the data order."))
    logging_steps: int = override("logging_steps", 1, help=(
        "Log loss / accuracy / margin every this many steps (a point on each plot)."))
    save_steps: int = override("save_steps", 20)
    enable_thinking: bool = override("enable_thinking", True, help=(
        "Hybrid chat templates (Qwen3): responses reason in <think> (False: the template's generation prompt "
        "closes an empty block and responses are answers). Inspect scores and the RLOO reward read it from "
        "the run."))
    use_unsloth: bool = field(default=True, metadata={"help": (
        "Load through Unsloth's FastModel on a GPU. On the CPU Unsloth has no sequence-classification "
        "loader, so transformers loads the model (the log says so).")})
    modules_to_save: list[str] = field(default_factory=list, metadata={"help": (
        "Layers trained in full beside the LoRA adapters and saved in the adapter (e.g. embed_tokens, norm); "
        "the score head always is.")})
    num_train_epochs: float = field(default=3.0, metadata={"help": (
        "Passes over the training pairs (when max_steps is -1); fractions allowed.")})
    eval_batch_size: int = field(default=0, metadata={"help": (
        "Pairs per evaluation batch; 0: the whole held-out set (at most 256 pairs) in one batch, so the "
        "held-out accuracy is exact rather than a mean of batch means.")})
    max_length: int = field(default=1024, metadata={"help": (
        "Most tokens per prompt + response (chat template and EOS included). TRL drops longer pairs; "
        "over_length says what happens to them.")})
    over_length: str = field(default="drop", metadata={"choices": OVER_LENGTH, "help": (
        "Pairs longer than max_length: drop (TRL leaves them out; the pre-flight counts them), truncate_thinking "
        "(cut <think> steps until they fit), or fit (raise max_length to the longest pair).")})
    center_rewards_coefficient: float | None = field(default=0.01, metadata={"help": (
        "Pulls the mean reward towards 0 (TRL's center_rewards_coefficient, 0.01 recommended), which keeps "
        "scores comparable across prompts; null turns it off.")})
    eval_fraction: float = field(default=0.2, metadata={"help": (
        "Share of the labeled pairs held out (0 to below 1) to measure pair accuracy; 0 trains on all and "
        "measures nothing.")})
    step_pairs: bool = field(default=False, metadata={"help": (
        "Step-level supervision from the same pairs: where both sides reason and part at a <think> step, "
        "also train on the two responses cut just after the first step where they differ (training pairs "
        "only).")})
    split_by_kind: bool = field(default=True, metadata={"help": (
        "Hold out the same share of each kind of pair (both reason / only chosen reasons / ...), so the "
        "held-out accuracy does not swing with how many hard pairs a seed happens to draw.")})
    eval_steps: int = field(default=8, metadata={"help": (
        "Measure held-out accuracy and margin every this many steps.")})

    def validate(self) -> None:
        super().validate()
        if self.max_length < 8:
            raise ConfigError(f"max_length must be at least 8 tokens, got {self.max_length}.")
        if not 0 <= self.eval_fraction < 1:
            raise ConfigError(f"eval_fraction must be in [0, 1), got {self.eval_fraction}.")
        if self.per_device_train_batch_size < 1 or self.gradient_accumulation_steps < 1:
            raise ConfigError("per_device_train_batch_size and gradient_accumulation_steps must be at least 1.")
        if self.eval_batch_size < 0:
            raise ConfigError("eval_batch_size must be 0 (whole held-out set) or a positive number.")
        if self.max_steps == 0 or self.max_steps < -1:
            raise ConfigError("max_steps must be -1 (use epochs) or at least 1.")
        if self.max_steps == -1 and self.num_train_epochs <= 0:
            raise ConfigError("num_train_epochs must be positive when max_steps is -1.")
        if self.over_length not in OVER_LENGTH:
            raise ConfigError(f"over_length must be one of {', '.join(OVER_LENGTH)}, got {self.over_length!r}.")
        if self.optim not in OPTIMIZERS:
            raise ConfigError(f"optim must be one of {', '.join(OPTIMIZERS)}, got {self.optim!r}.")
        if self.eval_steps < 1:
            raise ConfigError("eval_steps must be at least 1.")


DERIVED = {"per_device_eval_batch_size": "eval_batch_size"}
"""RewardConfig keys the studio derives from a setting of its own (trl.KEY refused: core/trainer_settings.py)."""


def trl_args(cfg: RewardJobConfig, held_out: int, max_length: int | None = None) -> dict:
    """RewardConfig's keyword arguments from the job's config and its split (`held_out` pairs; `max_length` when
    over_length=fit raised it), its trl settings last: the one mapping, used by the job and recorded in the run folder
    for reproduce.py. Left to the caller: output_dir, use_cpu / bf16 (the device), report_to and eval_on_start (not on
    resume)."""
    return _studio_args(cfg, held_out, max_length) | trainer_settings.passed(cfg.trl)


def _studio_args(cfg: RewardJobConfig, held_out: int, max_length: int | None) -> dict:
    return dict(
        learning_rate=cfg.learning_rate, num_train_epochs=cfg.num_train_epochs, max_steps=cfg.max_steps,
        per_device_train_batch_size=cfg.per_device_train_batch_size,
        per_device_eval_batch_size=cfg.eval_batch_size or max(1, min(held_out, 256)),  # 0: one exact batch
        gradient_accumulation_steps=cfg.gradient_accumulation_steps, max_length=max_length or cfg.max_length,
        center_rewards_coefficient=cfg.center_rewards_coefficient, seed=cfg.seed, optim=cfg.optim,
        gradient_checkpointing=cfg.gradient_checkpointing,
        logging_nan_inf_filter=False,  # the default logs a NaN loss as 0 and hides the divergence from the guard
        logging_steps=cfg.logging_steps, save_strategy="steps", save_steps=cfg.save_steps,
        eval_strategy="steps" if held_out else "no", eval_steps=cfg.eval_steps, disable_tqdm=True,
    )


def memory_inputs(cfg: RewardJobConfig, ws=None) -> dict:
    """The memory estimate's inputs (core/memory.preflight): pairs of sequences (chosen and rejected) at max_length
    through a one-label classifier (`ws` unused: every pair is cut or padded to it)."""
    from rloo_studio.core import memory

    return dict(model=cfg.model, batch=2 * cfg.per_device_train_batch_size, seq_len=cfg.max_length,
                load_in_4bit=cfg.load_in_4bit, lora_r=cfg.lora.r, targets=list(cfg.lora.target_modules),
                optimizer=memory.optimizer_kind(cfg.optim), gradient_checkpointing=cfg.gradient_checkpointing,
                head="classifier", num_labels=1)


LEVERS = [memory_fit.checkpointing, memory_fit.four_bit, memory_fit.micro_batch(),
          memory_fit.shorter("max_length", 256, "max length")]
"""What Fit to this card changes, in this order (core/memory_fit.py); a shorter max_length drops the pairs longer
than it (over_length says how), so it comes last."""
