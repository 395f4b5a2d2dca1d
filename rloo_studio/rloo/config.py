"""The RLOO job's config: RlooJobConfig (the single source of defaults for the form, YAML, CLI and
reproduce.py), the reward names it accepts, and the presets. No model code here: rloo/job.py trains."""
from __future__ import annotations

from dataclasses import dataclass, field

from rloo_studio.core.errors import ConfigError
from rloo_studio.core.model_options import LoraSpec
from rloo_studio.core.paths import DEMO_MODEL
from rloo_studio.label.prompts import LABELED_PAIRS
from rloo_studio.runs.catalog import run_config as saved_config
from rloo_studio.core.answers import ANSWER_FORMATS
from rloo_studio.core.thinking import template_kwargs

TRL_REWARDS = ("accuracy", "reasoning_accuracy", "soft_overlong", "repetition_penalty")
"""From TRL's reward library (trl.rewards): accuracy_reward and reasoning_accuracy_reward (math-verify,
need a `solution` column), get_soft_overlong_punishment, get_repetition_penalty_reward."""
RULE_REWARDS = ("correctness", "think_format", "answer_present", *TRL_REWARDS)
SOLUTION_REWARDS = ("accuracy", "reasoning_accuracy")
REWARD_MODEL = "reward_model"
CUSTOM_PREFIX = "custom:"


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


def trl_args(cfg: RlooJobConfig) -> dict:
    """RLOOConfig's keyword arguments that follow from the job's config: the one mapping, used by the job and
    recorded in the run folder for reproduce.py. Plain JSON values, so the recorded copy is the same dict.
    Left to the caller: output_dir, use_cpu / bf16 (the device) and report_to."""
    return dict(
        learning_rate=cfg.learning_rate, optim=cfg.optim, beta=cfg.beta, num_generations=cfg.num_generations,
        max_completion_length=cfg.max_completion_length, temperature=cfg.temperature,
        per_device_train_batch_size=cfg.per_device_train_batch_size,
        gradient_accumulation_steps=cfg.gradient_accumulation_steps, max_steps=cfg.max_steps, seed=cfg.seed,
        normalize_advantages=cfg.normalize_advantages, mask_truncated_completions=cfg.mask_truncated_completions,
        reward_clip_range=list(cfg.reward_clip_range) if cfg.reward_clip_range else None,
        reward_weights=list(cfg.reward_weights), logging_steps=cfg.logging_steps, save_steps=cfg.save_steps,
        save_strategy="steps", disable_tqdm=True,
        remove_unused_columns=False,  # the rewards read the prompt set's extra columns (answer, solution)
        chat_template_kwargs=template_kwargs(cfg.enable_thinking),  # TRL renders the prompts with it
    )


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


def run_config(ws, run_id: str) -> RlooJobConfig:
    """The config an RLOO run was launched with (for resume, overlays and the before/after)."""
    return saved_config(ws, run_id, RlooJobConfig)
