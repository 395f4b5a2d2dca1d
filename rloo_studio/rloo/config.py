"""The RLOO job's config: RlooJobConfig (the single source of defaults for the form, YAML, CLI and
reproduce.py), the reward names it accepts, and the presets. No model code here: rloo/job.py trains."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from rloo_studio.core import memory_fit, trainer_settings
from rloo_studio.core.answers import ANSWER_FORMATS
from rloo_studio.core.errors import ConfigError
from rloo_studio.core.job_config import JobConfig, override
from rloo_studio.core.model_options import BACKENDS, LoraSpec
from rloo_studio.core.paths import DEMO_MODEL
from rloo_studio.core.thinking import template_kwargs
from rloo_studio.runs.catalog import run_config as saved_config
from rloo_studio.runs.catalog import scorer_runs

TRL_REWARDS = ("accuracy", "reasoning_accuracy", "soft_overlong", "repetition_penalty")
"""From TRL's reward library (trl.rewards): accuracy_reward and reasoning_accuracy_reward (math-verify,
need a `solution` column), get_soft_overlong_punishment, get_repetition_penalty_reward."""
RULE_REWARDS = ("correctness", "think_format", "answer_present", *TRL_REWARDS)
SOLUTION_REWARDS = ("accuracy", "reasoning_accuracy")
REWARD_MODEL = "reward_model"
PROCESS_REWARD = "process_reward"  # a trained process reward model (rloo/process_reward.py)
PROCESS_AGGREGATES = ("min", "product", "last", "mean")
CUSTOM_PREFIX = "custom:"
LATEST = "latest"  # reward_model_run: the newest reward run with a saved adapter, resolved at launch


@dataclass
class RlooJobConfig(JobConfig):
    """One RLOO run: the policy, its prompts and rewards, the RLOO settings, the before/after."""

    model: str = override("model", str(DEMO_MODEL), help=(
        "The policy to train: a local model folder or a Hugging Face hub id already in the local cache (nothing is "
        "downloaded). The default is the bundled demo model."))
    lora: LoraSpec = override("lora", LoraSpec(), help=(
        "The LoRA adapter trained on the policy (the base weights stay frozen)."))
    learning_rate: float = override("learning_rate", 5e-4, help=(
        "Peak learning rate of the LoRA weights (linear decay to 0 over max_steps). LoRA on the demo model "
        "takes ~5e-4; ~1e-5 for Qwen3 4B and larger."))
    per_device_train_batch_size: int = override("per_device_train_batch_size", 16, help=(
        "Completions (not prompts) per device per step; a multiple of num_generations, so it holds "
        "per_device_train_batch_size / num_generations prompts."))
    gradient_accumulation_steps: int = override("gradient_accumulation_steps", 1, help=(
        "Batches whose gradients are summed per optimizer step: a larger effective batch without more memory "
        "(TRL generates completions for all of them at once)."))
    max_steps: int = override("max_steps", 50, help=(
        "Optimizer steps to train; each samples a new generation batch of prompts."))
    seed: int = override("seed", 0, help=(
        "Seeds the LoRA initialisation, the prompt order and the sampling (0 to 2**32-1); the same seed and "
        "settings repeat a run."))
    logging_steps: int = override("logging_steps", 1, help=(
        "Log loss, reward and KL every this many steps (a point on each chart and in metrics.jsonl)."))
    enable_thinking: bool = override("enable_thinking", True, help=(
        "Hybrid chat templates (Qwen3): the policy reasons in <think> before answering (False: the template "
        "closes an empty block and completions are answers). Goes to TRL as chat_template_kwargs; the rewards, "
        "the reward model and the before/after read completions the same way. Templates without the switch "
        "ignore it."))
    backend: str = field(default="auto", metadata={"choices": BACKENDS, "help": (
        "How the policy is loaded: auto (Unsloth when it is installed, else transformers), unsloth, or "
        "transformers (plain transformers + PEFT). Pick transformers if Unsloth fails to load a model.")})
    prompt_set: str = field(default="demo-train", metadata={"help": (
        "The prompts to train on: a prompt set in the workspace, or 'labeled-pairs' (the prompts of the labeled "
        "pairs). Extra columns (answer, solution, ...) reach the reward functions.")})
    rewards: list[str] = field(default_factory=lambda: ["correctness", "think_format"], metadata={"help": (
        "Reward functions, summed with reward_weights: correctness, think_format, answer_present; TRL's accuracy "
        "and reasoning_accuracy (math-verify, need a solution column), soft_overlong, repetition_penalty; "
        "reward_model (a trained reward run, see reward_model_run); custom:FILE.py[:FUNCTION].")})
    reward_weights: list[float] = field(default_factory=lambda: [1.0, 0.2], metadata={"help": (
        "One weight per reward function, in the order of rewards; the reward is their weighted sum "
        "(RLOOConfig.reward_weights).")})
    reward_model_run: str = field(default="", metadata={"help": (
        "Run id of a trained reward-model run (see: runs list); needed when rewards includes reward_model. "
        "'latest': the newest reward run with a saved adapter, looked up at launch; the run's config.yaml then "
        "names that run.")})
    reward_model_normalize: bool = field(default=True, metadata={"help": (
        "Standardize the reward model's scores over each generation batch (mean 0, std 1, the std no smaller "
        "than reward_model_std_floor), since their offset is arbitrary; turn off only to use the raw scores.")})
    reward_model_std_floor: float = field(default=1.0, metadata={"help": (
        "The smallest standard deviation the normalization divides by, in the reward model's own units (its "
        "scores are Bradley-Terry logits: a difference of 1 means it prefers one response 73% to 27%). A batch "
        "whose scores differ by much less than that differs by noise, and dividing by its tiny std would blow "
        "the noise up to full-size rewards. 0: divide by the batch's std, however small (the earlier "
        "behaviour).")})
    reward_model_clip: list[float] | None = field(default_factory=lambda: [-3.0, 3.0], metadata={"help": (
        "[low, high] to clip the reward model's reward to after normalizing (limits outliers), or null for "
        "no clipping.")})
    reward_model_batch_size: int = field(default=16, metadata={"help": (
        "Completions the reward model scores per forward pass; lower it if scoring runs out of memory.")})
    process_reward_run: str = field(default="", metadata={"help": (
        "Run id of a trained process-reward run (see: runs list); needed when rewards includes process_reward. "
        "'latest': the newest process-reward run with a saved model, looked up at launch.")})
    process_reward_aggregate: str = field(default="min", metadata={"choices": PROCESS_AGGREGATES, "help": (
        "How process_reward turns a completion's step probabilities into one reward: min (the weakest step; "
        "the default, as PURE advises), product (every step right; penalises long chains), last (the last step) "
        "or mean. A completion without steps earns 0.")})
    process_reward_correct_only: bool = field(default=False, metadata={"help": (
        "Give process_reward only to answers that are right (needs an answer column; PAPO): it then ranks the "
        "right answers by their reasoning and never pays for a well-argued wrong one. Use it with correctness.")})
    generation_batch_size: int = field(default=0, metadata={"help": (
        "Completions generated at once. 0: all of a step's, per_device_train_batch_size x "
        "gradient_accumulation_steps (TRL's default). Less holds a smaller KV cache while generating: a step's "
        "completions are then generated in turns, each a multiple of per_device_train_batch_size and of "
        "num_generations that divides them, all with the same weights (the same completions per step; "
        "normalize_advantages and the reward model's normalization then work over each turn's).")})
    process_reward_filter: bool = field(default=False, metadata={"help": (
        "Use the process reward model as a filter beside the answer key (PROF, 2025): in each prompt's group, the "
        "completions whose outcome and process disagree (a right answer whose steps it doubts, a wrong one whose "
        "steps it trusts) get no advantage and leave the group's baseline. Needs process_reward and an answer "
        "column; give process_reward weight 0 to use the model only as the filter.")})
    process_reward_unfinished: bool = field(default=False, metadata={"help": (
        "Pay process_reward to unfinished completions too: those whose reasoning never closed, or with no answer "
        "after </think> (stopped mid-reasoning, or cut at max_completion_length). Off: they earn 0, since a reward "
        "for right-so-far steps that never asks for an answer teaches the policy to stop early.")})
    num_generations: int = field(default=4, metadata={"help": (
        "Completions sampled per prompt (k, 2-16): each is compared with the mean reward of the other k-1 "
        "(the leave-one-out baseline). More gives a steadier baseline and costs generation time.")})
    beta: float = field(default=0.05, metadata={"help": (
        "KL penalty coefficient: how strongly the policy is held near the base model (the penalty is summed "
        "over the completion). 0 loads no reference model: less memory and faster.")})
    max_completion_length: int = field(default=64, metadata={"help": (
        "Most tokens generated per completion. A completion cut before </think> earns no answer reward; "
        "raise it when completions/clipped_ratio is high (thinking models need 1000+).")})
    temperature: float = field(default=1.0, metadata={"help": (
        "Sampling temperature of the completions: higher is more varied. RLOO learns from the differences "
        "between the k completions of a prompt, so keep it near 1.")})
    normalize_advantages: bool = field(default=False, metadata={"help": (
        "Scale the advantages of each generation batch to mean 0 and standard deviation 1 (TRL's "
        "normalize_advantages); evens out the step size when reward scales differ.")})
    mask_truncated_completions: bool = field(default=False, metadata={"help": (
        "Leave completions cut at max_completion_length out of the loss, so they are not penalized for "
        "being cut (DAPO's advice for stability).")})
    reward_clip_range: list[float] | None = field(default=None, metadata={"help": (
        "[low, high] to clip the weighted total reward to (TRL's reward_clip_range), or null for no clipping.")})
    token_view_max_tokens: int = field(default=8192, metadata={"help": (
        "The token view (tokens.jsonl, the RLOO tab's token view): at each logged step, every completion's "
        "per-token log-prob when sampled, under the reference and after the update (one extra forward pass, "
        "no gradients). Recorded while a step's completions x max_completion_length is at most this many "
        "tokens (the demo's 32 x 64 = 2048); 0 turns it off. Larger steps cost more time and disk.")})
    eval_prompts: int = field(default=0, metadata={"help": (
        "Before/after: answer this many prompts of eval_prompt_set before and after training and report the "
        "accuracy (0: skip; costs two rounds of generation).")})
    eval_prompt_set: str = field(default="demo-heldout", metadata={"help": (
        "The prompt set the before/after answers (its answer column is checked); keep it apart from "
        "prompt_set so the score is held out.")})
    eval_seed: int = field(default=1234, metadata={"help": (
        "Sampling seed of the before/after answers, the same for both, so the two measurements differ only "
        "by the training.")})
    use_vllm: bool = field(default=False, metadata={"help": (
        "Generate the completions with a vLLM server (TRL's server mode) instead of transformers' generate: "
        "several times faster on a GPU. The server runs in an environment of its own (make vllm-server), and so "
        "does the run, since TRL's client needs the vllm package to send it the weights (docs/VLLM.md).")})
    vllm_server_base_url: str = field(default="http://127.0.0.1:8000", metadata={"help": (
        "The vLLM server's address (use_vllm): Launch checks that it answers and serves this run's model.")})
    vllm_server_timeout: float = field(default=240.0, metadata={"help": (
        "Seconds the run waits for the vLLM server to answer when it starts (use_vllm).")})
    answer_format: str = field(default="last_number", metadata={"choices": ANSWER_FORMATS, "help": (
        "How the correctness reward and the before/after read the answer after </think>: last_number (the "
        "last number), boxed (the last \\boxed{}), or hash ('#### N', GSM8K).")})
    repetition_ngram: int = field(default=3, metadata={"form": False, "help": (
        "repetition_penalty: n-gram size of TRL's get_repetition_penalty_reward (a reward of -1 x the share of "
        "repeated n-grams).")})
    overlong_cache: int = field(default=0, metadata={"form": False, "help": (
        "soft_overlong: completions longer than max_completion_length - overlong_cache tokens lose up to 1 "
        "(TRL's get_soft_overlong_punishment, DAPO); 0 takes a quarter of max_completion_length.")})

    def validate(self) -> None:
        if not 2 <= self.num_generations <= 16:
            raise ConfigError(f"num_generations must be between 2 and 16 (got {self.num_generations}): RLOO compares "
                              "each completion with the others of its prompt.")
        if self.per_device_train_batch_size % self.num_generations:
            raise ConfigError(
                f"per_device_train_batch_size ({self.per_device_train_batch_size}) must be a multiple of "
                f"num_generations ({self.num_generations}); try "
                f"{self.num_generations * max(1, self.per_device_train_batch_size // self.num_generations)}."
            )
        super().validate()  # learning rate, LoRA, logging and checkpoints
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
        step = self.per_device_train_batch_size * self.gradient_accumulation_steps
        if self.generation_batch_size and (self.generation_batch_size < 0 or step % self.generation_batch_size
                                           or self.generation_batch_size % self.per_device_train_batch_size):
            raise ConfigError(
                f"generation_batch_size ({self.generation_batch_size}) must be 0 (all of a step's {step} completions "
                f"at once) or a multiple of per_device_train_batch_size ({self.per_device_train_batch_size}) that "
                f"divides {step}; try {self.per_device_train_batch_size}.")
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
            if r not in RULE_REWARDS and r not in (REWARD_MODEL, PROCESS_REWARD) and not r.startswith(CUSTOM_PREFIX):
                raise ConfigError(f"unknown reward {r!r}; choose from {', '.join(RULE_REWARDS)}, {REWARD_MODEL}, "
                                  f"{PROCESS_REWARD}, or {CUSTOM_PREFIX}FILE.py")
        if len(set(self.rewards)) != len(self.rewards):
            raise ConfigError("each reward function may appear only once")
        if len(self.reward_weights) != len(self.rewards):
            raise ConfigError(f"give one weight per reward: {len(self.rewards)} rewards, "
                              f"{len(self.reward_weights)} weights")
        if self.process_reward_filter and PROCESS_REWARD not in self.rewards:
            raise ConfigError("process_reward_filter filters by the process reward model: tick the process_reward "
                              "reward too (weight 0 to use it only as the filter)")
        if PROCESS_REWARD in self.rewards and not self.process_reward_run.strip():
            raise ConfigError("the process_reward reward needs process_reward_run: the id of a trained process-reward "
                              f"run, or {LATEST} for the newest")
        if self.process_reward_aggregate not in PROCESS_AGGREGATES:
            raise ConfigError(f"process_reward_aggregate must be one of {', '.join(PROCESS_AGGREGATES)}, got "
                              f"{self.process_reward_aggregate!r}")
        if REWARD_MODEL in self.rewards and not self.reward_model_run.strip():
            raise ConfigError("the reward_model reward needs reward_model_run: the id of a trained reward-model run, "
                              f"or {LATEST} for the newest")
        if self.reward_model_std_floor < 0:
            raise ConfigError(f"reward_model_std_floor must be 0 or more, got {self.reward_model_std_floor}")
        for name, rng in (("reward_clip_range", self.reward_clip_range), ("reward_model_clip", self.reward_model_clip)):
            if rng is not None and (len(rng) != 2 or rng[0] >= rng[1]):
                raise ConfigError(f"{name} must be [low, high] with low < high, got {rng}")
        if self.use_vllm and not self.vllm_server_base_url.strip().startswith(("http://", "https://")):
            raise ConfigError(f"vllm_server_base_url must be an http:// or https:// address, got "
                              f"{self.vllm_server_base_url!r}")
        if self.vllm_server_timeout <= 0:
            raise ConfigError(f"vllm_server_timeout must be above 0 seconds, got {self.vllm_server_timeout}")
        if self.eval_prompts < 0:
            raise ConfigError("eval_prompts must be 0 (skip) or more")


DERIVED = {"chat_template_kwargs": "enable_thinking", "vllm_mode": "use_vllm",
           "steps_per_generation": "generation_batch_size"}
"""RLOOConfig keys the studio derives from a setting of its own (trl.KEY refused: core/trainer_settings.py)."""


def trl_args(cfg: RlooJobConfig) -> dict:
    """RLOOConfig's keyword arguments that follow from the job's config, its trl settings last: the one mapping, used
    by the job and recorded in the run folder for reproduce.py. Plain JSON values, so the recorded copy is the same
    dict. Left to the caller: output_dir, use_cpu / bf16 (the device) and report_to."""
    return _studio_args(cfg) | trainer_settings.passed(cfg.trl)


def _studio_args(cfg: RlooJobConfig) -> dict:
    return dict(
        learning_rate=cfg.learning_rate, optim=cfg.optim, beta=cfg.beta, num_generations=cfg.num_generations,
        max_completion_length=cfg.max_completion_length, temperature=cfg.temperature,
        per_device_train_batch_size=cfg.per_device_train_batch_size,
        gradient_accumulation_steps=cfg.gradient_accumulation_steps, max_steps=cfg.max_steps, seed=cfg.seed,
        normalize_advantages=cfg.normalize_advantages, mask_truncated_completions=cfg.mask_truncated_completions,
        reward_clip_range=list(cfg.reward_clip_range) if cfg.reward_clip_range else None,
        reward_weights=list(cfg.reward_weights), logging_steps=cfg.logging_steps, save_steps=cfg.save_steps,
        save_strategy="steps", disable_tqdm=True, gradient_checkpointing=cfg.gradient_checkpointing,
        **(dict(generation_batch_size=cfg.generation_batch_size) if cfg.generation_batch_size else {}),
        remove_unused_columns=False,  # the rewards read the prompt set's extra columns (answer, solution)
        chat_template_kwargs=template_kwargs(cfg.enable_thinking),  # TRL renders the prompts with it
        use_vllm=cfg.use_vllm,
        **(dict(vllm_mode="server", vllm_server_base_url=cfg.vllm_server_base_url.rstrip("/"),
                vllm_server_timeout=cfg.vllm_server_timeout) if cfg.use_vllm else {}),
    )


def resolve_latest(ws, cfg: RlooJobConfig) -> RlooJobConfig:
    """reward_model_run / process_reward_run 'latest' become the id of the newest run of that kind with a saved
    model, in `cfg` itself, so that the run's config.yaml, its resume and reproduce.py name the model it was trained
    with. Called at launch by the pre-flight (rloo.launch_form.launch_check), which the tab and the CLI both go
    through."""
    for reward, key, sort, what in ((REWARD_MODEL, "reward_model_run", "outcome", "reward"),
                                    (PROCESS_REWARD, "process_reward_run", "process", "process-reward")):
        if reward in cfg.rewards and getattr(cfg, key).strip() == LATEST:
            found = scorer_runs(ws, (sort,))
            if not found:
                raise ConfigError(f"{key} {LATEST!r}: this workspace has no {what} run with a saved adapter yet; "
                                  f"train one on the {'Reward model' if sort == 'outcome' else 'Process reward'} tab "
                                  f"(or with train-{'reward' if sort == 'outcome' else 'prm'}) first")
            setattr(cfg, key, found[0][1])
    return cfg


TYPICAL_PROMPT = 256  # tokens: the memory estimate's prompt when the prompt set cannot be read


def longest_prompt(cfg: RlooJobConfig, ws, limit: int = 2000) -> int | None:
    """Tokens of the prompt set's longest prompt (of its first `limit`) as the policy's chat template renders it;
    None when the set or the tokenizer cannot be read (the launch check says why). Never runs a model's own code,
    even with trust_remote_code on: checking settings must not (a model that needs its code is estimated with the
    typical prompt)."""
    from rloo_studio.core.thinking import template_kwargs
    from rloo_studio.inspect.model_input import tokenizer
    from rloo_studio.label.prompts import load_prompts

    try:
        rows, tok = load_prompts(ws, cfg.prompt_set)[:limit], tokenizer(cfg.model, trust_remote_code=False)
        kw = template_kwargs(cfg.enable_thinking) if tok.chat_template else None
        texts = [tok.apply_chat_template([{"role": "user", "content": str(r["prompt"])}], tokenize=False,
                                         add_generation_prompt=True, **kw) if kw is not None else str(r["prompt"])
                 for r in rows]
        return max(len(ids) for ids in tok(texts, add_special_tokens=False)["input_ids"]) if texts else None
    except Exception:  # noqa: BLE001 — an estimate, never the reason a check fails
        return None


def memory_inputs(cfg: RlooJobConfig, ws=None) -> dict:
    """The memory estimate's inputs (core/memory.preflight): a micro-batch of completions of the prompt set's longest
    prompt (a typical chat prompt of TYPICAL_PROMPT tokens without a workspace) + max_completion_length, generated
    generation_batch_size at a time (a step's completions when 0), beside the reward models the rewards load."""
    from rloo_studio.core import memory

    prompt = longest_prompt(cfg, ws) if ws is not None else None
    seq = (prompt or TYPICAL_PROMPT) + cfg.max_completion_length
    step = cfg.per_device_train_batch_size * cfg.gradient_accumulation_steps
    return dict(model=cfg.model, batch=cfg.per_device_train_batch_size, seq_len=seq, load_in_4bit=cfg.load_in_4bit,
                lora_r=cfg.lora.r, targets=list(cfg.lora.target_modules), optimizer=memory.optimizer_kind(cfg.optim),
                gradient_checkpointing=cfg.gradient_checkpointing, head="causal_lm",
                generation_batch=cfg.generation_batch_size or step, generation_len=seq,
                reward_models=reward_bases(cfg, ws), note=f"prompts up to {prompt} tokens" if prompt else "")


def reward_bases(cfg: RlooJobConfig, ws) -> tuple[str, ...]:
    """The base models of the reward and process reward runs the rewards load (those a workspace can name)."""
    if ws is None:
        return ()
    out = []
    for reward, key, sort in ((REWARD_MODEL, "reward_model_run", "outcome"),
                              (PROCESS_REWARD, "process_reward_run", "process")):
        rid = getattr(cfg, key).strip()
        if reward not in cfg.rewards or not rid:
            continue
        if rid == LATEST:
            found = scorer_runs(ws, (sort,))
            rid = found[0][1] if found else ""
        base = (saved_config(ws, rid) or {}).get("model") if rid and ws.run(rid) else None
        if base:
            out.append(base)
    return tuple(out)


def _generation_turns(cfg: RlooJobConfig):
    """Generate a step's completions in turns of half as many (a multiple of the micro-batch that divides them)."""
    step = cfg.per_device_train_batch_size * cfg.gradient_accumulation_steps
    now = cfg.generation_batch_size or step
    smaller = [g for g in range(now - 1, 0, -1) if step % g == 0 and g % cfg.per_device_train_batch_size == 0]
    if not smaller:
        return None
    g = next((g for g in smaller if g <= now // 2), smaller[-1])
    return dataclasses.replace(cfg, generation_batch_size=g), f"generation batch {g} (the step's {step} in turns)"


LEVERS = [memory_fit.checkpointing, _generation_turns, memory_fit.four_bit,
          memory_fit.micro_batch(lambda cfg: cfg.num_generations),
          memory_fit.shorter("max_completion_length", 256, "max completion length")]
"""What Fit to this card changes, in this order (core/memory_fit.py): a micro-batch stays whole groups of
num_generations; completions are never cut below 256 tokens."""


def run_config(ws, run_id: str) -> RlooJobConfig:
    """The config an RLOO run was launched with (for resume, overlays and the before/after)."""
    return saved_config(ws, run_id, RlooJobConfig)
