"""One mapping from a job's config to TRL's config: the job and the run folder's reproduce.py use the same dict."""
import ast
import dataclasses
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from rloo_studio.core.paths import DEMO_MODEL
from rloo_studio.reward import config as reward_config
from rloo_studio.rloo import config as rloo_config
from rloo_studio.runs.jobs import KINDS
from rloo_studio.runs.reproduce_script import TEMPLATE, record_trainer_args, write_script

ROOT = Path(__file__).resolve().parent.parent
RUNTIME = {"output_dir", "use_cpu", "bf16", "report_to", "eval_on_start"}  # the machine's and the resume's
TRL_CONFIGS = {"RLOOConfig", "RewardConfig"}
STANDALONE = {"importlib", "json", "os", "re", "sys", "pathlib", "torch", "transformers", "trl", "peft", "datasets",
              "unsloth", "answers", "thinking", "rule_rewards"}


def trl_calls(path: Path) -> list[ast.Call]:
    tree = ast.parse(path.read_text())
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) in TRL_CONFIGS]


PARTS = [ROOT / "rloo_studio/rloo/reproduce_part.py", ROOT / "rloo_studio/reward/reproduce_part.py"]


@pytest.mark.parametrize("path", [ROOT / "rloo_studio/rloo/job.py", ROOT / "rloo_studio/reward/job.py", *PARTS])
def test_trl_configs_are_built_from_the_one_dict_plus_runtime_values(path):
    calls = trl_calls(path)
    assert calls, path
    for call in calls:
        named = {k.arg for k in call.keywords if k.arg}
        assert named <= RUNTIME, (path.name, named - RUNTIME)  # anything else belongs in trl_args
        assert any(k.arg is None for k in call.keywords)  # the **trl_args
        assert not call.args


@pytest.mark.parametrize("path", [ROOT / "rloo_studio/rloo/job.py", ROOT / "rloo_studio/reward/job.py"])
def test_jobs_record_the_dict_they_give_trl(path):
    src = path.read_text()
    assert "record_trainer_args(ctx.dir, kw)" in src
    for call in trl_calls(path):
        splat = [k.value for k in call.keywords if k.arg is None]
        assert [getattr(v, "id", None) for v in splat] == ["kw"]


def same(args, kw) -> bool:
    """TRL kept every argument as given (transformers may swap adamw_torch for its fused variant)."""
    return {k: getattr(args, k) for k in kw if k != "optim"} == {k: v for k, v in kw.items() if k != "optim"}


def rloo_configs():
    yield rloo_config.RlooJobConfig()
    yield rloo_config.RlooJobConfig(reward_clip_range=[-1.0, 2.0], enable_thinking=False, beta=0.0)
    yield from (KINDS["rloo"].preset_config(p) for p in KINDS["rloo"].preset_names())


def test_rloo_trl_args_are_plain_data_that_trl_takes(tmp_path):
    from trl import RLOOConfig

    for cfg in rloo_configs():
        kw = rloo_config.trl_args(cfg)
        assert json.loads(json.dumps(kw)) == kw  # the recorded copy is the same dict
        args = RLOOConfig(**kw, output_dir=str(tmp_path), use_cpu=True, report_to=[])
        assert same(args, kw)
    assert kw["chat_template_kwargs"] == {"enable_thinking": True} and kw["remove_unused_columns"] is False


@pytest.mark.parametrize("held_out", [0, 10, 100, 300])
def test_reward_trl_args_are_plain_data_that_trl_takes(tmp_path, held_out):
    from trl import RewardConfig

    for cfg in [reward_config.RewardJobConfig(),
                *(KINDS["reward"].preset_config(p) for p in KINDS["reward"].preset_names())]:
        kw = reward_config.trl_args(cfg, held_out=held_out, max_length=2048 if held_out == 10 else None)
        assert json.loads(json.dumps(kw)) == kw
        args = RewardConfig(**kw, output_dir=str(tmp_path), use_cpu=True, report_to=[])
        assert same(args, kw)
        assert kw["eval_strategy"] == ("steps" if held_out else "no")
        assert kw["per_device_eval_batch_size"] == (cfg.eval_batch_size or max(1, min(held_out, 256)))
    assert reward_config.trl_args(reward_config.RewardJobConfig(), 10, 2048)["max_length"] == 2048


def test_run_folder_holds_the_script_the_config_and_the_recorded_args(tmp_path):
    cfg = rloo_config.RlooJobConfig()
    d = tmp_path / "rloo-1"
    d.mkdir()
    write_script(d, "rloo", dataclasses.asdict(cfg))
    assert (d / "reproduce.py").read_text() == TEMPLATE.read_text()
    assert (d / "reproduce_job.py").read_text() == PARTS[0].read_text()
    assert {p.name for p in d.iterdir()} == {"reproduce.py", "reproduce_job.py", "reproduce.json", "rule_rewards.py",
                                            "thinking.py", "answers.py"}
    record_trainer_args(d, rloo_config.trl_args(cfg))
    write_script(d, "rloo", dataclasses.asdict(cfg))  # a resume rewrites the folder's records
    spec = json.loads((d / "reproduce.json").read_text())
    assert spec == {"run_id": "rloo-1", "kind": "rloo", "config": dataclasses.asdict(cfg),
                    "trainer_args": rloo_config.trl_args(cfg)}
    write_script(tmp_path, "label", {})
    assert not (tmp_path / "reproduce.py").exists()


def test_a_script_run_before_training_says_so(tmp_path):
    write_script(tmp_path, "reward", dataclasses.asdict(reward_config.RewardJobConfig()))
    out = subprocess.run([sys.executable, str(tmp_path / "reproduce.py")], capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and "stopped before it started training" in out.stderr


def test_template_is_lint_clean_and_standalone(tmp_path):
    write_script(tmp_path, "rloo", dataclasses.asdict(rloo_config.RlooJobConfig()))
    files = [str(tmp_path / n)
             for n in ("reproduce.py", "reproduce_job.py", "rule_rewards.py", "thinking.py", "answers.py")]
    out = subprocess.run([sys.executable, "-m", "pyflakes", str(TEMPLATE), *map(str, PARTS), *files],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    for f in files:
        tree = ast.parse(Path(f).read_text())
        mods = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        mods |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0}
        assert mods <= STANDALONE | {"__future__", "dataclasses", "typing"}, (f, mods - STANDALONE)


@pytest.fixture()
def script(tmp_path):
    """The run folder's RLOO part of reproduce.py, imported as it runs there (reproduce_job.py, with rule_rewards.py,
    thinking.py and answers.py beside it)."""
    write_script(tmp_path, "rloo", dataclasses.asdict(rloo_config.RlooJobConfig()))
    sys.path.insert(0, str(tmp_path))
    spec = importlib.util.spec_from_file_location("reproduce_under_test", tmp_path / "reproduce_job.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    yield mod
    sys.path.remove(str(tmp_path))
    for name in ("rule_rewards", "thinking", "answers"):
        sys.modules.pop(name, None)


COMPLETIONS = ["<think>12 and 30 make 42. Wait, is that right? Yes.</think>The answer is 42.",
               "<think>short</think>1,326", "12 + 30 = 42", "<think>never closed 42", "</think>#### 42",
               "<think>sum</think>so \\boxed{42}", "<think>x</think>"]


@pytest.mark.parametrize("think", [True, False])
def test_rule_rewards_of_the_script_score_as_the_studio_does(script, think):
    from transformers import AutoTokenizer

    from rloo_studio.core.answers import ANSWER_FORMATS
    from rloo_studio.rloo import rewards as R

    tok = AutoTokenizer.from_pretrained(str(DEMO_MODEL))
    kw = dict(prompts=[""] * len(COMPLETIONS), completions=COMPLETIONS,
              completion_ids=[tok(c, add_special_tokens=False)["input_ids"] for c in COMPLETIONS],
              answer=["42", "1326", "42", "42", "42", "42", "0"])
    scores = set()
    for fmt in ANSWER_FORMATS:
        theirs = script.rule_rewards(["think_format", "answer_present", "correctness"], tok, fmt, think)
        mine = [R.rule_reward(n, tok, fmt, think) for n in ("think_format", "answer_present", "correctness")]
        for a, b in zip(mine, theirs):
            assert a.__name__ == b.__name__  # TRL logs rewards/<name>/mean
            assert a(**kw) == b(**kw), (a.__name__, fmt)
            scores.add(tuple(a(**kw)))
    assert len(scores) >= 4  # the completions tell the rewards and the formats apart
