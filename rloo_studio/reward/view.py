"""What the Reward model tab shows, computed without gradio: the form's fields, the check before Train,
the runs list, a run's config as YAML and as a CLI command. (The Label tab's active labeling
by the reward model's uncertainty is reward.uncertainty.)"""
from __future__ import annotations

import dataclasses
import json
import shlex
import time

import yaml

from rloo_studio.core import form
from rloo_studio.reward.blind import breakdown_cell, breakdown_text
from rloo_studio.core.errors import DataError
from rloo_studio.reward.config import MIN_PAIRS, OPTIMIZERS, OVER_LENGTH, RewardJobConfig
from rloo_studio.reward.breakdown import read as read_breakdown
from rloo_studio.runs.runner import read_metrics, read_status
from rloo_studio.core.workspace import Workspace
from rloo_studio.reward.job import preflight
from rloo_studio.runs.catalog import without_traceback
from rloo_studio.runs.lifecycle import follow

CHOICES = {"over_length": OVER_LENGTH, "optim": OPTIMIZERS}  # fields the form offers as a list


# -- the form ----------------------------------------------------------------------------------

FormField = form.FormField


def form_fields() -> list[FormField]:
    return form.fields(RewardJobConfig, CHOICES)


def form_values(cfg: RewardJobConfig) -> list:
    return form.values(cfg, CHOICES)


def config_from_form(values: list) -> RewardJobConfig:
    """Widget values (form_fields() order) -> a validated config; raises ConfigError with the field's name."""
    return form.parse(RewardJobConfig, values, CHOICES)


# -- the check before Train --------------------------------------------------------------------------

def launch_check(ws: Workspace, cfg: RewardJobConfig) -> dict:
    """The pre-flight as a gate: raises a StudioError (missing model, too few pairs, every pair too long)
    for a run that could only fail, before a run folder exists; returns the pre-flight otherwise.
    Loads the tokenizer, never the model."""
    if not 0 <= cfg.seed < 2 ** 32:  # numpy's seeds are 32-bit; set_seed would fail in the job
        raise DataError(f"seed must be a whole number from 0 to {2 ** 32 - 1}, got {cfg.seed}.")
    pf = preflight(ws, cfg)
    if pf["pairs"] < MIN_PAIRS:
        raise DataError(f"Only {pf['pairs']} labeled pairs with a preference; label at least {MIN_PAIRS} "
                        "(better: 100+) in the Label tab, then train.")
    if pf["after"] == 0:
        raise DataError(f"Every pair is longer than max_length={cfg.max_length}; raise max_length to "
                        f"{pf['fit_max_length']} or choose over_length=truncate_thinking.")
    return pf


# -- a run's config as YAML and as the CLI command ------------------------------------------------

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


# -- progress, runs list --------------------------------------------------------------------------

def final_eval(records: list[dict]) -> dict:
    """The last held-out accuracy and margin a run logged ({} before its first evaluation)."""
    for r in reversed(records):
        if "eval_accuracy" in r:
            return {"accuracy": r["eval_accuracy"], "margin": r.get("eval_margin"), "step": r.get("step")}
    return {}


def log_tail(ws: Workspace, run_id: str, lines: int = 12) -> str:
    """The log's last lines, tracebacks left out (a failed run's page shows its traceback folded)."""
    try:
        text = (ws.run_dir(run_id) / "log.txt").read_text(errors="replace")
    except (OSError, ValueError):
        return ""
    return "\n".join(without_traceback(text.splitlines())[-lines:])


def _duration(r: dict) -> str:
    start = r["started"] or r["created"]
    end = r["ended"] or (time.time() if r["status"] == "running" else start)
    s = max(0.0, end - start)
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.1f} min"


RUN_HEADERS = ["run", "status", "pairs (train / held-out)", "held-out accuracy", "held-out right, by kind of pair",
               "duration", "message"]


def runs_rows(ws: Workspace) -> list[list]:
    """The reward-model runs, newest first, for the runs list."""
    rows = []
    for r in ws.runs("reward"):
        d = ws.run_dir(r["id"])
        try:
            pf = json.loads((d / "preflight.json").read_text()).get("trained_on", {})
            pairs = f"{pf['train']} / {pf['held_out']}"
        except (OSError, ValueError, KeyError):
            pairs = ""
        acc = final_eval(read_metrics(d)).get("accuracy")
        rows.append([r["id"], r["status"], pairs, "" if acc is None else f"{acc:.1%}", breakdown_cell(read_breakdown(d)),
                     _duration(r), r["message"]])
    return rows


def breakdown(ws: Workspace, run_id: str) -> str:
    """The run's held-out accuracy by kind of pair and by source, one line each ('' before it finished):
    a format-only reward model shows 100% on 'only chosen reasons' and chance on 'both reason'."""
    return breakdown_text(read_breakdown(ws.run_dir(run_id)))


def latest_run(ws: Workspace) -> str | None:
    """The active reward-model run, else the newest one."""
    return follow(ws, "reward")


def run_state(ws: Workspace, run_id: str) -> dict:
    return read_status(ws.run_dir(run_id))
