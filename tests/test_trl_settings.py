"""Every TRL (or transformers) setting is reachable: a job's `trl:` settings go to the trainer's config as they are,
checked against that class before a run exists, and are part of config.yaml, the command, reproduce.json's
trainer arguments and the run itself."""
import json

import pytest

from rloo_studio.core.config import build
from rloo_studio.core.errors import ConfigError
from rloo_studio.prm.config import PrmJobConfig
from rloo_studio.reward.config import RewardJobConfig
from rloo_studio.rloo.config import RlooJobConfig
from rloo_studio.runs import lifecycle


@pytest.mark.parametrize("kind,cls,sets,message", [
    ("rloo", RlooJobConfig, ["trl.warmup_ration=0.5"],
     r"trl.warmup_ration is not a setting of RLOOConfig; did you mean warmup_ratio, warmup_steps\?"),
    ("rloo", RlooJobConfig, ["trl.learning_rate=0.1"],
     r"trl.learning_rate: the studio sets learning_rate itself, from its own setting learning_rate: use --set"),
    ("rloo", RlooJobConfig, ["trl.chat_template_kwargs={}"], r"from its setting enable_thinking"),
    ("rloo", RlooJobConfig, ["trl.output_dir=/tmp/x"], r"the studio sets output_dir itself, from the run's folder"),
    ("rloo", RlooJobConfig, ["trl.top_p=high"], r"trl.top_p: RLOOConfig takes a number here, got 'high'"),
    ("rloo", RlooJobConfig, ["trl.warmup_ratio=3"], r"trl.warmup_ratio: a share of the steps from 0 to below 1"),
    ("reward", RewardJobConfig, ["trl.per_device_eval_batch_size=4"], r"from its setting eval_batch_size"),
    ("reward", RewardJobConfig, ["trl.lr_scheduler_type=wavy"],
     r"trl: RewardConfig refuses these settings: wavy is not a valid SchedulerType"),  # the class says it itself
    ("prm", PrmJobConfig, ["trl.max_grad_norms=1"], r"not a setting of TrainingArguments; did you mean max_grad_norm"),
])
def test_a_trl_setting_the_trainer_would_not_take_is_refused_in_words_before_a_run_exists(
        workspace, kind, cls, sets, message):
    from rloo_studio.label.demo_data import seed_demo_steps

    seed_demo_steps(workspace)
    cfg = build(cls, None, sets)
    with pytest.raises(ConfigError, match=message):
        lifecycle.new_run(workspace, kind, cfg)
    assert not workspace.runs()  # nothing was created


def test_trl_settings_merge_from_preset_to_file_to_set(tmp_path):
    """A preset's trl settings, then a file's, then each --set: later ones win key by key."""
    f = tmp_path / "c.yaml"
    f.write_text("trl:\n  max_grad_norm: 0.5\n  top_p: 0.9\n")
    base = build(RlooJobConfig, None, ["trl.top_k=20"])
    cfg = build(RlooJobConfig, f, ["trl.top_p=0.95"], base=base)
    assert cfg.trl == {"top_k": 20, "max_grad_norm": 0.5, "top_p": 0.95}
    with pytest.raises(ConfigError, match="trl: expected a mapping"):
        build(RlooJobConfig, None, ["trl=7"])


@pytest.mark.train
def test_the_trainer_trains_with_them_and_the_run_records_them(tmp_path, capsys):
    """The CLI run of the issue: TRL's warm-up as set (transformers 5 reads warmup_steps below 1 as a share of the
    steps, and takes warmup_ratio under that name), a cosine schedule, recorded where a run is repeated from."""
    import yaml

    from rloo_studio.cli import main
    from rloo_studio.core.workspace import Workspace
    from rloo_studio.runs.runner import read_metrics

    ws = tmp_path / "ws"
    assert main(["train-rloo", "--workspace", str(ws), "--demo", "--preset", "demo-cpu", "--set", "max_steps=2",
                 "--set", "eval_prompts=0", "--set", "per_device_train_batch_size=8", "--set", "num_generations=4",
                 "--set", "trl.warmup_ratio=0.5", "--set", "trl.lr_scheduler_type=constant_with_warmup"]) == 0
    (run,) = Workspace(ws).runs("rloo")
    d = Workspace(ws).run_dir(run["id"])
    args = json.loads((d / "reproduce.json").read_text())["trainer_args"]
    assert args["warmup_steps"] == 0.5 and args["lr_scheduler_type"] == "constant_with_warmup"
    assert yaml.safe_load((d / "config.yaml").read_text())["trl"] == {
        "warmup_ratio": 0.5, "lr_scheduler_type": "constant_with_warmup"}
    lr = [m["learning_rate"] for m in read_metrics(d) if "learning_rate" in m]
    assert lr == [0.0, 5e-4]  # one step of warm-up out of two, then the constant rate
    from rloo_studio.runs.record import set_command

    cmd = set_command("rloo", yaml.safe_load((d / "config.yaml").read_text()), ws)
    assert "--set trl.warmup_ratio=0.5" in cmd and "--set trl.lr_scheduler_type=constant_with_warmup" in cmd
