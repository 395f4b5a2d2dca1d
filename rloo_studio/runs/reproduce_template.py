#!/usr/bin/env python
"""Repeat an RLOO Studio run with Unsloth / TRL / PEFT directly.

    python reproduce.py            (from any folder; writes repro-out/ beside this file)

RLOO Studio copies this file into the folder of each run whose kind can be repeated, beside reproduce.json
(the run's config and the exact keyword arguments the run gave its trainer's config) and reproduce_job.py
(the part that trains a run of this kind: its `train(config, trainer_args, kit)`, where `kit` is this module,
with the helpers below). reproduce_job.py reads the data the run used from the same folder, builds the same
model and LoRA with the same seed, trains, and writes metrics.jsonl to repro-out/. Modules it stands on
(standard library only) are copied beside it. It imports no rloo_studio package.
"""
import importlib
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "repro-out"


def read_jsonl(path):
    return [json.loads(x) for x in Path(path).read_text().splitlines() if x.strip()]


def metrics_callback():
    from transformers import TrainerCallback

    class WriteMetrics(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kw):
            if state.is_world_process_zero:
                with open(OUT / "metrics.jsonl", "a") as f:
                    f.write(json.dumps({"step": state.global_step, **(logs or {})}) + "\n")

    return WriteMetrics()


def device_args():
    """What the run took from its machine rather than its config: this machine's."""
    import torch

    cuda = torch.cuda.is_available()
    bf16 = cuda and torch.cuda.is_bf16_supported()
    dtype = (torch.bfloat16 if bf16 else torch.float16) if cuda else torch.float32
    return dict(output_dir=str(OUT / "checkpoints"), use_cpu=not cuda, bf16=bf16, report_to=[]), dtype


def main():
    spec = json.loads((HERE / "reproduce.json").read_text())
    args = spec.get("trainer_args", spec.get("trl_args"))  # runs recorded before the neutral name: trl_args
    if args is None:
        sys.exit(f"run {spec['run_id']} stopped before it started training; there is nothing to repeat")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:  # Unsloth patches TRL's trainers; it must come before transformers / trl / peft
        importlib.import_module("unsloth")
    except Exception:
        pass
    OUT.mkdir(exist_ok=True)
    (OUT / "metrics.jsonl").unlink(missing_ok=True)
    sys.path.insert(0, str(HERE))
    job = importlib.import_module("reproduce_job")  # the part of this run's kind, copied beside this file
    job.train(spec["config"], args, sys.modules[__name__])


if __name__ == "__main__":
    sys.exit(main())
