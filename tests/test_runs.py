import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rloo_studio.runs import catalog as R
from rloo_studio.runs.jobs import KINDS
from rloo_studio.runs.runner import JobRunner

ROOT = Path(__file__).resolve().parent.parent


def job(cfg, ctx):
    for s in range(1, cfg["n"] + 1):
        ctx.metric({"step": s, "loss": 1 / s, "reward": s * cfg["scale"]})
        time.sleep(cfg.get("sleep", 0))
        if ctx.should_stop():
            break


def test_summaries_overlay_and_delete(empty_workspace):
    r = JobRunner(empty_workspace)
    a = r.submit("rloo", {"n": 3, "scale": 1.0}, job)
    b = r.submit("rloo", {"n": 2, "scale": 2.0}, job)
    r.wait(b, 30)
    s = {x["id"]: x for x in R.summaries(empty_workspace)}
    assert s[a]["figures"] == "reward 3, loss 0.333" and s[b]["status"] == "completed"
    assert "reward" in R.numeric_keys(empty_workspace, [a, b])
    rows = R.overlay(empty_workspace, [a, b], "reward")
    assert sorted((x["run"], x["step"], x["value"]) for x in rows) == sorted(
        [(a, 1, 1.0), (a, 2, 2.0), (a, 3, 3.0), (b, 1, 2.0), (b, 2, 4.0)])
    slow = r.submit("rloo", {"n": 1000, "scale": 1.0, "sleep": 0.01}, job)
    while r.status(slow)["status"] != "running":
        time.sleep(0.01)
    with pytest.raises(ValueError, match="stop it before deleting"):
        R.delete_run(empty_workspace, slow)
    r.stop(slow)
    r.wait(slow, 30)
    R.delete_run(empty_workspace, a)
    assert not empty_workspace.run_dir(a).exists() and empty_workspace.run(a) is None
    with pytest.raises(KeyError):
        R.delete_run(empty_workspace, a)


def test_cli_runs_list_show_compare(empty_workspace):
    r = JobRunner(empty_workspace)
    a = r.submit("rloo", {"n": 2, "scale": 1.0}, job)
    r.wait(a, 30)
    env = {**os.environ, "RLOO_STUDIO_NO_UNSLOTH": "1"}

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "rloo_studio", "runs", *args, "--workspace",
                               str(empty_workspace.root)], cwd=ROOT, capture_output=True, text=True, env=env)

    out = cli("list")
    assert a in out.stdout and "completed" in out.stdout
    out = cli("show", a)
    assert '"status": "completed"' in out.stdout and '"reward": 2' in out.stdout
    out = cli("compare", a, "--metric", "reward", "--metric", "loss")
    assert out.stdout.splitlines()[1].split() == [a, "2", "0.5"]
    bad = cli("show", "nope")
    assert bad.returncode == 2 and "no run nope" in bad.stderr


def test_accelerate_launch_files_for_each_strategy(tmp_path):
    import yaml
    from accelerate.commands.config.config_args import load_config_from_file

    from rloo_studio.runs.accelerate_launch import STRATEGIES, launch_files

    cfg = tmp_path / "config.yaml"
    cfg.write_text("max_steps: 2\n")
    seen = set()
    for s in STRATEGIES:
        path, cmd = launch_files("rloo", tmp_path / "ws", cfg, s, num_gpus=4)
        c = yaml.safe_load(path.read_text())
        assert c["num_processes"] == 4
        seen.add(c["distributed_type"])
        assert load_config_from_file(str(path)).num_processes == 4  # accelerate launch reads it as written
        assert "fsdp_transformer_layer_cls_to_wrap" not in c.get("fsdp_config", {})  # any model's own layers
        assert cmd.startswith(f"accelerate launch --config_file {path} -m rloo_studio train-rloo")
        if "ZeRO" in s:
            assert c["deepspeed_config"]["zero_stage"] == int(s[-1])
    assert seen == {"MULTI_GPU", "FSDP", "DEEPSPEED"}
    path, cmd = launch_files("reward", tmp_path / "ws", cfg, "DDP", num_gpus=8, num_machines=2)
    assert yaml.safe_load(path.read_text())["num_processes"] == 16 and "--machine_rank MACHINE_RANK" in cmd
    with pytest.raises(ValueError):
        launch_files("generate", tmp_path, cfg, "DDP", 1)


def test_launch_from_the_form_writes_a_config_the_cli_reads(tmp_path):
    import shlex

    import yaml

    from rloo_studio.core.config import build
    from rloo_studio.reward.config import RewardJobConfig
    from rloo_studio.rloo.config import RlooJobConfig
    from rloo_studio.runs.accelerate_launch import launch_from_form

    for kind, cfg in (("rloo", KINDS["rloo"].preset_config("gpu-24gb")), ("reward", RewardJobConfig(max_steps=7))):
        run_config, path, cmd = launch_from_form(kind, tmp_path / "ws", cfg, "FSDP", 4)
        assert run_config.parent == path.parent and run_config.parent.parent == tmp_path / "ws" / "launch"
        assert build(type(cfg), run_config) == cfg  # the command trains exactly what the form held
        assert yaml.safe_load(path.read_text())["distributed_type"] == "FSDP"
        args = shlex.split(cmd)
        assert args[args.index("--config") + 1] == str(run_config)
        assert args[args.index("rloo_studio") + 1] == {"rloo": "train-rloo", "reward": "train-reward"}[kind]
    launch_from_form("rloo", tmp_path / "ws", RlooJobConfig(), "DDP", 2)  # a second click keeps the first
    assert len(list((tmp_path / "ws" / "launch").glob("rloo-*/config.yaml"))) == 2


def test_a_deepspeed_launch_says_what_to_install_when_deepspeed_is_missing(tmp_path):
    """DeepSpeed is in no default requirements file: the page says so with the launch files, and how to
    install it (requirements-gpu.txt, `make gpu-extras`); DDP and FSDP say nothing of it."""
    import importlib.util

    from rloo_studio.runs.accelerate_launch import launch_files, launch_text, missing_packages

    cfg = tmp_path / "config.yaml"
    cfg.write_text("max_steps: 2\n")
    installed = importlib.util.find_spec("deepspeed") is not None
    assert missing_packages("DeepSpeed ZeRO-3") == ([] if installed else ["deepspeed"])
    assert missing_packages("DDP") == missing_packages("FSDP") == []
    for strategy in ("DDP", "FSDP", "DeepSpeed ZeRO-2"):
        text = launch_text(*launch_files("rloo", tmp_path / "ws", cfg, strategy, num_gpus=2))
        warned = "deepspeed is not installed" in text and "make gpu-extras" in text
        assert warned == (strategy.startswith("DeepSpeed") and not installed), (strategy, text)
    root = Path(__file__).resolve().parent.parent
    assert "deepspeed==" in (root / "requirements-gpu.txt").read_text()
    assert "gpu-extras:" in (root / "Makefile").read_text()
