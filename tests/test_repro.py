"""Runs are reproducible: from a YAML via the CLI, and by the standalone script in the run folder."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from rloo_studio.core.config import to_yaml
from rloo_studio.label.demo_data import open_workspace
from rloo_studio.reward.config import RewardJobConfig
from rloo_studio.reward.config import trl_args as reward_trl_args
from rloo_studio.reward.job import train_reward
from rloo_studio.runs.runner import JobRunner, read_metrics

ROOT = Path(__file__).resolve().parent.parent


def losses(records):
    return {m["step"]: m["loss"] for m in records if "loss" in m and "eval_loss" not in m}


@pytest.fixture(scope="module")
def ui_run(tmp_path_factory):
    ws = open_workspace(tmp_path_factory.mktemp("repro") / "ws", demo=True)
    cfg = RewardJobConfig(max_steps=4, eval_steps=2)
    r = JobRunner(ws)
    rid = r.submit("reward", cfg, train_reward)
    assert r.wait(rid, 600) == "completed", r.status(rid)
    return ws, cfg, rid


def test_cli_from_yaml_equals_the_ui_config_object(ui_run, tmp_path):
    ws, cfg, rid = ui_run
    yaml_file = tmp_path / "reward.yaml"
    yaml_file.write_text(to_yaml(cfg))
    out = subprocess.run([sys.executable, "-m", "rloo_studio", "train-reward", "--workspace", str(ws.root),
                          "--config", str(yaml_file)], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    cli_id = [r["id"] for r in ws.runs("reward") if r["id"] != rid][0]
    a, b = losses(read_metrics(ws.run_dir(rid))), losses(read_metrics(ws.run_dir(cli_id)))
    assert a.keys() == b.keys() == {1, 2, 3, 4}
    assert all(abs(a[k] - b[k]) < 1e-6 for k in a), (a, b)


def test_run_folder_records_how_to_repeat_it(ui_run):
    ws, cfg, rid = ui_run
    d = ws.run_dir(rid)
    cmd = (d / "command.txt").read_text()
    assert "-m rloo_studio train-reward --workspace" in cmd and str(d / "config.yaml") in cmd
    env = json.loads((d / "environment.json").read_text())
    assert env["versions"]["trl"] == "1.15.0" and env["seed"] == cfg.seed and env["git_commit"]
    assert "import rloo_studio" not in (d / "reproduce.py").read_text()
    held = sum(json.loads(x)["split"] == "held_out" for x in (d / "pairs.jsonl").read_text().splitlines())
    spec = json.loads((d / "reproduce.json").read_text())  # what reproduce.py gives RewardConfig
    assert spec["trainer_args"] == reward_trl_args(cfg, held_out=held) and spec["config"]["seed"] == cfg.seed


def test_standalone_script_reaches_the_same_metrics(ui_run):
    ws, cfg, rid = ui_run
    d = ws.run_dir(rid)
    out = subprocess.run([sys.executable, str(d / "reproduce.py")], cwd="/", capture_output=True, text=True,
                         timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    a = losses(read_metrics(d))
    b = losses([json.loads(x) for x in (d / "repro-out" / "metrics.jsonl").read_text().splitlines()])
    assert a.keys() == b.keys()
    assert all(abs(a[k] - b[k]) < 1e-4 for k in a), (a, b)
    ev = lambda rs: [m["eval_accuracy"] for m in rs if "eval_accuracy" in m]  # noqa: E731
    assert ev(read_metrics(d))[:2] == pytest.approx(
        ev([json.loads(x) for x in (d / "repro-out" / "metrics.jsonl").read_text().splitlines()])[:2], abs=1e-4)


def test_tensorboard_event_files_in_the_run_folder(ui_run):
    ws, cfg, rid = ui_run
    events = list(ws.run_dir(rid).rglob("events.out.tfevents.*"))
    assert events and all(e.stat().st_size > 0 for e in events)


def test_rloo_standalone_script_reaches_the_same_metrics(tmp_path):
    from rloo_studio.rloo.config import RlooJobConfig, trl_args
    from rloo_studio.rloo.job import train_rloo

    ws = open_workspace(tmp_path / "ws", demo=True)
    r = JobRunner(ws)
    cfg = RlooJobConfig(max_steps=3, per_device_train_batch_size=8, eval_prompts=0)
    rid = r.submit("rloo", cfg, train_rloo)
    assert r.wait(rid, 600) == "completed", r.status(rid)
    d = ws.run_dir(rid)
    assert json.loads((d / "reproduce.json").read_text())["trainer_args"] == trl_args(cfg)
    src = (d / "reproduce.py").read_text()
    assert "import rloo_studio" not in src and "from rloo_studio" not in src
    out = subprocess.run([sys.executable, str(d / "reproduce.py")], cwd="/", capture_output=True, text=True,
                         timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    mine = [m for m in read_metrics(d) if "reward" in m]
    theirs = [json.loads(x) for x in (d / "repro-out" / "metrics.jsonl").read_text().splitlines()]
    theirs = [m for m in theirs if "reward" in m]
    assert [m["step"] for m in mine] == [m["step"] for m in theirs] == [1, 2, 3]
    for a, b in zip(mine, theirs):
        for k in ("reward", "kl", "rewards/correctness/mean", "completions/mean_length"):
            assert abs(a[k] - b[k]) < 1e-3, (k, a[k], b[k])
