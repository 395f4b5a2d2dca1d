"""What lets a run be repeated with TRL, PEFT and Unsloth directly (no rloo_studio import).

Each reward or RLOO run folder gets `reproduce.py` (a copy of reproduce_template.py) and `reproduce.json`,
which it reads: the job's config (model, LoRA, rewards) and, written by the job just before it builds its
TRL config, the exact keyword arguments it gave RLOOConfig / RewardConfig (rloo.config.trl_args,
reward.config.trl_args). So the mapping from the studio's config to TRL's exists once. RLOO runs also get
rule_rewards.py and the thinking.py and answers.py it stands on: the studio's own rule rewards, standard
library only, so the script scores with the job's code.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from rloo_studio.core import answers, rule_rewards, thinking
from rloo_studio.runs.jobs import KINDS

TEMPLATE = Path(__file__).with_name("reproduce_template.py")
SPEC = "reproduce.json"


def write_script(run_dir: Path, kind: str, config: dict) -> None:
    """Copy the script in and record the config; a resumed run keeps the TRL arguments it recorded."""
    if kind not in KINDS or not KINDS[kind].reproducible:
        return
    run_dir = Path(run_dir)
    spec_file = run_dir / SPEC
    old = json.loads(spec_file.read_text()) if spec_file.exists() else {}
    spec = {"run_id": run_dir.name, "kind": kind, "config": config}
    if "trl_args" in old:
        spec["trl_args"] = old["trl_args"]
    spec_file.write_text(json.dumps(spec, indent=1))
    shutil.copyfile(TEMPLATE, run_dir / "reproduce.py")
    if kind == "rloo":
        for module in (rule_rewards, thinking, answers):
            shutil.copyfile(module.__file__, run_dir / Path(module.__file__).name)


def record_trl_args(run_dir: Path, args: dict) -> None:
    """Called by the job with the dict it passes to TRL; reproduce.py passes the same one."""
    spec_file = Path(run_dir) / SPEC
    spec = json.loads(spec_file.read_text()) if spec_file.exists() else {}
    spec["trl_args"] = args
    tmp = spec_file.with_name(f"{SPEC}.{os.getpid()}")  # under accelerate every process records: whole files only
    tmp.write_text(json.dumps(spec, indent=1))
    os.replace(tmp, spec_file)
