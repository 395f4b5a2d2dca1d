"""The RLOO tab's form without gradio: its fields and choices (from RlooJobConfig), the check before Launch,
the reward and prompt-set choices, and which run the tab follows."""
from __future__ import annotations

from pathlib import Path

from rloo_studio.core import form
from rloo_studio.core.errors import ConfigError
from rloo_studio.core.job_config import OPTIMIZERS, check_seeds
from rloo_studio.label.prompts import LABELED_PAIRS, load_prompts, prompt_sets
from rloo_studio.rloo import vllm_server
from rloo_studio.rloo.config import (
    CUSTOM_PREFIX,
    PROCESS_REWARD,
    REWARD_MODEL,
    RULE_REWARDS,
    RlooJobConfig,
    resolve_latest,
)
from rloo_studio.rloo.rewards import CUSTOM_DIR
from rloo_studio.runs.lifecycle import follow

FormField = form.FormField


def form_fields() -> list[FormField]:
    return form.fields(RlooJobConfig)


def form_values(cfg: RlooJobConfig) -> list:
    return form.values(cfg)


def config_from_form(values: list) -> RlooJobConfig:
    """Widget values (form_fields() order) -> a validated config; raises ConfigError naming the field."""
    return form.parse(RlooJobConfig, values)


def launch_check(ws, cfg: RlooJobConfig) -> None:
    """Everything Launch can know before a run exists: the job's pre-flight, plus the settings the job
    would only trip over after loading the model (LoRA layers, optimizer name, the held-out prompt set).
    Raises ConfigError in plain words. Resolves reward_model_run 'latest' in `cfg` (config.resolve_latest)."""
    from rloo_studio.rloo.job import preflight

    resolve_latest(ws, cfg)
    preflight(cfg, ws)
    check_seeds(cfg, "seed", "eval_seed")  # the LoRA shape: JobConfig.validate
    vllm_server.check(cfg)
    from transformers.training_args import OptimizerNames
    from trl import RLOOConfig

    from rloo_studio.core import trainer_settings
    from rloo_studio.rloo.config import DERIVED, trl_args

    trainer_settings.check_config(cfg, RLOOConfig, trl_args(cfg), DERIVED)

    if cfg.optim not in {o.value for o in OptimizerNames}:
        raise ConfigError(f"optim {str(cfg.optim)[:60]!r} is not an optimizer transformers knows; "
                          f"choose one of {', '.join(OPTIMIZERS)}.")
    if cfg.eval_prompts > 0:
        try:
            load_prompts(ws, cfg.eval_prompt_set)
        except ConfigError as exc:
            raise ConfigError(f"eval_prompt_set: {exc} (or set eval_prompts to 0 to skip the before/after "
                              "measurement)") from None


def weights_after_tick(before: list[str], after: list[str], weights: str) -> str:
    """reward_weights as text after the ticked rewards changed from `before` to `after`: every reward
    keeps the weight the user gave it, a newly ticked one gets 1.0, an unticked one loses its weight."""
    parts = [w.strip() for w in str(weights or "").split(",") if w.strip()]
    kept = dict(zip(before, parts))  # weights beyond the ticked rewards belong to none of them
    return ", ".join(kept.get(name, "1.0") for name in after)


MAX_COMPARE = 1000  # held-out prompts for before / after: more is a typo (each one is generated twice)


def reward_choices(ws) -> list[str]:
    """Reward names a user can tick: the rules, the reward model, and each .py file in <workspace>/rewards/."""
    files = sorted(p.name for p in (Path(ws.root) / CUSTOM_DIR).glob("*.py"))
    return [*RULE_REWARDS, REWARD_MODEL, PROCESS_REWARD, *[CUSTOM_PREFIX + f for f in files]]


def prompt_set_choices(ws) -> list[str]:
    return [s["name"] for s in prompt_sets(ws)] + [LABELED_PAIRS]


def latest_run(ws) -> str | None:
    """The active RLOO run, else the newest one."""
    return follow(ws, "rloo")
