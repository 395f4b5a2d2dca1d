"""The kinds of job, in one place: everything that differs from one kind of run to another.

Every module above this package reads a kind's entry instead of naming the kind: the CLI's `train-*` commands
and `runs show`, the tabs, the run panel, the Runs tab, the rewind on resume, reproduce.py, the memory
pre-flight and the scorer's loader. A new kind is its entry here, its config, its job and its tab.

A kind names its code by dotted path ("module:attr") and loads it only when asked: the job code lives in the
stages above this package (label, reward, rloo) and pulls in torch, while listing runs or parsing the CLI
must not.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rloo_studio.core.errors import ConfigError, StudioError

SCORERS = ("outcome", "process")
"""What a run's adapter can score with: an outcome reward model (one score per response, read at each
prefix) or a process reward model (each reasoning step's probability of being right)."""


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
    cli_help: str = ""  # the command's one-line help
    preflight: str | None = None  # "module:function", (ws, config) -> raises ConfigError / DataError in words
    memory: str | None = None  # "module:function", (config, ws) -> the memory estimate's inputs (core.memory.preflight)
    levers: str | None = None  # "module:LEVERS", what Fit to this card changes, in order (core.memory_fit)
    demo_data: str | None = None  # "module:function", ws -> what --demo adds for this kind beyond the demo's data
    key_metrics: tuple[tuple[str, str], ...] = ()  # (label, metric key): the figures that sum up a run
    resumable: bool = False  # saves checkpoints that Resume continues from
    step_files: tuple[str, ...] = ("metrics.jsonl",)  # per-step records a resumed run rewinds to its checkpoint
    adapter: str | None = None  # what its adapter/ is: "outcome" / "process" (a scorer), "policy", or None
    reproduce: str | None = None  # "module" whose file, copied beside reproduce.py, repeats the run (train())
    reproduce_modules: tuple[str, ...] = ()  # modules that part stands on, copied beside it (none imports rloo_studio)
    show: str | None = None  # "module:function", run folder -> extra entries of `runs show RUN` (a dict)
    charts: str | None = None  # "module:function", metric records -> the run's charts (runs.chart_data.Chart)
    runs_table: str | None = None  # "module:function", ws -> (headers, rows) of its tab's runs list (None: common)
    tab: str | None = None  # the UI module whose build(studio) lays out the kind's tab (None: the default job tab)
    tab_title: str = ""  # the tab's name ("": no tab)
    tab_after: str = ""  # the tab it follows (a kind's tab after another kind's: the order of KINDS decides)

    def config_class(self) -> type:
        return load(self.config)

    def train_fn(self):
        return load(self.train)

    def presets(self, ws=None) -> list:
        """The kind's presets (core.presets.Preset): the studio's files, then the workspace's own (`ws`: a Workspace
        or its folder)."""
        from rloo_studio.core import presets

        return presets.listing(self.name, getattr(ws, "root", ws))

    def preset_names(self, ws=None) -> list[str]:
        return [p.name for p in self.presets(ws)]

    def preset_config(self, name: str, ws=None):
        """The config a preset gives (its settings over the kind's defaults), validated; a ConfigError in words for
        a name that is no preset or a file with a setting the kind does not have."""
        from rloo_studio.core import presets
        from rloo_studio.core.config import from_dict

        p = presets.find(self.name, name, getattr(ws, "root", ws))
        try:
            return from_dict(self.config_class(), p.config)
        except StudioError as exc:
            raise ConfigError(f"preset {p.name} ({p.path}): {exc}") from None

    def check(self, ws, cfg) -> None:
        if self.preflight:
            load(self.preflight)(ws, cfg)

    def plan(self, cfg, ws=None, card_gib: float | None = None):
        """The memory estimate (core.memory.Estimate) on this machine, or on a card of `card_gib` GiB; with the
        workspace, sized from the job's own data where the kind can. None for a kind that trains nothing."""
        if not self.memory:
            return None
        from rloo_studio.core import memory

        kw = dict(load(self.memory)(cfg, ws))
        note = kw.pop("note", "")
        e = memory.preflight(card_gib=card_gib, **kw)
        e.note = note
        return e

    def fit(self, cfg, ws=None, card_gib: float | None = None):
        """(config, its estimate, what changed in words): the nearest config the estimate says fits
        (core.memory_fit), or `cfg` itself when it fits or nothing the levers change would."""
        from rloo_studio.core import memory_fit

        return memory_fit.fit(cfg, lambda c: self.plan(c, ws, card_gib), load(self.levers) if self.levers else [])

    @property
    def scorer(self) -> str | None:
        """'outcome' or 'process' when the kind's runs give a reward model Inspect and `score` can use."""
        return self.adapter if self.adapter in SCORERS else None

    @property
    def reproducible(self) -> bool:
        return self.reproduce is not None

    def reproduce_files(self) -> list[Path]:
        """The files copied beside a run's reproduce.py: the kind's part (as reproduce_job.py) first."""
        return [Path(importlib.import_module(m).__file__) for m in
                ([self.reproduce] if self.reproduce else []) + list(self.reproduce_modules)]

    def show_extra(self, run_dir: Path) -> dict:
        return load(self.show)(run_dir) if self.show else {}

    def chart_fn(self):
        return load(self.charts) if self.charts else None


KINDS: dict[str, JobKind] = {k.name: k for k in (
    JobKind("reward", "reward-model", train="rloo_studio.reward.job:train_reward",
            config="rloo_studio.reward.config:RewardJobConfig", cli="train-reward",
            cli_help="train a reward model on the labeled pairs, headless",
            preflight="rloo_studio.reward.launch_form:launch_check", memory="rloo_studio.reward.config:memory_inputs",
            levers="rloo_studio.reward.config:LEVERS",
            key_metrics=(("held-out accuracy", "eval_accuracy"), ("accuracy", "accuracy"), ("loss", "loss")),
            resumable=True, adapter="outcome", reproduce="rloo_studio.reward.reproduce_part",
            show="rloo_studio.reward.blind:run_figures", charts="rloo_studio.reward.charts:reward_charts",
            runs_table="rloo_studio.reward.runs_list:runs_table",
            tab="rloo_studio.ui.reward_tab", tab_title="Reward model", tab_after="Records"),
    JobKind("rloo", "RLOO", train="rloo_studio.rloo.job:train_rloo",
            config="rloo_studio.rloo.config:RlooJobConfig", cli="train-rloo",
            cli_help="train a policy with RLOO on a prompt set, headless",
            preflight="rloo_studio.rloo.launch_form:launch_check", memory="rloo_studio.rloo.config:memory_inputs",
            levers="rloo_studio.rloo.config:LEVERS",
            key_metrics=(("reward", "reward"), ("kl", "kl"), ("loss", "loss")),
            resumable=True, step_files=("metrics.jsonl", "samples.jsonl", "tokens.jsonl"), adapter="policy",
            reproduce="rloo_studio.rloo.reproduce_part",
            reproduce_modules=("rloo_studio.core.rule_rewards", "rloo_studio.core.thinking",
                               "rloo_studio.core.answers"),
            show="rloo_studio.rloo.evaluate:run_show", charts="rloo_studio.rloo.charts:rloo_charts",
            tab="rloo_studio.ui.rloo_tab", tab_title="RLOO", tab_after="Inspect"),
    JobKind("prm", "process-reward", train="rloo_studio.prm.job:train_prm",
            config="rloo_studio.prm.config:PrmJobConfig", cli="train-prm",
            cli_help="train a process reward model (each <think> step right or wrong) on the step labels, headless",
            preflight="rloo_studio.prm.launch_form:launch_check", memory="rloo_studio.prm.config:memory_inputs",
            levers="rloo_studio.prm.config:LEVERS",
            key_metrics=(("first wrong step found", "eval_first_wrong_found"), ("step accuracy", "eval_step_accuracy"),
                         ("loss", "loss")),
            demo_data="rloo_studio.label.demo_data:seed_demo_steps",
            resumable=True, adapter="process", reproduce="rloo_studio.prm.reproduce_part",
            reproduce_modules=("rloo_studio.prm.batches",),
            show="rloo_studio.prm.show:run_show", charts="rloo_studio.prm.charts:prm_charts",
            tab="rloo_studio.ui.prm_tab", tab_title="Process reward", tab_after="Reward model"),
    JobKind("rollouts", "step-labels-from-rollouts", train="rloo_studio.prm.rollouts:label_from_rollouts",
            config="rloo_studio.prm.rollouts:RolloutConfig", cli="label-steps",
            cli_help="label <think> steps from rollouts (a step is right when continuations from it reach the "
                     "answer), headless",
            preflight="rloo_studio.prm.rollouts:launch_check",
            key_metrics=(("responses", "responses"), ("steps", "steps"), ("steps right", "right_share")),
            resumable=True),
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


def trainable() -> list[JobKind]:
    """The kinds a person starts with a headless `train-*` command, in the registry's order."""
    return [k for k in KINDS.values() if k.cli]


def scorer_kinds(which: tuple[str, ...] = SCORERS) -> list[str]:
    """The names of the kinds whose runs give a scorer of these sorts ('outcome', 'process')."""
    return [k.name for k in KINDS.values() if k.scorer in which]


def policy_kinds() -> list[str]:
    """The names of the kinds whose adapter is a trained policy (exported for serving, answered in the Playground)."""
    return [k.name for k in KINDS.values() if k.adapter == "policy"]


def article(word: str) -> str:
    """'a' or 'an' before a kind's title: 'an RLOO run', 'a reward-model run'."""
    vowel = word[:1] in "aeiouAEIOU" or (word[:2].isupper() and word[:1] in "AEFHILMNORSX")
    return "an" if vowel else "a"


def tabbed() -> list[JobKind]:
    """The kinds with a tab, in the registry's order: a module of their own (`tab`), or the default job tab
    (ui/job_tab.py) where only `tab_title` is given."""
    return [k for k in KINDS.values() if k.tab or k.tab_title]
