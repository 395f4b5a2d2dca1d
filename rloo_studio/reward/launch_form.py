"""The Reward model tab's form without gradio: its fields and choices (from RewardJobConfig), the check
before Train, and a run's config as YAML and as the CLI command."""
from __future__ import annotations

import dataclasses
import shlex
import yaml
from rloo_studio.core import form
from rloo_studio.core.errors import DataError
from rloo_studio.reward.config import MIN_PAIRS, OPTIMIZERS, OVER_LENGTH, RewardJobConfig
from rloo_studio.core.workspace import Workspace
from rloo_studio.reward.job import PREFLIGHT_SAMPLE, preflight


CHOICES = {"over_length": OVER_LENGTH, "optim": OPTIMIZERS}  # fields the form offers as a list


FormField = form.FormField


def form_fields() -> list[FormField]:
    return form.fields(RewardJobConfig, CHOICES)


def form_values(cfg: RewardJobConfig) -> list:
    return form.values(cfg, CHOICES)


def config_from_form(values: list) -> RewardJobConfig:
    """Widget values (form_fields() order) -> a validated config; raises ConfigError with the field's name."""
    return form.parse(RewardJobConfig, values, CHOICES)


def launch_check(ws: Workspace, cfg: RewardJobConfig) -> dict:
    """The pre-flight as a gate: raises a StudioError (missing model, too few pairs, every pair too long)
    for a run that could only fail, before a run folder exists; returns the pre-flight otherwise.
    Loads the tokenizer, never the model."""
    if not 0 <= cfg.seed < 2 ** 32:  # numpy's seeds are 32-bit; set_seed would fail in the job
        raise DataError(f"seed must be a whole number from 0 to {2 ** 32 - 1}, got {cfg.seed}.")
    pf = preflight(ws, cfg, sample=PREFLIGHT_SAMPLE)
    if pf["pairs"] < MIN_PAIRS:
        raise DataError(f"Only {pf['pairs']} labeled pairs with a preference; label at least {MIN_PAIRS} "
                        "(better: 100+) in the Label tab, then train.")
    if pf["after"] == 0:
        raise DataError(f"Every pair is longer than max_length={cfg.max_length}; raise max_length to "
                        f"{pf['fit_max_length']} or choose over_length=truncate_thinking.")
    return pf


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        out.update(_flat(v, f"{prefix}{k}.") if isinstance(v, dict) else {prefix + k: v})
    return out


def config_yaml(cfg: RewardJobConfig | dict) -> str:
    d = dataclasses.asdict(cfg) if dataclasses.is_dataclass(cfg) else cfg
    return yaml.safe_dump(d, sort_keys=False)


def cli_command(cfg: RewardJobConfig | dict, workspace: str) -> str:
    """The headless command that trains the same run: only settings that differ from the defaults."""
    d = dataclasses.asdict(cfg) if dataclasses.is_dataclass(cfg) else cfg
    default = dataclasses.asdict(RewardJobConfig())
    base = _flat(default)
    # A nested group (lora) that differs is written out whole: `--set lora.r=4` alone would fill the
    # group's other keys from LoraSpec's own defaults, which are not this config's defaults.
    changed_groups = {k for k, v in d.items() if isinstance(v, dict) and v != default.get(k)}
    parts = ["python -m rloo_studio train-reward", f"--workspace {shlex.quote(str(workspace))}"]
    for k, v in _flat(d).items():
        if k in base and base[k] == v and k.split(".")[0] not in changed_groups:
            continue
        text = ",".join(map(str, v)) if isinstance(v, list) else ("null" if v is None else str(v).lower() if isinstance(v, bool) else str(v))
        parts.append(f"--set {shlex.quote(f'{k}={text}')}")
    return " \\\n  ".join(parts)
