"""Presets as YAML files: the studio's own in the package (rloo_studio/presets/<kind>/<name>.yaml) and a user's in
the workspace (<workspace>/presets/<kind>/<name>.yaml), listed together, the user's marked as theirs (and, under a
studio preset's name, taking its place).

A preset file holds `description` (one line), `measured` (the figures it was measured with, and where), `order`
(its place in the lists) and `config`: the settings that differ from the kind's defaults, as a config.yaml or
`--config` file would give them. '{assets}' in a text setting stands for the studio's bundled assets (the demo
models). Standard library and PyYAML only.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from rloo_studio.core.errors import ConfigError
from rloo_studio.core.paths import ASSETS, typed_path

STUDIO = Path(__file__).resolve().parents[1] / "presets"
USER_DIR = "presets"  # in a workspace
KEYS = {"description", "measured", "order", "config"}


@dataclass(frozen=True)
class Preset:
    kind: str
    name: str
    path: Path
    description: str
    measured: str
    order: float
    config: dict
    yours: bool

    @property
    def label(self) -> str:
        """How the lists show it: a user's preset is marked as theirs."""
        return f"{self.name} (yours)" if self.yours else self.name


def read(path: Path, kind: str, yours: bool) -> Preset:
    """A preset file, or a ConfigError that names the file and what is wrong with it."""
    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"preset {path}: cannot be read as YAML ({str(exc)[:200]})") from None
    if not isinstance(data, dict) or not isinstance(data.get("config", {}), dict) or set(data) - KEYS:
        raise ConfigError(f"preset {path}: expected the keys {', '.join(sorted(KEYS))} (config: a mapping of "
                          "settings), got "
                          f"{', '.join(map(str, data)) if isinstance(data, dict) else type(data).__name__}")
    return Preset(kind, path.stem, Path(path), str(data.get("description", "")), str(data.get("measured", "")),
                  float(data.get("order", 100)), _expand(data.get("config") or {}), yours)


def _expand(value):
    if isinstance(value, str):
        return value.replace("{assets}", str(ASSETS))
    if isinstance(value, dict):
        return {k: _expand(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v) for v in value]
    return value


def user_dir(workspace_root, kind: str) -> Path:
    return Path(workspace_root) / USER_DIR / kind


def listing(kind: str, workspace_root=None) -> list[Preset]:
    """The kind's presets: the studio's in their order, then the user's; a user's file of a studio preset's name
    takes that preset's place. A user's file that cannot be read is left out of the list (`show` says why)."""
    found = {p.stem: read(p, kind, False) for p in sorted((STUDIO / kind).glob("*.yaml"))}
    if workspace_root is not None:
        for p in sorted(user_dir(workspace_root, kind).glob("*.yaml")):
            try:
                found[p.stem] = read(p, kind, True)
            except ConfigError:
                continue
    return sorted(found.values(), key=lambda p: (p.yours, p.order, p.name))


def find(kind: str, name: str, workspace_root=None) -> Preset:
    for p in listing(kind, workspace_root):
        if name in (p.name, p.label):
            return p
    names = ", ".join(p.name for p in listing(kind, workspace_root))
    raise ConfigError(f"unknown preset {name!r}; choose one of {names}")


def copy(kind: str, name: str, target: str, workspace_root=None) -> Path:
    """A preset's file copied: to `target` when it is a path (a folder or FILE.yaml), else into the workspace as
    a preset of that name (<workspace>/presets/<kind>/<target>.yaml), where the tabs and the CLI list it. Never
    overwrites a file."""
    src = find(kind, name, workspace_root)
    to = typed_path(target, "file to copy the preset to")
    if to.suffix not in (".yaml", ".yml") and len(to.parts) == 1:
        if workspace_root is None:
            raise ConfigError("a preset name needs a workspace to go in (--workspace), or give a FILE.yaml")
        to = user_dir(workspace_root, kind) / f"{to}.yaml"
    elif to.is_dir():
        to = to / src.path.name
    if to.exists():
        raise ConfigError(f"{to} exists: choose another name (nothing was copied)")
    to.parent.mkdir(parents=True, exist_ok=True)
    to.write_text(src.path.read_text())
    return to
