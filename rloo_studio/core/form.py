"""A config dataclass as a flat form, without gradio: one field per setting (nested ones dotted,
lora.r), the config's values in that order, and widget values back to a validated config.

The Reward model and RLOO tabs both build their forms from this, so the dataclass stays the
single source of defaults, types and help texts."""
from __future__ import annotations

import dataclasses
import typing

import yaml

from rloo_studio.core.config import field_docs, from_dict
from rloo_studio.core.errors import ConfigError


@dataclasses.dataclass(frozen=True)
class FormField:
    key: str  # dotted for nested settings: lora.r
    kind: str  # bool | int | float | str | list | optional_list | optional_float | choice | mapping (YAML text)
    default: typing.Any
    help: str
    choices: tuple = ()


def _kind(tp, choices: tuple) -> str:
    args = typing.get_args(tp)
    if choices:
        return "choice"
    if tp in (bool, int, float, str):
        return tp.__name__
    if typing.get_origin(tp) in (list, tuple):
        return "list"
    if typing.get_origin(tp) is dict or tp is dict:
        return "mapping"
    if type(None) in args and float in args:
        return "optional_float"
    if type(None) in args and any(typing.get_origin(a) in (list, tuple) for a in args):
        return "optional_list"
    return "str"


def fields(cls, choices: dict | None = None, prefix: str = "", obj=None) -> list[FormField]:
    """One entry per setting of the config dataclass, nested ones flattened (lora.r ...). A setting offered as a
    list names its choices where it is declared (`metadata={"choices": ...}`); `choices` may add others by name."""
    obj = obj if obj is not None else cls()
    hints, docs, out = typing.get_type_hints(cls), field_docs(cls), []
    for f in dataclasses.fields(cls):
        if f.metadata.get("form") is False:  # a setting for YAML / --set only (the tab has no widget for it yet)
            continue
        tp, value, key = hints[f.name], getattr(obj, f.name), prefix + f.name
        if dataclasses.is_dataclass(tp):
            out += fields(tp, choices, key + ".", value)
            continue
        offered = tuple((choices or {}).get(f.name, f.metadata.get("choices", ())))
        out.append(FormField(key, _kind(tp, offered), value, docs.get(f.name, ""), offered))
    return out


def values(cfg, choices: dict | None = None) -> list:
    """The config's values in fields() order, as the widgets hold them (lists as 'a, b', None as '')."""
    out = []
    for f in fields(type(cfg), choices, obj=cfg):
        v = cfg
        for part in f.key.split("."):
            v = getattr(v, part)
        if f.kind in ("list", "optional_list"):
            v = "" if v is None else ", ".join(map(str, v))
        elif f.kind == "mapping":
            v = yaml.safe_dump(v, sort_keys=False).strip() if v else ""
        out.append("" if v is None else v)
    return out


def parse(cls, widget_values: list, choices: dict | None = None):
    """Widget values (fields() order) -> a validated config; raises ConfigError naming the field."""
    data: dict = {}
    for f, v in zip(fields(cls, choices), widget_values):
        blank = v is None or (isinstance(v, str) and not v.strip())
        if f.kind in ("list", "optional_list"):
            if not isinstance(v, list):  # a text box: "a, b"; a checkbox group gives a list
                v = [x.strip() for x in str(v or "").split(",") if x.strip()]
            if f.kind == "optional_list" and not v:
                v = None
        elif f.kind == "optional_float" and blank:
            v = None
        elif f.kind == "mapping":
            v = _mapping(f.key, v, blank)
        elif f.kind == "int":
            if blank or (isinstance(v, float) and not v.is_integer()):
                raise ConfigError(f"{f.key}: expected a whole number, got {v!r}")
            v = int(v) if isinstance(v, float) else v
        elif f.kind == "float" and blank:
            raise ConfigError(f"{f.key}: expected a number")
        node = data
        *parents, leaf = f.key.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = v
    return from_dict(cls, data)


def _mapping(key: str, text, blank: bool) -> dict:
    """A YAML box's text as a mapping ({} when empty), or a ConfigError naming the field and the line."""
    if blank:
        return {}
    if isinstance(text, dict):
        return text
    try:
        value = yaml.safe_load(str(text))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise ConfigError(f"{key}: not valid YAML{where}: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{key}: expected one setting a line (KEY: VALUE), got {str(text)[:60]!r}")
    return value
