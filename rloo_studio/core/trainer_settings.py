"""A job's `trl:` settings: any field of the trainer's own config (TRL's RLOOConfig / RewardConfig, transformers'
TrainingArguments) that the studio does not set, passed to it as it is, and checked against that class before a run
exists: an unknown key is refused with the nearest names, a value of the wrong type with the type it takes, and a
key the studio sets itself with the studio's setting to use instead.

The config classes are TRL's and transformers', imported only when a check runs (they load torch).
"""
from __future__ import annotations

import dataclasses
import difflib
import enum
import typing
from typing import Any

from rloo_studio.core.errors import ConfigError

# What the studio sets for every trainer from the run itself: never a user's to change.
RUN_KEYS = {"output_dir": "the run's folder (runs/<id>/checkpoints)", "use_cpu": "the device the studio found",
            "bf16": "the device the studio found", "report_to": "the studio's metrics and TensorBoard files",
            "eval_on_start": "the studio (step 0 is evaluated on a new run, not on a resume)",
            "disable_tqdm": "the studio's own progress", "save_strategy": "save_steps",
            "eval_strategy": "eval_steps",
            "logging_nan_inf_filter": "the studio's NaN guard (a NaN loss fails the run)",
            "remove_unused_columns": "the studio (its data columns are read by the rewards and the collators)"}

# Settings transformers 5 renamed, still known by their old names from TRL's docs and recipes: passed under the new.
RENAMED = {"warmup_ratio": "warmup_steps"}  # a warmup_steps below 1 is a share of the steps (transformers >= 5)


def passed(settings: dict) -> dict:
    """The trl settings as the trainer's config takes them (RENAMED keys under their new names)."""
    return {RENAMED.get(k, k): v for k, v in settings.items()}


def check(settings: dict, config_cls: type, studio_keys: dict[str, str]) -> None:
    """Raise a ConfigError in words for the first `trl.KEY` that `config_cls` does not take as given."""
    if not isinstance(settings, dict):
        raise ConfigError(f"trl: expected a mapping of {config_cls.__name__} settings (KEY: VALUE), got {settings!r}")
    fields = {f.name: f for f in dataclasses.fields(config_cls) if f.init}
    hints = _hints(config_cls)
    for old, new in RENAMED.items():
        if new in fields and old in settings:
            if not isinstance(settings[old], (int, float)) or not 0 <= settings[old] < 1:
                raise ConfigError(f"trl.{old}: a share of the steps from 0 to below 1, got {settings[old]!r}.")
            if new in settings:
                raise ConfigError(f"trl.{old} and trl.{new} both set the warm-up: keep one.")
    fields |= {old: fields[new] for old, new in RENAMED.items() if new in fields}
    for key, value in settings.items():
        if key in studio_keys:
            raise ConfigError(f"trl.{key}: the studio sets {key} itself, from {studio_keys[key]}.")
        if key not in fields:
            near = difflib.get_close_matches(str(key), list(fields), n=3, cutoff=0.6)
            raise ConfigError(f"trl.{key} is not a setting of {config_cls.__name__}" +
                              (f"; did you mean {', '.join(near)}?" if near else
                               f"; its settings are listed in {config_cls.__module__}.{config_cls.__name__}."))
        tp = hints.get(key, Any)
        if not _takes(tp, value):
            raise ConfigError(f"trl.{key}: {config_cls.__name__} takes {_words(tp)} here, got {value!r}.")


def _hints(cls) -> dict:
    try:
        return typing.get_type_hints(cls)
    except Exception:  # noqa: BLE001 — a forward reference the module cannot resolve: check the names only
        return {}


def _takes(tp, value) -> bool:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any or tp is typing.Any:
        return True
    if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        return any(_takes(a, value) for a in args)
    if tp is type(None):
        return value is None
    if origin is typing.Literal:
        return value in args
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if tp is str:
        return isinstance(value, str)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return isinstance(value, tp) or value in {m.value for m in tp}
    if origin in (list, tuple) or tp in (list, tuple):
        return isinstance(value, (list, tuple))
    if origin is dict or tp is dict:
        return isinstance(value, dict)
    return not isinstance(tp, type) or isinstance(value, tp)


def _words(tp) -> str:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        return " or ".join(_words(a) for a in args)
    if tp is type(None):
        return "null"
    if origin is typing.Literal:
        return "one of " + ", ".join(map(repr, args))
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return "one of " + ", ".join(repr(m.value) for m in tp)
    names = {bool: "true or false", int: "a whole number", float: "a number", str: "text", list: "a list",
             dict: "a mapping"}
    return names.get(origin or tp, getattr(tp, "__name__", str(tp)))


def refused(studio_cls: type, trainer_cls: type, derived: dict[str, str]) -> dict[str, str]:
    """{trainer key: what to set instead}: the studio's own settings that the trainer's config also has under that
    name, the keys it derives from settings of its own (`derived`), and what it sets from the run (RUN_KEYS)."""
    trainer = {f.name for f in dataclasses.fields(trainer_cls)}
    own = sorted({f.name for f in dataclasses.fields(studio_cls)} & trainer)
    out = {k: f"its own setting {k}: use --set {k}=… (the form's {k})" for k in own}
    out |= {k: f"its setting {v}: change that" for k, v in derived.items()}
    return out | RUN_KEYS


def check_config(cfg, trainer_cls: type, trainer_kw: dict, derived: dict[str, str]) -> None:
    """`cfg.trl` checked key by key against `trainer_cls`, then the trainer's config built once from what the job
    would give it (`trainer_kw`, its trl settings included), so that what the class itself refuses is said before a
    run exists."""
    import tempfile

    check(cfg.trl, trainer_cls, refused(type(cfg), trainer_cls, derived))
    if not cfg.trl:
        return
    with tempfile.TemporaryDirectory() as out:
        try:
            trainer_cls(**trainer_kw, output_dir=out, use_cpu=True, bf16=False, report_to=[])
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"trl: {trainer_cls.__name__} refuses these settings: {str(exc)[:400]}") from None
