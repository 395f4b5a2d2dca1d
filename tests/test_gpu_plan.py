"""Planning a run for a GPU from any machine: every GPU preset of every kind fits the card it is named for by the
studio's own estimate, with headroom, before its model is downloaded (the shapes the studio ships); `--check`
answers 0 or 2 in words; what does not fit gets the nearest config that does, keeping the effective batch; and on a
GPU, Launch refuses a run that will not fit unless memory_guard is off."""
import dataclasses
import re

import pytest

from rloo_studio.cli import main
from rloo_studio.core.errors import ConfigError
from rloo_studio.core.memory import GiB
from rloo_studio.runs import plan
from rloo_studio.runs.jobs import KINDS

GPU_PRESETS = [(kind, name, int(re.search(r"(\d+) ?gb", name, re.I)[1]))
               for kind in ("reward", "prm", "rloo") for name in KINDS[kind].preset_names()
               if re.search(r"\d+ ?gb", name, re.I)]


@pytest.fixture
def empty_hub(tmp_path, monkeypatch):
    """An empty Hugging Face cache: no model is on this machine, as on a new user's before the first download."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    return tmp_path / "hub"


def test_there_is_a_16_24_and_80_gb_preset_of_each_kind():
    assert {(k, card) for k, _, card in GPU_PRESETS} == \
        {(k, c) for k in ("reward", "prm", "rloo") for c in (16, 24, 80)}


@pytest.mark.parametrize("kind,name,card", GPU_PRESETS)
def test_every_gpu_preset_fits_its_card_with_headroom(kind, name, card, empty_hub):
    cfg = KINDS[kind].preset_config(name)
    e = KINDS[kind].plan(cfg, None, card)
    assert e.shape_note  # read from the shape the studio ships: nothing was downloaded
    assert e.fits and e.total <= 0.9 * card * GiB, (kind, name, e.table())
    if kind == "rloo":  # what makes it useful stays: thinking-length completions, k >= 4
        assert cfg.max_completion_length >= 1536 and cfg.num_generations >= 4, cfg


def test_check_plans_for_a_card_from_this_machine_and_answers_0_or_2(empty_hub, tmp_path, capsys):
    ws = str(tmp_path / "no-workspace")
    assert main(["train-rloo", "--preset", "gpu-24gb", "--check", "--gpu-memory", "24", "--workspace", ws]) == 0
    out = capsys.readouterr().out
    assert "on a 24 GiB card" in out and ": fits." in out and "result: fits" in out
    assert re.search(r"^  activations +\d+\.\d\d GiB$", out, re.M) and re.search(r"^  total +1\d\.\d\d GiB$", out, re.M)
    assert "not in the local Hugging Face cache" in out  # told, not judged: the plan is for another machine
    assert main(["train-rloo", "--preset", "gpu-24gb", "--check", "--gpu-memory", "24", "--workspace", ws,
                 "--set", "gradient_checkpointing=false"]) == 2
    out = capsys.readouterr().out
    assert ": will not fit." in out and "It fits" in out and "gradient checkpointing on" in out
    assert "result: will not fit" in out
    # --fit applies what would fit, and says what it changed
    assert main(["train-rloo", "--preset", "gpu-24gb", "--check", "--gpu-memory", "24", "--workspace", ws,
                 "--set", "gradient_checkpointing=false", "--fit"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("fitted: gradient checkpointing on") and "result: fits" in out
    for kind, name, card in GPU_PRESETS:
        assert main([KINDS[kind].cli, "--preset", name, "--check", "--gpu-memory", str(card), "--workspace", ws]) == 0
        assert "result: fits" in capsys.readouterr().out, (kind, name)
    assert not (tmp_path / "no-workspace").exists()  # planning creates no workspace


def test_check_on_this_machine_judges_what_is_missing(empty_hub, workspace, capsys):
    """Without --gpu-memory the check is this machine's: a model that is not here fails it (exit 2)."""
    assert main(["train-rloo", "--preset", "gpu-16gb", "--check", "--workspace", str(workspace.root)]) == 2
    out = capsys.readouterr().out
    assert "pre-flight: Qwen/Qwen3-4B-Thinking-2507 is not in the local Hugging Face cache" in out
    assert main(["train-rloo", "--preset", "demo-cpu", "--check", "--workspace", str(workspace.root)]) == 0
    out = capsys.readouterr().out
    assert "pre-flight: passed" in out and "CPU run, float32" in out and "memory not checked: no GPU" in out


def test_fit_keeps_the_effective_batch_and_whole_groups():
    """The levers in order: checkpointing, generation in turns, 4-bit, a smaller micro-batch with more accumulation
    (a multiple of num_generations), shorter completions last."""
    job = KINDS["rloo"]
    big = dataclasses.replace(job.preset_config("gpu-24gb"), gradient_checkpointing=False, generation_batch_size=0,
                              per_device_train_batch_size=16, gradient_accumulation_steps=2, num_generations=8,
                              max_completion_length=8192)
    cfg, e, changes = job.fit(big, None, 16)
    assert e.fits and e.total <= 0.9 * 16 * GiB
    assert changes[:2] == ["gradient checkpointing on", f"generation batch {cfg.generation_batch_size} (the step's "
                                                        "32 in turns)"]
    assert cfg.per_device_train_batch_size * cfg.gradient_accumulation_steps == 32  # the same completions per step
    assert cfg.per_device_train_batch_size % cfg.num_generations == 0 and cfg.num_generations == 8
    cfg.validate()  # TRL's rules hold: the generation batch a multiple of the micro-batch, dividing the step's
    assert job.fit(job.preset_config("demo-cpu"), None, None)[2] == []  # nothing is judged on a CPU
    tiny_card = job.fit(big, None, 4)  # nothing fits a 4 GiB card: everything tried, said so
    assert tiny_card[1].fits is False
    line = plan.memory_line("rloo", big, None, 4)
    assert "Nothing the studio can change makes it fit" in line and "a card with more memory" in line


def test_a_model_that_is_not_here_and_not_shipped_is_not_estimated_in_words(empty_hub):
    from rloo_studio.rloo.config import RlooJobConfig

    line = plan.memory_line("rloo", RlooJobConfig(model="someone/unknown-7b"), None, 24)
    assert line.startswith("Memory: not estimated (someone/unknown-7b is not in the local Hugging Face cache")
    moe = plan.memory_line("rloo", RlooJobConfig(model="Qwen/Qwen3-30B-A3B-Thinking-2507"), None, 80)
    assert "mixture-of-experts model (128 experts): its memory is not estimated" in moe


def test_on_a_gpu_launch_refuses_what_will_not_fit_unless_the_guard_is_off(empty_hub, monkeypatch):
    """The guard asks the device how much is free: here a 24 GiB GPU stands in for the one this machine lacks."""
    from rloo_studio.core import memory

    monkeypatch.setattr(memory, "device_free", lambda: 23.5 * GiB)
    cfg = dataclasses.replace(KINDS["rloo"].preset_config("gpu-24gb"), gradient_checkpointing=False)
    with pytest.raises(ConfigError, match=r"will not fit\..*It fits .* with: gradient checkpointing on.*Launch "
                                          r"refused: untick memory_guard"):
        plan.guard(None, "rloo", cfg)
    plan.guard(None, "rloo", dataclasses.replace(cfg, memory_guard=False))  # the user knows better
    plan.guard(None, "rloo", KINDS["rloo"].preset_config("gpu-24gb"))  # the preset itself fits
    monkeypatch.setattr(memory, "device_free", lambda: None)
    plan.guard(None, "rloo", cfg)  # a CPU: its memory is not a GPU's, nothing is judged


def test_the_card_box_reads_a_size_in_gib_or_means_this_machine_when_empty():
    from rloo_studio.ui.job_section import card_gib

    assert card_gib("") is None and card_gib(None) is None and card_gib(" 0 ") is None
    assert card_gib("24") == 24.0 and card_gib("80 GiB") == 80.0 and card_gib("16GB") == 16.0
    for bad in ("abc", "0.5", "5000", "nan"):
        with pytest.raises(ConfigError, match="between 1 and 4096 GiB"):
            card_gib(bad)
