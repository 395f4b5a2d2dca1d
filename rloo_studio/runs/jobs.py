"""The kinds of job, in one place: what the CLI, the tabs, the Runs tab and reproduce.py read about each.

A kind names its config class, presets, pre-flight and train function by dotted path ("module:attr") and
loads them only when asked: the job code lives in the stages above this package (label, reward, rloo) and
pulls in torch, while listing runs or parsing the CLI must not.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any


def load(path: str) -> Any:
    """The object a "module:attr" path names."""
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


@dataclass(frozen=True)
class JobKind:
    name: str  # the run ids' prefix and the runs table's `kind`
    title: str  # how the page names a run of this kind ("reward-model run")
    train: str  # "module:function", fn(config, ctx) -> final message
    config: str  # "module:Class", the typed config (form, YAML, CLI and reproduce.py views of it)
    cli: str | None = None  # the headless command that trains it (None: the app starts it only)
    presets: str | None = None  # "module:PRESETS" (a dict of preset names)
    preset: str | None = None  # "module:function", name -> config
    preflight: str | None = None  # "module:function", (ws, config) -> raises ConfigError / DataError in words
    key_metrics: tuple[tuple[str, str], ...] = ()  # (label, metric key): the figures that sum up a run
    resumable: bool = False  # saves checkpoints that Resume continues from
    reproducible: bool = False  # writes reproduce.py beside its run

    def config_class(self) -> type:
        return load(self.config)

    def train_fn(self):
        return load(self.train)

    def preset_names(self) -> list[str]:
        return list(load(self.presets)) if self.presets else []

    def preset_config(self, name: str):
        return load(self.preset)(name)

    def check(self, ws, cfg) -> None:
        if self.preflight:
            load(self.preflight)(ws, cfg)


KINDS: dict[str, JobKind] = {k.name: k for k in (
    JobKind("reward", "reward-model", train="rloo_studio.reward.job:train_reward",
            config="rloo_studio.reward.config:RewardJobConfig", cli="train-reward",
            presets="rloo_studio.reward.config:PRESETS", preset="rloo_studio.reward.config:preset",
            preflight="rloo_studio.reward.launch_form:launch_check",
            key_metrics=(("held-out accuracy", "eval_accuracy"), ("accuracy", "accuracy"), ("loss", "loss")),
            resumable=True, reproducible=True),
    JobKind("rloo", "RLOO", train="rloo_studio.rloo.job:train_rloo",
            config="rloo_studio.rloo.config:RlooJobConfig", cli="train-rloo",
            presets="rloo_studio.rloo.config:PRESETS", preset="rloo_studio.rloo.config:preset",
            preflight="rloo_studio.rloo.launch_form:launch_check",
            key_metrics=(("reward", "reward"), ("kl", "kl"), ("loss", "loss")),
            resumable=True, reproducible=True),
    JobKind("generate", "generate", train="rloo_studio.label.generate:generate_candidates",
            config="rloo_studio.label.generate:GenerateConfig", key_metrics=(("pairs", "pairs"),)),
    JobKind("export", "export", train="rloo_studio.runs.export_model:export_job",
            config="rloo_studio.runs.export_model:ExportConfig"),
)}


def kind(name: str) -> JobKind:
    return KINDS[name]


def title(name: str | None) -> str:
    """'reward-model', 'RLOO', … ('' for no kind, the name itself for one this build does not know)."""
    return KINDS[name].title if name in KINDS else (name or "")


def by_cli(command: str) -> JobKind:
    return next(k for k in KINDS.values() if k.cli == command)
