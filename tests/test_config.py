import dataclasses
import re

import pytest
import yaml

from rloo_studio.cli import main
from rloo_studio.core.config import build, field_docs, settings_help, to_yaml, to_yaml_commented
from rloo_studio.core.errors import ConfigError
from rloo_studio.reward.config import RewardJobConfig
from rloo_studio.rloo.config import RlooJobConfig
from rloo_studio.runs.jobs import KINDS


def test_yaml_round_trip_and_sets(tmp_path):
    cfg = RlooJobConfig(max_steps=7)
    f = tmp_path / "c.yaml"
    f.write_text(to_yaml(cfg))
    assert build(RlooJobConfig, f) == cfg
    out = build(RlooJobConfig, f, ["lora.r=4", "beta=0", "reward_clip_range=[-1, 1]", "rewards=correctness",
                                   "reward_weights=[1]"])
    assert out.lora.r == 4 and out.beta == 0.0 and out.reward_clip_range == [-1.0, 1.0]
    assert out.rewards == ["correctness"] and out.max_steps == 7


@pytest.mark.parametrize(
    "sets,message",
    [
        (["lr=1"], "unknown key lr; allowed keys: model, load_in_4bit"),
        (["lora.rank=3"], "unknown key lora.rank; allowed keys: lora.r, lora.alpha"),
        (["max_steps=ten"], "max_steps: expected a whole number, got 'ten'"),
        (["load_in_4bit=maybe"], "load_in_4bit: expected true or false"),
        (["num_generations=1"], "num_generations must be"),
        (["per_device_train_batch_size=6"], "must be a multiple of num_generations"),
        (["learning_rate=-1"], "learning_rate must be positive"),
        (["beta"], "--set expects key=value"),
    ],
)
def test_bad_overrides_name_the_key(sets, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[")):
        build(RlooJobConfig, None, sets)


def test_bad_yaml_names_the_line(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("max_steps: 3\nlora: {r: 4\n")
    with pytest.raises(ConfigError, match="not valid YAML at line"):
        build(RewardJobConfig, f)
    f.write_text("- a list\n")
    with pytest.raises(ConfigError, match="must hold a mapping"):
        build(RewardJobConfig, f)
    with pytest.raises(ConfigError, match="does not exist"):
        build(RewardJobConfig, tmp_path / "missing.yaml")


def test_reward_config_validation():
    with pytest.raises(ConfigError, match="max_length must be at least"):
        build(RewardJobConfig, None, ["max_length=0"])


def test_nested_override_keeps_the_parent_defaults():
    # RewardJobConfig's LoRA default is r=16, alpha=16: overriding r keeps that alpha.
    base = RewardJobConfig().lora
    out = build(RewardJobConfig, None, ["lora.r=8"])
    assert out.lora.r == 8 and out.lora.alpha == base.alpha and out.lora.dropout == base.dropout


def test_single_value_for_a_list_and_presets_as_base():
    assert build(RlooJobConfig, None, ["rewards=correctness", "reward_weights=1.0"]).reward_weights == [1.0]
    base = KINDS["rloo"].preset_config("demo-cpu")
    out = build(RlooJobConfig, None, ["max_steps=3"], base=base)
    assert out.max_steps == 3 and out.num_generations == base.num_generations and out.beta == base.beta



# -- help text: declared with each field, shown in the form, in --help and in a run's config.yaml -------------------
def _dataclasses_in(obj) -> list[type]:
    """The config's class and every dataclass nested in it (RlooJobConfig -> LoraSpec)."""
    out = [type(obj)]
    for f in dataclasses.fields(obj):
        if dataclasses.is_dataclass(getattr(obj, f.name)):
            out += _dataclasses_in(getattr(obj, f.name))
    return out


def test_every_field_of_every_job_config_has_help():
    from rloo_studio.runs.jobs import KINDS

    classes = {c for k in KINDS.values() for c in _dataclasses_in(k.config_class()())}
    assert {"RlooJobConfig", "RewardJobConfig", "LoraSpec"} <= {c.__name__ for c in classes}
    for cls in classes:
        for f in dataclasses.fields(cls):
            text = f.metadata.get("help", "")
            assert len(text.split()) >= 4, f"{cls.__name__}.{f.name} needs a help sentence, has {text!r}"
            assert field_docs(cls)[f.name] == " ".join(text.split())


def test_the_form_shows_each_fields_help():
    from rloo_studio.reward import launch_form as reward_launch_form
    from rloo_studio.rloo import launch_form as rloo_launch_form

    for fields, cls in ((rloo_launch_form.form_fields(), RlooJobConfig),
                        (reward_launch_form.form_fields(), RewardJobConfig)):
        helps = {key: text for key, _, text in settings_help(cls)}
        assert fields and all(f.help and f.help == helps[f.key] for f in fields)
    assert any(f.key == "lora.r" and "rank" in f.help for f in rloo_launch_form.form_fields())


def _commented_keys(text: str) -> dict[str, str]:
    """Each key of a commented YAML file (dotted when nested) with the comment lines right above it."""
    out, comment, parents = {}, [], []
    for line in text.splitlines():
        key = re.match(r"( *)(\w+):( |$)", line)
        if line.strip().startswith("# "):
            comment.append(line.strip()[2:])
            continue
        if key:
            depth = len(key.group(1)) // 2
            parents[depth:] = [key.group(2)]
            out[".".join(parents)] = " ".join(comment)
        comment = []
    return out


@pytest.mark.parametrize("cfg", [
    RlooJobConfig(model="a: b # not a comment\nsecond line", reward_clip_range=[-1.0, 1.0], max_steps=7,
                  rewards=["correctness"], reward_weights=[1.0]),
    RewardJobConfig(modules_to_save=["norm"], center_rewards_coefficient=None, max_steps=3),
])
def test_commented_config_yaml_round_trips(tmp_path, cfg):
    cfg.lora.target_modules = ["q_proj", "x: y # z\nw"]  # nested text that looks like YAML
    text = to_yaml_commented(cfg)
    assert yaml.safe_load(text) == dataclasses.asdict(cfg)
    (tmp_path / "c.yaml").write_text(text)
    assert build(type(cfg), tmp_path / "c.yaml") == cfg
    comments = _commented_keys(text)
    for key, _, help_text in settings_help(cfg):
        assert comments[key] == help_text, key
    assert comments["lora"] == field_docs(type(cfg))["lora"]


def test_a_runs_config_yaml_explains_each_key(tmp_path):
    from rloo_studio.core.workspace import Workspace
    from rloo_studio.runs.runner import prepare_run

    cfg = RlooJobConfig(max_steps=3, beta=0.0)
    d = prepare_run(Workspace(tmp_path / "ws"), "rloo", cfg).dir
    text = (d / "config.yaml").read_text()
    assert build(RlooJobConfig, d / "config.yaml") == cfg
    assert _commented_keys(text)["beta"] == field_docs(RlooJobConfig)["beta"]


@pytest.mark.parametrize("command,cls", [("train-rloo", RlooJobConfig), ("train-reward", RewardJobConfig)])
def test_train_help_lists_every_settable_key_with_its_help(capsys, command, cls):
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0
    flat = " ".join(out.split())
    for key, default, help_text in settings_help(cls):
        assert f"\n  {key} (default: " in out, key
        assert help_text in flat, key
    assert "lora.target_modules" in out
