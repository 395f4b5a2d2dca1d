"""The process-reward-model job's config: PrmJobConfig (the single source of defaults for the form, YAML, CLI and
reproduce.py), its presets, and trainer_args (its transformers TrainingArguments). No model code: prm/job.py
trains. Standard library only."""
from __future__ import annotations

from dataclasses import dataclass, field

from rloo_studio.core import memory_fit, trainer_settings
from rloo_studio.core.errors import ConfigError
from rloo_studio.core.job_config import OPTIMIZERS, JobConfig, override
from rloo_studio.core.model_options import LoraSpec
from rloo_studio.core.paths import DEMO_MODEL

LABELS_FROM = ("all", "people", "rollouts")
FINETUNE = ("lora", "full", "frozen")
READ_AT = ("after_step", "step_end")  # inspect/process.py: where each step's verdict is read
STEP_SCORES = ("at_read", "min_so_far")  # inspect/process.py read_steps
TOKEN_LABELS = ("steps", "teacher")  # prm/teacher.py
AFTER_FIRST_BAD = ("ignore", "wrong")
MIN_RESPONSES = 8
"""Fewest step-labeled responses a process-reward run trains on (the job and the tab's check refuse fewer)."""


@dataclass
class PrmJobConfig(JobConfig):
    """One process-reward-model run: a token classifier that reads, after each <think> step, whether the step
    is right, trained on the workspace's step labels. The defaults are the demo-on-CPU preset."""

    model: str = override("model", str(DEMO_MODEL), help=(
        "Base model: a local folder or a Hugging Face hub id already in the local cache (nothing is downloaded); "
        "it gets a fresh two-label head read at each step. Use the policy you will train with RLOO, or a model "
        "of its family."))
    lora: LoraSpec = override("lora", LoraSpec(r=16, alpha=32), help=(
        "The LoRA adapter trained on the base model (finetune=lora); the head is trained in full and saved with it."))
    learning_rate: float = override("learning_rate", 3e-3, help=(
        "Peak learning rate (linear decay to 0). Fresh layers over the demo model take ~3e-3; LoRA on Qwen3 4B ~2e-5."))
    # 2,000 on the demo: the fresh layers learn to look each digit up in the prompt late and suddenly (the loss sits
    # near 0.2, then falls to ~0.02 somewhere between steps ~700 and ~1,300, by run); docs/PRM.md
    max_steps: int = override("max_steps", 2000, help="Optimizer steps to train.")
    per_device_train_batch_size: int = override("per_device_train_batch_size", 64, help=(
        "Step-labeled responses per step and device (every labeled step of a response counts); lower it if "
        "training runs out of memory."))
    save_steps: int = override("save_steps", 250)
    logging_steps: int = override("logging_steps", 5, help=(
        "Log loss and step accuracy every this many steps (a point on each chart)."))
    finetune: str = field(default="frozen", metadata={"choices": FINETUNE, "help": (
        "Which weights learn. lora: a LoRA adapter and the head (large models); full: every weight; frozen: the "
        "base model as it is, only the fresh layers (extra_layers) and the head learn (the demo: its base already "
        "knows the arithmetic).")})
    extra_layers: int = field(default=2, metadata={"help": (
        "Fresh decoder layers, the base's own shape, added on top of it and trained from scratch (finetune full or "
        "frozen): room to compare what was written with what the base expected. 0: the head reads the base.")})
    token_labels: str = field(default="teacher", metadata={"choices": TOKEN_LABELS, "help": (
        "steps: the step labels only, at each step's read position. teacher: also every token of the reasoning, "
        "wrong where the teacher model would have written another token (or one before it in the reasoning was), "
        "and copies of the responses with digits changed: the model learns where a step goes wrong.")})
    teacher: str = field(default=str(DEMO_MODEL), metadata={"help": (
        "token_labels=teacher: a model that does the task right and shares the base's tokenizer (the demo: the "
        "bundled demo model); a token is wrong where it is not the teacher's most likely one.")})
    corrupt: float = field(default=0.1, metadata={"help": (
        "token_labels=teacher: the share of the digits in a response's reasoning changed in each of its copies "
        "(0 to 0.5; 0: no copies): slips whose place is known.")})
    copies: int = field(default=6, metadata={"help": (
        "token_labels=teacher: copies of each training response with digits changed (0 to 32): more examples of "
        "where a step goes wrong than the step labels hold.")})
    step_score: str = field(default="min_so_far", metadata={"choices": STEP_SCORES, "help": (
        "How a step's probability is read: at_read (at its read position) or min_so_far (the lowest over every "
        "token of the reasoning up to the step: with token_labels=teacher, the step is right when no token so far "
        "is wrong).")})
    labels_from: str = field(default="all", metadata={"choices": LABELS_FROM, "help": (
        "Which step labels to train on: all, people (labeled in the Label tab or imported), or rollouts (made "
        "by the step-labels-from-rollouts job).")})
    read_at: str = field(default="after_step", metadata={"choices": READ_AT, "help": (
        "Where each step's verdict is read: after_step (the first token after the step, the separator before "
        "the next: a fixed place, as a marker token is) or step_end (the step's last token).")})
    after_first_bad: str = field(default="wrong", metadata={"choices": AFTER_FIRST_BAD, "help": (
        "Steps after a response's first wrong step: wrong (labeled wrong too: a chain that went wrong stays "
        "wrong) or ignore (not trained on, as PRM800K leaves them unrated).")})
    max_length: int = field(default=512, metadata={"help": (
        "Most tokens per prompt + response; longer responses are left out (the log counts them).")})
    eval_fraction: float = field(default=0.1, metadata={"help": (
        "Share of the prompts held out (0 to below 1), with all their responses, to measure step accuracy and "
        "how often the first wrong step is found; 0 measures nothing.")})
    eval_steps: int = field(default=250, metadata={"help": "Measure the held-out figures every this many steps."})
    length_batches: bool = field(default=True, metadata={"help": (
        "Batches of responses of similar length, in random order (prm/batches.py): less padding (4% of the "
        "tokens on the demo, against 21%), a step 0.83x the time. Off: batches drawn at random, padded to their "
        "longest response.")})
    weight_decay: float = field(default=0.01, metadata={"help": (
        "AdamW's weight decay: pulls every trained weight a little towards zero at each step.")})
    warmup_steps: int = field(default=20, metadata={"help": "Steps of linear learning-rate warm-up."})

    def validate(self) -> None:
        super().validate()
        for name, allowed in (("finetune", FINETUNE), ("labels_from", LABELS_FROM), ("read_at", READ_AT),
                              ("after_first_bad", AFTER_FIRST_BAD), ("optim", OPTIMIZERS),
                              ("token_labels", TOKEN_LABELS), ("step_score", STEP_SCORES)):
            if getattr(self, name) not in allowed:
                raise ConfigError(f"{name} must be one of {', '.join(allowed)}, got {getattr(self, name)!r}.")
        if self.max_steps < 1:
            raise ConfigError(f"max_steps must be at least 1, got {self.max_steps}.")
        if self.per_device_train_batch_size < 1 or self.gradient_accumulation_steps < 1:
            raise ConfigError("per_device_train_batch_size and gradient_accumulation_steps must be at least 1.")
        if self.max_length < 8:
            raise ConfigError(f"max_length must be at least 8 tokens, got {self.max_length}.")
        if not 0 <= self.eval_fraction < 1:
            raise ConfigError(f"eval_fraction must be in [0, 1), got {self.eval_fraction}.")
        if self.eval_steps < 1 or self.warmup_steps < 0 or self.weight_decay < 0:
            raise ConfigError("eval_steps must be at least 1; warmup_steps and weight_decay 0 or more.")
        if not 0 <= self.extra_layers <= 8:
            raise ConfigError(f"extra_layers must be 0 to 8, got {self.extra_layers}.")
        if self.extra_layers and self.finetune == "lora":
            raise ConfigError("extra_layers are trained whole: use finetune full or frozen with them, or set "
                              "extra_layers 0 for a LoRA adapter.")
        if self.finetune == "frozen" and not self.extra_layers:
            raise ConfigError("finetune frozen trains only the fresh layers: set extra_layers to 1 or more.")
        if not 0 <= self.corrupt <= 0.5:
            raise ConfigError(f"corrupt must be in [0, 0.5], got {self.corrupt}.")
        if not 0 <= self.copies <= 32:
            raise ConfigError(f"copies must be 0 to 32, got {self.copies}.")
        if self.token_labels == "teacher" and not self.teacher.strip():
            raise ConfigError("token_labels teacher needs a teacher model.")


DERIVED = {"per_device_eval_batch_size": "per_device_train_batch_size", "label_names": "token_labels"}
"""TrainingArguments keys the studio derives from a setting of its own (trl.KEY refused: core/trainer_settings.py)."""


def trainer_args(cfg: PrmJobConfig, held_out: int) -> dict:
    """TrainingArguments' keyword arguments from the job's config (`held_out` responses), its trl settings last: the
    one mapping, used by the job and recorded in the run folder for reproduce.py. Left to the caller: output_dir,
    use_cpu / bf16 (the device), report_to and eval_on_start (not on resume)."""
    return _studio_args(cfg, held_out) | trainer_settings.passed(cfg.trl)


def _studio_args(cfg: PrmJobConfig, held_out: int) -> dict:
    return dict(
        learning_rate=cfg.learning_rate, max_steps=cfg.max_steps,
        per_device_train_batch_size=cfg.per_device_train_batch_size,
        per_device_eval_batch_size=max(8, cfg.per_device_train_batch_size),
        gradient_accumulation_steps=cfg.gradient_accumulation_steps, seed=cfg.seed, optim=cfg.optim,
        weight_decay=cfg.weight_decay, warmup_steps=cfg.warmup_steps, lr_scheduler_type="linear",
        logging_steps=cfg.logging_steps, logging_nan_inf_filter=False, save_strategy="steps", save_steps=cfg.save_steps,
        eval_strategy="steps" if held_out else "no", eval_steps=cfg.eval_steps, disable_tqdm=True,
        remove_unused_columns=False, label_names=["labels"], gradient_checkpointing=cfg.gradient_checkpointing,
    )


def memory_inputs(cfg: PrmJobConfig, ws=None) -> dict:
    """The memory estimate's inputs (core/memory.preflight; `ws` unused): responses of max_length tokens through a
    two-label token classifier; a LoRA holds its adapters' gradients and optimizer state, a full fine-tune every
    weight's, a frozen base only its fresh layers' (the fresh layers are weights whatever learns). With finetune:
    frozen the base's states are kept in host memory too: the job counts them before computing them
    (prm/cached.check_fits)."""
    from rloo_studio.core import memory

    return dict(model=cfg.model, batch=cfg.per_device_train_batch_size, seq_len=cfg.max_length,
                load_in_4bit=cfg.load_in_4bit and cfg.finetune == "lora", lora_r=cfg.lora.r,
                targets=list(cfg.lora.target_modules), optimizer=memory.optimizer_kind(cfg.optim),
                gradient_checkpointing=cfg.gradient_checkpointing, head="classifier", num_labels=2,
                train={"frozen": "top"}.get(cfg.finetune, cfg.finetune), extra_layers=cfg.extra_layers)


LEVERS = [memory_fit.checkpointing, memory_fit.four_bit, memory_fit.micro_batch(),
          memory_fit.shorter("max_length", 256, "max length")]
"""What Fit to this card changes, in this order (core/memory_fit.py); 4-bit applies to a LoRA fine-tune only, and a
shorter max_length leaves the longer responses out, so it comes last."""
