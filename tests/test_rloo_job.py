"""The RLOO job: validation, presets, samples.jsonl, before/after, reward-model and custom rewards, stop/resume, CLI."""
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from reward_run_fixture import seeded_reward_run

from rloo_studio.core.config import build, field_docs
from rloo_studio.core.errors import ConfigError
from rloo_studio.core.model_options import LoraSpec
from rloo_studio.rloo.compare import compare, read_eval
from rloo_studio.rloo.completions import read_samples
from rloo_studio.rloo.config import RlooJobConfig, run_config
from rloo_studio.rloo.job import preflight, train_rloo
from rloo_studio.runs.jobs import KINDS
from rloo_studio.runs.runner import JobRunner, read_jsonl, read_metrics

ROOT = Path(__file__).resolve().parent.parent
TINY = dict(per_device_train_batch_size=8, num_generations=4, lora=LoraSpec(r=4, alpha=8), max_completion_length=48,
            save_steps=100)


@pytest.mark.parametrize("sets,message", [
    (["num_generations=1"], "num_generations must be between 2 and 16"),
    (["num_generations=17", "per_device_train_batch_size=34"], "num_generations must be between 2 and 16"),
    (["per_device_train_batch_size=6"], r"must be a multiple of num_generations \(4\); try 4"),
    (["rewards=[correctness, vibes]", "reward_weights=[1, 1]"], "unknown reward 'vibes'"),
    (["rewards=[correctness]"], "give one weight per reward: 1 rewards, 2 weights"),
    (["rewards=[reward_model]", "reward_weights=[1]"], "needs reward_model_run"),
    (["reward_clip_range=[1, 0]"], r"reward_clip_range must be \[low, high\] with low < high"),
    (["temperature=0"], "temperature must be above 0"),
    (["beta=-0.1"], "beta must be 0 or more"),
])
def test_validation_messages(sets, message):
    with pytest.raises(ConfigError, match=message):
        build(RlooJobConfig, None, sets)


def test_preflight_messages_need_the_workspace(workspace):
    assert len(preflight(RlooJobConfig(), workspace)) == 500
    with pytest.raises(ConfigError, match="no prompt set named 'nope'"):
        preflight(RlooJobConfig(prompt_set="nope"), workspace)
    with pytest.raises(ConfigError, match="has no answer column; drop the correctness reward"):
        preflight(RlooJobConfig(prompt_set="labeled-pairs"), workspace)
    assert preflight(RlooJobConfig(prompt_set="labeled-pairs", rewards=["think_format"], reward_weights=[1]), workspace)
    with pytest.raises(ConfigError, match="is not a reward run with a saved adapter"):
        preflight(RlooJobConfig(rewards=["reward_model"], reward_weights=[1], reward_model_run="reward-x"), workspace)
    with pytest.raises(ConfigError, match="is not a reward run"):
        preflight(RlooJobConfig(rewards=["reward_model"], reward_weights=[1], reward_model_run="../../etc"), workspace)
    with pytest.raises(ConfigError, match="does not exist; put your .py file in"):
        preflight(RlooJobConfig(rewards=["custom:mine.py"], reward_weights=[1]), workspace)


def test_presets_are_valid_and_follow_the_recipes():
    for name in KINDS["rloo"].preset_names():
        KINDS["rloo"].preset_config(name).validate()
    demo = KINDS["rloo"].preset_config("demo-cpu")
    assert demo.eval_prompts > 0 and "correctness" in demo.rewards and demo.model == RlooJobConfig().model
    for name in ("gpu-16gb", "gpu-24gb"):
        g = KINDS["rloo"].preset_config(name)
        assert (g.learning_rate, g.beta, g.num_generations, g.optim) == (1e-5, 0.05, 4, "adamw_8bit")
        assert "Thinking" in g.model and g.max_completion_length >= 1024
    assert (KINDS["rloo"].preset_config("gpu-16gb").load_in_4bit
            and not KINDS["rloo"].preset_config("gpu-24gb").load_in_4bit)
    with pytest.raises(ConfigError, match="unknown preset"):
        KINDS["rloo"].preset_config("tpu")


def _fake_reward_run(ws, rid="reward-fake"):
    return seeded_reward_run(ws, rid)


def test_run_records_samples_rewards_and_before_after(workspace):
    (workspace.root / "rewards").mkdir()
    (workspace.root / "rewards" / "brevity.py").write_text(
        "def reward(completions, completion_ids, **kwargs):\n    return [-len(i) / 100 for i in completion_ids]\n")
    rm = _fake_reward_run(workspace)
    rewards = ["correctness", "think_format", "reward_model", "custom:brevity.py"]
    weights = [1.0, 0.5, 0.1, 1.0]
    cfg = RlooJobConfig(max_steps=2, beta=0.0, eval_prompts=6, rewards=rewards, reward_weights=weights,
                        reward_model_run=rm, **TINY)
    r = JobRunner(workspace)
    rid = r.submit("rloo", cfg, train_rloo)
    assert r.wait(rid, 1800) == "completed", r.status(rid)
    d = workspace.run_dir(rid)
    for f in ("config.yaml", "status.json", "metrics.jsonl", "samples.jsonl", "eval.json",
              "adapter/adapter_config.json"):
        assert (d / f).exists(), f
    metrics = [m for m in read_metrics(d) if "reward" in m]
    assert "rewards/reward_model/mean" in metrics[-1] and "rewards/brevity/mean" in metrics[-1]
    rows = read_samples(d)
    assert [sum(x["step"] == s for x in rows) for s in (1, 2)] == [8, 8]
    for x in rows:
        assert list(x["rewards"]) == ["correctness", "think_format", "reward_model", "brevity"]
        assert x["total"] == pytest.approx(sum(w * v for w, v in zip(weights, x["rewards"].values())), abs=1e-3)
        assert x["rewards"]["brevity"] == pytest.approx(-x["length"] / 100)
        assert -3.0 <= x["rewards"]["reward_model"] <= 3.0  # normalized and clipped
        assert isinstance(x["truncated"], bool) and x["prompt"] and isinstance(x["completion"], str)
    # beta=0: the advantage is exactly the leave-one-out one: total minus the mean of the other k-1 in the group
    for g in range(0, len(rows), 4):
        group = rows[g:g + 4]
        assert len({x["prompt"] for x in group}) == 1
        for x in group:
            others = [y["total"] for y in group if y is not x]
            assert x["advantage"] == pytest.approx(x["total"] - sum(others) / 3, abs=1e-3)
    ev = read_eval(workspace, rid)
    assert ev["before"]["n"] == ev["after"]["n"] == 6
    assert "accuracy" in r.status(rid)["message"]
    assert run_config(workspace, rid) == cfg
    res = compare(workspace, rid, n=4)
    assert res["base"]["n"] == res["trained"]["n"] == 4 and len(res["rows"]) == 4
    assert {"prompt", "answer", "base", "trained"} <= set(res["rows"][0])


def test_stop_saves_adapter_and_resume_continues(workspace):
    r = JobRunner(workspace)
    cfg = RlooJobConfig(max_steps=4, **{**TINY, "per_device_train_batch_size": 4, "num_generations": 2})
    rid = r.submit("rloo", cfg, train_rloo)
    deadline = time.time() + 1800
    while not any("reward" in m for m in r.feed(rid)) and time.time() < deadline:
        time.sleep(0.2)
    r.stop(rid)
    assert r.wait(rid, 1800) == "stopped"
    d = workspace.run_dir(rid)
    stopped_at = max(m["step"] for m in read_metrics(d) if "reward" in m)
    assert stopped_at < 4
    assert (d / "adapter" / "adapter_config.json").exists()
    assert list((d / "checkpoints").glob(f"checkpoint-{stopped_at}"))
    r2 = JobRunner(workspace)  # as after an app restart
    assert r2.submit("rloo", run_config(workspace, rid), train_rloo, run_id=rid) == rid
    assert r2.wait(rid, 1800) == "completed", r2.status(rid)
    steps = [m["step"] for m in read_metrics(d) if "reward" in m]
    assert steps == list(range(1, 5)), steps  # continued where it stopped, no step trained twice
    assert sorted({x["step"] for x in read_samples(d)}) == [1, 2, 3, 4]


def test_custom_reward_that_raises_fails_the_run_with_a_clear_message(workspace):
    (workspace.root / "rewards").mkdir()
    (workspace.root / "rewards" / "boom.py").write_text("def reward(completions, **kwargs):\n    return {}['x']\n")
    r = JobRunner(workspace)
    cfg = RlooJobConfig(max_steps=1, rewards=["custom:boom.py"], reward_weights=[1.0], **TINY)
    rid = r.submit("rloo", cfg, train_rloo)
    assert r.wait(rid, 1800) == "failed"
    msg = r.status(rid)["message"]
    assert "reward function boom raised KeyError: 'x' (line 2" in msg and "Traceback" not in msg


def test_cli_train_rloo_writes_the_run_folder(tmp_path, capsys):
    out = subprocess.run(
        [sys.executable, "-m", "rloo_studio", "train-rloo", "--workspace", str(tmp_path / "ws"), "--demo",
         "--set", "max_steps=1", "--set", "per_device_train_batch_size=4", "--set", "num_generations=2",
         "--set", "max_completion_length=32", "--set", "lora.r=4"],
        cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert out.returncode == 0, out.stderr[-3000:]
    (run,) = (tmp_path / "ws" / "runs").iterdir()
    for f in ("config.yaml", "status.json", "metrics.jsonl", "samples.jsonl", "adapter/adapter_config.json"):
        assert (run / f).exists(), f
    assert json.loads((run / "status.json").read_text())["status"] == "completed"
    from rloo_studio.cli import main  # a refused config: the same CLI code in this process (no new process)

    assert main(["train-rloo", "--workspace", str(tmp_path / "ws"), "--set", "per_device_train_batch_size=5"]) == 2
    assert "must be a multiple of num_generations" in capsys.readouterr().err


# -- what the tab shows (rloo_studio.rloo.completions, launch_form), on hand-made records ----------------------------

def _rec(step, **kw):
    base = {"step": step, "loss": 0.0, "reward": 0.5, "kl": 0.01, "completions/mean_length": 30.0,
            "completions/clipped_ratio": 0.0, "frac_reward_zero_std": 0.0, "rewards/correctness/mean": 0.5}
    return {**base, **kw}


def test_warnings_truncation_zero_variance_and_reward_hacking():
    from rloo_studio.rloo import health

    calm = [_rec(s) for s in range(1, 11)]
    assert health.warnings(calm) == []
    cut = [_rec(s, **{"completions/clipped_ratio": 0.8}) for s in range(1, 6)]
    (w,) = health.warnings(cut, max_completion_length=64)
    assert "80% of recent completions are cut" in w and "(64 tokens)" in w and "Raise max completion length" in w
    samples = [{"step": 5, "truncated": True, "completion": "<think>1+1"}] * 3 + [
        {"step": 5, "truncated": True, "completion": "<think>x</think>ok"}]
    assert "75% of recent" in health.warnings(cut, 64, samples)[0]
    flat = [_rec(s, frac_reward_zero_std=0.9) for s in range(1, 6)]
    assert "every completion got the same reward" in health.warnings(flat)[0]
    hack = [_rec(s, reward=0.1 * s, **{"completions/mean_length": 20.0 + 5 * s}) for s in range(1, 13)]
    (w,) = health.warnings(hack)
    assert "rises together with completion length" in w and "reward hacking" in w
    kl = [_rec(s, reward=0.1 * s, kl=0.01 * s) for s in range(1, 13)]
    assert "together with KL" in health.warnings(kl)[0]


def test_form_round_trip_and_plain_errors():
    from rloo_studio.rloo import launch_form

    for name in KINDS["rloo"].preset_names():
        assert launch_form.config_from_form(launch_form.form_values(KINDS["rloo"].preset_config(name))) == \
            KINDS["rloo"].preset_config(name)
    vals = launch_form.form_values(RlooJobConfig())
    keys = [f.key for f in launch_form.form_fields()]
    vals[keys.index("per_device_train_batch_size")] = 6
    with pytest.raises(ConfigError, match="must be a multiple of num_generations"):
        launch_form.config_from_form(vals)
    vals = launch_form.form_values(RlooJobConfig())
    vals[keys.index("max_steps")] = 2.5
    with pytest.raises(ConfigError, match="max_steps: expected a whole number"):
        launch_form.config_from_form(vals)
    assert "field" not in field_docs(RlooJobConfig)["per_device_train_batch_size"].lower()


def test_prompt_file_import(tmp_path):
    from rloo_studio.core.errors import DataError
    from rloo_studio.core.workspace import Workspace
    from rloo_studio.label.importing import import_upload
    from rloo_studio.label.prompts import load_prompt_set

    ws = Workspace(tmp_path / "ws")
    f = tmp_path / "mine.csv"
    f.write_text("prompt,answer\nWhat is 1+1?,2\nAdd 2 and 2.,4\n")
    res = import_upload(ws, f, expect=("prompts",))
    assert (res.name, res.prompts, res.columns) == ("mine.csv", 2, ("answer",))
    rows = load_prompt_set(ws, "mine.csv")
    assert [(r["prompt"], str(r["answer"])) for r in rows] == [("What is 1+1?", "2"), ("Add 2 and 2.", "4")]
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text('{"prompt": "x", "chosen": "a", "rejected": "b"}\n')
    with pytest.raises(DataError, match="holds preference pairs.*must be a prompt set"):
        import_upload(ws, pairs, expect=("prompts",))
    bad = tmp_path / "bad.csv"
    bad.write_text("prompt,answer\nWhat is 1+1?,2\n,3\n")
    with pytest.raises(DataError, match="bad.csv row 3, field 'prompt': empty text"):
        import_upload(ws, bad, expect=("prompts",))
    assert ws.query("SELECT COUNT(*) FROM pairs")[0][0] == 0  # nothing written by the refused files


@pytest.mark.parametrize("backend", ["auto", "transformers"])  # Unsloth's policy and plain transformers + PEFT
def test_resume_from_half_way_equals_the_uninterrupted_run(workspace, tmp_path, backend):
    """Train 4 steps (checkpoint at 2), keep that run as the reference, drop checkpoint-4 and the
    adapter, resume: steps 3-4 must log the same metrics, sample the same completions with the same
    rewards and end on the same adapter, once each."""
    import shutil

    from resume_check import assert_same_run

    r = JobRunner(workspace)
    cfg = RlooJobConfig(max_steps=4, backend=backend, **{**TINY, "save_steps": 2, "learning_rate": 2e-3})
    rid = r.submit("rloo", cfg, train_rloo)
    assert r.wait(rid, 900) == "completed", r.status(rid)
    d = workspace.run_dir(rid)
    full = shutil.copytree(d, tmp_path / "uninterrupted")
    assert any(m.get("kl") for m in read_metrics(d) if m["step"] > 2)  # the policy moved: resume has to restore it
    shutil.rmtree(d / "checkpoints" / "checkpoint-4")
    shutil.rmtree(d / "adapter")
    assert r.submit("rloo", run_config(workspace, rid), train_rloo, run_id=rid) == rid
    assert r.wait(rid, 900) == "completed", r.status(rid)
    assert_same_run(d, full, from_step=2)
    assert sorted({x["step"] for x in read_samples(d)}) == [1, 2, 3, 4]
    assert read_samples(d) == read_samples(full)  # the same completions and rewards, each step once
    for name in KINDS["rloo"].step_files:  # every per-step file: one row per completion per step, as uninterrupted
        if name == "metrics.jsonl":
            continue
        rows = read_jsonl(d / name)
        assert Counter(x["step"] for x in rows) == {s: cfg.per_device_train_batch_size for s in range(1, 5)}, name
        assert rows == read_jsonl(full / name), name
