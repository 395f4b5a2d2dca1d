"""The settings every training job shares: the base of each kind's typed config.

A kind's config subclasses JobConfig and adds only its own settings; where a shared setting needs another
default (or words of its own) for the kind, `override` redeclares it in place with the base's help. Field
order (the form's and the YAML's) is the base's first, then the kind's. Standard library only, like every
config: importing one loads no torch.
"""
from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from typing import Any

from rloo_studio.core.errors import ConfigError
from rloo_studio.core.model_options import LoraSpec
from rloo_studio.core.paths import DEMO_MODEL

OPTIMIZERS = ("adamw_torch", "adamw_8bit", "paged_adamw_8bit", "sgd")  # the form's list (transformers names)
MAX_SEED = 2 ** 32 - 1  # numpy's seeds are 32-bit: transformers' set_seed fails above


@dataclass
class JobConfig:
    """What a LoRA training job of any kind is set by: its base model and how it loads, the adapter, the
    optimizer and batch, the seed, logging and checkpoints, and the chat template's reasoning switch."""

    model: str = field(default=str(DEMO_MODEL), metadata={"help": (
        "Base model: a local folder or a Hugging Face hub id already in the local cache (nothing is downloaded). "
        "The default is the bundled demo model.")})
    load_in_4bit: bool = field(default=False, metadata={"help": (
        "Load the base weights in 4-bit (bitsandbytes NF4, QLoRA): about a quarter of the memory, somewhat "
        "slower; for large models on a small GPU.")})
    trust_remote_code: bool = field(default=False, metadata={"help": (
        "Run Python code shipped with the model (auto_map in its config). Off by default: that code runs on "
        "this machine with your permissions, so tick it only for a model whose source you trust.")})
    lora: LoraSpec = field(default_factory=LoraSpec, metadata={"help": (
        "The LoRA adapter trained on the base model (the base weights stay frozen).")})
    learning_rate: float = field(default=5e-4, metadata={"help": (
        "Peak learning rate (linear decay to 0).")})
    optim: str = field(default="adamw_torch", metadata={"choices": OPTIMIZERS, "help": (
        "Optimizer (transformers name): adamw_torch, adamw_8bit, paged_adamw_8bit or sgd; the 8-bit ones save "
        "GPU memory.")})
    max_steps: int = field(default=50, metadata={"help": "Optimizer steps to train."})
    per_device_train_batch_size: int = field(default=8, metadata={"help": (
        "Examples per step and device; lower it if training runs out of memory.")})
    gradient_accumulation_steps: int = field(default=1, metadata={"help": (
        "Batches whose gradients are summed per optimizer step: a larger effective batch without more memory.")})
    seed: int = field(default=0, metadata={"help": (
        "Seeds the initialisation and the data order (0 to 2**32-1); the same seed and settings repeat a run.")})
    logging_steps: int = field(default=1, metadata={"help": (
        "Log the training figures every this many steps (a point on each chart and in metrics.jsonl).")})
    save_steps: int = field(default=25, metadata={"help": (
        "Write a checkpoint every this many steps (Stop also writes one): what Resume continues from.")})
    enable_thinking: bool = field(default=True, metadata={"help": (
        "Hybrid chat templates (Qwen3): responses reason in <think> (False: the template's generation prompt "
        "closes an empty block and responses are answers). Templates without the switch ignore it.")})
    gradient_checkpointing: bool = field(default=False, metadata={"help": (
        "Keep one hidden state per layer and recompute the rest in the backward pass, instead of every layer's "
        "activations: far less memory for long sequences, about 30% more time a step, the same training. With "
        "the Unsloth backend its offloaded mode (the kept states wait in host memory); else transformers' "
        "non-reentrant checkpointing.")})
    trl: dict[str, Any] = field(default_factory=dict, metadata={"help": (
        "Other settings of the trainer's own config, passed to it as they are: TRL's RLOOConfig (RLOO) or "
        "RewardConfig (reward model), transformers' TrainingArguments (process reward model); e.g. warmup_ratio: "
        "0.1, lr_scheduler_type: cosine, max_grad_norm: 0.5, top_p: 0.95 (--set trl.warmup_ratio=0.1). Checked "
        "against that class before a run starts; a setting the studio has of its own is set there instead.")})
    memory_guard: bool = field(default=True, metadata={"help": (
        "On a GPU, refuse to launch a run whose memory estimate does not fit the free memory (the check says what "
        "would fit, and Fit to this card or --fit applies it). Untick it when you know better: it is an estimate.")})

    def validate(self) -> None:
        """The checks every kind shares (a kind's validate calls this, then checks its own settings)."""
        if self.learning_rate <= 0:
            raise ConfigError(f"learning_rate must be positive, got {self.learning_rate}.")
        if self.lora.r < 1 or not self.lora.target_modules:
            raise ConfigError("lora.r must be at least 1 and lora.target_modules must name at least one layer.")
        if min(self.logging_steps, self.save_steps) < 1:
            raise ConfigError("logging_steps and save_steps must be at least 1.")


def override(name: str, default: Any, help: str | None = None, **metadata) -> Any:
    """A shared setting redeclared by a kind's config with its own default (and, if given, its own help):
    `learning_rate: float = override("learning_rate", 3e-3)`. Lists and nested settings get a factory."""
    base = next(f for f in dataclasses.fields(JobConfig) if f.name == name)
    meta = {**base.metadata, **metadata, **({"help": help} if help else {})}
    if isinstance(default, (list, dict)) or dataclasses.is_dataclass(default):
        return field(default_factory=lambda: copy.deepcopy(default), metadata=meta)  # each config its own copy
    return field(default=default, metadata=meta)


def check_seeds(cfg, *names: str) -> None:
    """Refuse, in words, a seed outside what numpy takes (set_seed would fail in the job, after loading)."""
    from rloo_studio.core.errors import DataError

    for name in names or ("seed",):
        if not 0 <= getattr(cfg, name) <= MAX_SEED:
            raise DataError(f"{name} must be a whole number from 0 to {MAX_SEED}, got {getattr(cfg, name)}.")
