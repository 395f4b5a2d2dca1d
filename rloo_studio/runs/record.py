"""What a run folder records so that the run can be repeated: the command, versions, commit, seed."""
from __future__ import annotations

import json
import platform
import shlex
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from rloo_studio.core.paths import REPO
from rloo_studio.runs.jobs import KINDS
from rloo_studio.runs.reproduce_script import write_script

PACKAGES = ("torch", "transformers", "trl", "peft", "datasets", "accelerate", "bitsandbytes", "unsloth",
            "unsloth_zoo", "gradio")


def versions() -> dict:
    out = {"python": platform.python_version()}
    for p in PACKAGES:
        try:
            out[p] = version(p)
        except PackageNotFoundError:
            out[p] = None
    return out


def git_commit() -> str | None:
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=5)
        if head.returncode:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                               capture_output=True, text=True, timeout=5).stdout.strip()
        return head.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def cli_command(kind: str, workspace: Path, run_dir: Path) -> str | None:
    """The headless command that runs the same config (the UI's runs print it too)."""
    sub = KINDS[kind].cli if kind in KINDS else None
    if not sub:
        return None
    return " ".join([shlex.quote(sys.executable), "-m", "rloo_studio", sub, "--workspace", shlex.quote(str(workspace)),
                     "--config", shlex.quote(str(run_dir / "config.yaml"))])


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        out.update(_flat(v, f"{prefix}{k}.") if isinstance(v, dict) else {prefix + k: v})
    return out


def set_command(kind: str, config: dict, workspace) -> str | None:
    """The headless command that trains the same run, as `--set` flags for the settings that differ from the
    kind's defaults (None for a kind without a command)."""
    import dataclasses

    sub = KINDS[kind].cli if kind in KINDS else None
    if not sub:
        return None
    default = dataclasses.asdict(KINDS[kind].config_class()())
    base = _flat(default)
    # A nested group (lora) that differs is written out whole: `--set lora.r=4` alone would fill the
    # group's other keys from LoraSpec's own defaults, which are not this config's defaults.
    changed_groups = {k for k, v in config.items() if isinstance(v, dict) and v != default.get(k)}
    parts = [f"python -m rloo_studio {sub}", f"--workspace {shlex.quote(str(workspace))}"]
    for k, v in _flat(config).items():
        if k in base and base[k] == v and k.split(".")[0] not in changed_groups:
            continue
        text = ",".join(map(str, v)) if isinstance(v, list) else (
            "null" if v is None else str(v).lower() if isinstance(v, bool) else str(v))
        parts.append(f"--set {shlex.quote(f'{k}={text}')}")
    return " \\\n  ".join(parts)


def write(run_dir: Path, kind: str, workspace: Path, config: dict) -> None:
    cmd = cli_command(kind, workspace, run_dir)
    if cmd:
        (run_dir / "command.txt").write_text(cmd + "\n")
    info = {"versions": versions(), "git_commit": git_commit(), "seed": config.get("seed"),
            "platform": platform.platform(), "argv": sys.argv}
    (run_dir / "environment.json").write_text(json.dumps(info, indent=1))

    write_script(run_dir, kind, config)
