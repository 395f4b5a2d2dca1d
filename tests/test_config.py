import pytest

from rloo_studio.core.config import build, to_yaml
from rloo_studio.core.errors import ConfigError
from rloo_studio.reward.config import RewardJobConfig
from rloo_studio.rloo.config import RlooJobConfig


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
        (["lr=1"], "unknown key lr; allowed keys: model, backend"),
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
    from rloo_studio.rloo.config import preset

    assert build(RlooJobConfig, None, ["rewards=correctness", "reward_weights=1.0"]).reward_weights == [1.0]
    base = preset("demo-cpu")
    out = build(RlooJobConfig, None, ["max_steps=3"], base=base)
    assert out.max_steps == 3 and out.num_generations == base.num_generations and out.beta == base.beta
