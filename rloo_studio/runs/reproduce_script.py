"""What lets a run be repeated with TRL, PEFT and Unsloth directly (no rloo_studio import).

The folder of a run whose kind names a reproduce part (runs.jobs.JobKind.reproduce) gets `reproduce.py` (a copy
of reproduce_template.py, the same for every kind), `reproduce_job.py` (the kind's part: its train function) with
the standard-library modules that part stands on, and `reproduce.json`, which the script reads: the job's config
and, written by the job just before it builds its trainer, the exact keyword arguments it gave the trainer's config
(`trainer_args`: rloo.config.trl_args, reward.config.trl_args). So the mapping from the studio's config to the
trainer's exists once.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from rloo_studio.runs.jobs import KINDS

TEMPLATE = Path(__file__).with_name("reproduce_template.py")
SPEC = "reproduce.json"
PART = "reproduce_job.py"  # the kind's part, as the template imports it
ARGS = "trainer_args"  # the key of the trainer's arguments in reproduce.json


def write_script(run_dir: Path, kind: str, config: dict) -> None:
    """Copy the script in and record the config; a resumed run keeps the trainer arguments it recorded."""
    if kind not in KINDS or not KINDS[kind].reproducible:
        return
    run_dir = Path(run_dir)
    spec_file = run_dir / SPEC
    old = json.loads(spec_file.read_text()) if spec_file.exists() else {}
    spec = {"run_id": run_dir.name, "kind": kind, "config": config}
    if ARGS in old:
        spec[ARGS] = old[ARGS]
    spec_file.write_text(json.dumps(spec, indent=1))
    shutil.copyfile(TEMPLATE, run_dir / "reproduce.py")
    part, *modules = KINDS[kind].reproduce_files()
    shutil.copyfile(part, run_dir / PART)
    for module in modules:
        shutil.copyfile(module, run_dir / module.name)


def record_trainer_args(run_dir: Path, args: dict) -> None:
    """Called by the job with the dict it passes to its trainer's config; reproduce.py passes the same one."""
    spec_file = Path(run_dir) / SPEC
    spec = json.loads(spec_file.read_text()) if spec_file.exists() else {}
    spec[ARGS] = args
    tmp = spec_file.with_name(f"{SPEC}.{os.getpid()}")  # under accelerate every process records: whole files only
    tmp.write_text(json.dumps(spec, indent=1))
    os.replace(tmp, spec_file)
