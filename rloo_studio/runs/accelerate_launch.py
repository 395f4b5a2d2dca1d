"""Multi-GPU / multi-node launch: an accelerate config file and the command that uses it.

The same train-reward / train-rloo jobs run under `accelerate launch`; DDP, FSDP and DeepSpeed
are accelerate's and TRL's. This only writes what a user would otherwise type.
"""
from __future__ import annotations

import shlex
from pathlib import Path

import yaml

from rloo_studio.core.config import to_yaml
from rloo_studio.runs.jobs import KINDS

STRATEGIES = ("DDP", "FSDP", "DeepSpeed ZeRO-2", "DeepSpeed ZeRO-3")


def accelerate_config(strategy: str, num_gpus: int, num_machines: int = 1, machine_rank: int = 0,
                      main_ip: str = "", mixed_precision: str = "bf16") -> dict:
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    if num_gpus < 1 or num_machines < 1:
        raise ValueError("need at least one GPU and one machine")
    from accelerate.commands.config.config_args import ClusterConfig  # accelerate's own schema and defaults
    from accelerate.utils import ComputeEnvironment, DistributedType

    kind = {"DDP": DistributedType.MULTI_GPU, "FSDP": DistributedType.FSDP}.get(strategy, DistributedType.DEEPSPEED)
    cfg = ClusterConfig(
        compute_environment=ComputeEnvironment.LOCAL_MACHINE, distributed_type=kind, mixed_precision=mixed_precision,
        use_cpu=False, debug=False, num_processes=num_gpus * num_machines, machine_rank=machine_rank,
        num_machines=num_machines, main_process_ip=(main_ip or "MAIN_NODE_IP") if num_machines > 1 else None,
        main_process_port=29500 if num_machines > 1 else None, rdzv_backend="static", same_network=True,
        main_training_function="main").to_dict()
    if strategy == "FSDP":
        # no layer class named: accelerate wraps the model's own _no_split_modules (any architecture)
        cfg["fsdp_config"] = {
            "fsdp_version": 2, "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
            "fsdp_state_dict_type": "SHARDED_STATE_DICT",
            "fsdp_cpu_ram_efficient_loading": True, "fsdp_offload_params": False, "fsdp_reshard_after_forward": True,
        }
    elif strategy != "DDP":
        stage = 2 if strategy.endswith("2") else 3
        cfg["deepspeed_config"] = {
            "zero_stage": stage, "offload_optimizer_device": "none", "offload_param_device": "none",
            "zero3_init_flag": stage == 3, "zero3_save_16bit_model": stage == 3,
        }
    return cfg


def launch_files(kind: str, workspace: Path, run_config: Path, strategy: str, num_gpus: int,
                 num_machines: int = 1, out_dir: Path | None = None) -> tuple[Path, str]:
    """Write <out_dir>/accelerate-<strategy>.yaml; return it and the launch command."""
    sub = KINDS[kind].cli if kind in KINDS else None
    if sub is None:
        raise ValueError(f"runs of kind {kind!r} are not launched with accelerate")
    out_dir = out_dir or run_config.parent
    name = "accelerate-" + strategy.lower().replace(" ", "-") + f"-{num_gpus * num_machines}gpu.yaml"
    path = out_dir / name
    path.write_text(yaml.safe_dump(accelerate_config(strategy, num_gpus, num_machines), sort_keys=False))
    cmd = ["accelerate", "launch", "--config_file", str(path), "-m", "rloo_studio", sub,
           "--workspace", str(workspace), "--config", str(run_config)]
    if num_machines > 1:
        cmd[2:2] = ["--machine_rank", "MACHINE_RANK"]
    return path, " ".join(shlex.quote(c) if c != "MACHINE_RANK" else c for c in cmd)


def launch_from_form(kind: str, workspace: Path, cfg, strategy: str, num_gpus: int,
                     num_machines: int = 1) -> tuple[Path, Path, str]:
    """The Reward / RLOO form as it stands -> launch/<kind>-<time>/config.yaml, the accelerate config
    beside it, and the command (config.yaml, accelerate file, command)."""
    import time


    accelerate_config(strategy, num_gpus, num_machines)  # a bad choice is said before anything is written
    base = Path(workspace) / "launch" / f"{kind}-{time.strftime('%Y%m%d-%H%M%S')}"
    folder, n = base, 1
    while folder.exists():  # two clicks in one second: keep both
        n += 1
        folder = base.with_name(f"{base.name}-{n}")
    folder.mkdir(parents=True)
    run_config = folder / "config.yaml"
    run_config.write_text(to_yaml(cfg))
    path, cmd = launch_files(kind, Path(workspace), run_config, strategy, num_gpus, num_machines, folder)
    return run_config, path, cmd


def missing_packages(strategy: str) -> list[str]:
    """Packages a strategy needs that this environment lacks (DeepSpeed is in no requirements file but
    requirements-gpu.txt: `make gpu-extras`)."""
    import importlib.util

    needs = ["deepspeed"] if strategy.startswith("DeepSpeed") else []
    return [p for p in needs if importlib.util.find_spec(p) is None]


def launch_text(path: Path, cmd: str, run_config: Path | None = None) -> str:
    """Markdown for the page: what was written and what to run on each machine, and what to install first
    when the chosen strategy needs a package this environment lacks."""
    head = f"Wrote `{run_config}` (the form as it stands) and `{path}`:" if run_config else f"Wrote `{path}`:"
    text = path.read_text()
    missing = missing_packages("DeepSpeed") if "deepspeed_config" in text else []  # the file says the strategy
    note = (f"\n\n**⚠ {', '.join(missing)} is not installed in this environment.** Install it on every machine "
            "before launching: `make gpu-extras` (pip install -r requirements-gpu.txt; it builds against the "
            "installed torch and needs a CUDA toolkit), or choose DDP or FSDP, which need nothing more.") \
        if missing else ""
    return f"{head}\n```yaml\n{text}```\nOn each machine run:\n```\n{cmd}\n```{note}"
