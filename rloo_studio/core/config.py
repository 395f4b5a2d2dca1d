"""Typed config dataclasses <-> YAML files and `--set key=value` overrides.

The dataclass is the single source of defaults; the UI form, the YAML file and the CLI flags
are views of it. Nested dataclasses are addressed with dots: `--set lora.r=8`.
"""
from __future__ import annotations

import dataclasses
import json
import textwrap
import typing
from pathlib import Path
from typing import Any, TypeVar

import yaml

from rloo_studio.core.errors import ConfigError

T = TypeVar("T")


def field_docs(cls) -> dict[str, str]:
    """Each field's help text by name: `field(metadata={"help": ...})`, declared with the field (TRL's
    style), so the form, `--help` and a run's config.yaml all describe a setting in the same words."""
    return {f.name: " ".join(str(f.metadata.get("help", "")).split()) for f in dataclasses.fields(cls)}


def settings_help(obj, prefix: str = "") -> list[tuple[str, Any, str]]:
    """(dotted key, value, help) for every setting of a config (a class: its defaults), nested ones flattened
    (lora.r ...) with the values the parent gives them."""
    obj = obj() if isinstance(obj, type) else obj
    docs, out = field_docs(type(obj)), []
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            out += settings_help(value, prefix + f.name + ".")
        else:
            out.append((prefix + f.name, value, docs[f.name]))
    return out


def settings_text(cls, width: int = 100) -> str:
    """The settings of a config class as plain text for `--help`: each key with its default, then its help."""
    lines = ["settings (--set KEY=VALUE, or the keys of a --config YAML file):"]
    for key, default, text in settings_help(cls):
        lines.append(f"  {key} (default: {json.dumps(default)})")
        lines += _wrap(text, width, " " * 6)
    return "\n".join(lines)


def _wrap(text: str, width: int, indent: str) -> list[str]:
    # whole words only (no break at a hyphen or inside a path), so the text reads back word for word
    return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent, break_long_words=False,
                         break_on_hyphens=False)


def _commented(obj, indent: str, width: int) -> list[str]:
    docs, lines = field_docs(type(obj)), []
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        lines += _wrap(docs[f.name], width, indent + "# ")
        if dataclasses.is_dataclass(value):
            lines.append(f"{indent}{f.name}:")
            lines += _commented(value, indent + "  ", width)
        else:
            dumped = yaml.safe_dump({f.name: value}, sort_keys=False, width=float("inf")).rstrip("\n")
            lines += [indent + line for line in dumped.split("\n")]
    return lines


def to_yaml_commented(obj, width: int = 100) -> str:
    """to_yaml(obj) with each key's help as a `# ...` comment above it (a run's config.yaml); yaml.safe_load
    reads the same dict. A plain dict has no help to give and is written as it is."""
    if not dataclasses.is_dataclass(obj):
        return yaml.safe_dump(dict(obj), sort_keys=False)
    return "\n".join(_commented(obj, "", width)) + "\n"


def _fields(cls) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(cls)}


def _coerce(value: Any, tp: Any, key: str):
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        if value is None and type(None) in args:
            return None
        errors = []
        for a in args:
            if a is type(None):
                continue
            try:
                return _coerce(value, a, key)
            except ConfigError as e:
                errors.append(str(e))
        raise ConfigError(errors[0] if errors else f"{key}: bad value {value!r}")
    if origin is dict or tp is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{key}: expected a mapping of settings (KEY: VALUE), got {value!r}")
        return dict(value)
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise ConfigError(f"{key}: expected a mapping of {', '.join(_fields(tp))}, got {value!r}")
        return from_dict(tp, value, prefix=key + ".")
    if origin in (list, tuple):
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            value = [value]  # `--set reward_weights=1.0`: a one-item list
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{key}: expected a list, got {value!r}")
        inner = args[0] if args else Any
        out = [_coerce(v, inner, key) for v in value]
        return tuple(out) if origin is tuple else out
    if tp is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "yes", "1", "on", "false", "no", "0", "off"):
            return value.lower() in ("true", "yes", "1", "on")
        raise ConfigError(f"{key}: expected true or false, got {value!r}")
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, (int, str)) or (
            isinstance(value, str) and not value.strip().lstrip("-").isdigit()
        ):
            raise ConfigError(f"{key}: expected a whole number, got {value!r}")
        return int(value)
    if tp is float:
        try:
            if isinstance(value, bool):
                raise ValueError
            return float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{key}: expected a number, got {value!r}") from None
    if tp is str:
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise ConfigError(f"{key}: expected text, got {value!r}")
        return str(value)
    if typing.get_origin(tp) is typing.Literal:
        if value not in args:
            raise ConfigError(f"{key}: {value!r} is not allowed; choose one of {', '.join(map(str, args))}")
        return value
    return value


def from_dict(cls: type[T], data: dict, prefix: str = "", base: T | None = None) -> T:
    """`data` over `base` (default: the class defaults, e.g. a preset instead); validated at the top."""
    hints = typing.get_type_hints(cls)
    fields = _fields(cls)
    unknown = [k for k in data if k not in fields]
    if unknown:
        raise ConfigError(
            f"unknown key {prefix}{unknown[0]}; allowed keys: {', '.join(prefix + k for k in fields)}"
        )
    base = base if base is not None else cls()
    values = {}
    for k, v in data.items():
        current = getattr(base, k)
        if dataclasses.is_dataclass(current) and isinstance(v, dict):
            # A nested group merges into the parent's default (its default_factory), not the group's own.
            values[k] = from_dict(type(current), {**dataclasses.asdict(current), **v}, prefix=prefix + k + ".")
        elif isinstance(current, dict) and isinstance(v, dict):  # trl: a preset's, then the file's, then --set's
            values[k] = {**current, **v}
        else:
            values[k] = _coerce(v, hints[k], prefix + k)
    out = dataclasses.replace(base, **values)
    check = getattr(out, "validate", None)
    if check and not prefix:
        check()
    return out


def to_dict(obj) -> dict:
    return dataclasses.asdict(obj)


def to_yaml(obj) -> str:
    return yaml.safe_dump(to_dict(obj), sort_keys=False)


def load_yaml(cls: type[T], path: str | Path) -> dict:
    try:
        data = yaml.safe_load(Path(path).read_text()) or {}
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(f"{path} is not valid YAML{where}: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a mapping of config keys, not {type(data).__name__}")
    return data


def apply_sets(data: dict, sets: list[str]) -> dict:
    """Merge `key=value` strings (dots for nesting; values parsed as YAML scalars) into data."""
    data = {k: (dict(v) if isinstance(v, dict) else v) for k, v in data.items()}
    for s in sets or []:
        if "=" not in s:
            raise ConfigError(f"--set expects key=value, got {s!r}")
        key, raw = s.split("=", 1)
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            value = raw
        node = data
        *parents, leaf = key.strip().split(".")
        for p in parents:
            node = node.setdefault(p, {})
            if not isinstance(node, dict):
                raise ConfigError(f"--set {key}: {p} is not a group of settings")
        node[leaf] = value
    return data


def build(cls: type[T], path: str | Path | None = None, sets: list[str] | None = None, base: T | None = None) -> T:
    """base (a preset, or the defaults), then the YAML file, then each --set."""
    data = load_yaml(cls, path) if path else {}
    return from_dict(cls, apply_sets(data, sets or []), base=base)
