"""The Reward model tab's form without gradio: its fields and choices (from RewardJobConfig), the check
before Train, and a run's config as YAML and as the CLI command."""
from __future__ import annotations

import dataclasses

import yaml

from rloo_studio.core import form
from rloo_studio.core.errors import DataError
from rloo_studio.core.job_config import check_seeds
from rloo_studio.core.workspace import Workspace
from rloo_studio.reward.config import MIN_PAIRS, RewardJobConfig
from rloo_studio.reward.job import PREFLIGHT_SAMPLE, preflight
from rloo_studio.runs.record import set_command

FormField = form.FormField


def form_fields() -> list[FormField]:
    return form.fields(RewardJobConfig)


def form_values(cfg: RewardJobConfig) -> list:
    return form.values(cfg)


def config_from_form(values: list) -> RewardJobConfig:
    """Widget values (form_fields() order) -> a validated config; raises ConfigError with the field's name."""
    return form.parse(RewardJobConfig, values)


def launch_check(ws: Workspace, cfg: RewardJobConfig) -> dict:
    """The pre-flight as a gate: raises a StudioError (missing model, too few pairs, every pair too long)
    for a run that could only fail, before a run folder exists; returns the pre-flight otherwise.
    Loads the tokenizer, never the model."""
    check_seeds(cfg)
    from trl import RewardConfig

    from rloo_studio.core import trainer_settings
    from rloo_studio.reward.config import DERIVED, trl_args

    trainer_settings.check_config(cfg, RewardConfig, trl_args(cfg, held_out=1), DERIVED)
    pf = preflight(ws, cfg, sample=PREFLIGHT_SAMPLE)
    if pf["pairs"] < MIN_PAIRS:
        raise DataError(f"Only {pf['pairs']} labeled pairs with a preference; label at least {MIN_PAIRS} "
                        "(better: 100+) in the Label tab, then train.")
    if pf["after"] == 0:
        raise DataError(f"Every pair is longer than max_length={cfg.max_length}; raise max_length to "
                        f"{pf['fit_max_length']} or choose over_length=truncate_thinking.")
    return pf


def config_yaml(cfg: RewardJobConfig | dict) -> str:
    d = dataclasses.asdict(cfg) if dataclasses.is_dataclass(cfg) else cfg
    return yaml.safe_dump(d, sort_keys=False)


def cli_command(cfg: RewardJobConfig | dict, workspace: str) -> str:
    """The headless command that trains the same run: only settings that differ from the defaults."""
    return set_command("reward", dataclasses.asdict(cfg) if dataclasses.is_dataclass(cfg) else cfg, workspace)
