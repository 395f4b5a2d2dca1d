"""Gradient checkpointing changes memory and nothing else: a short RLOO run (Unsloth's offloaded mode, and plain
transformers + PEFT) and a short process-reward run (a LoRA and a full fine-tune), each trained with checkpointing
on and off from the same seed, log the same losses and rewards and end on the same weights, to float tolerance.
The peak on the Qwen3-0.6B shape is bench/bench_checkpointing.py's (docs/BENCHMARKS.md)."""
import pytest
import torch
from safetensors.torch import load_file

from rloo_studio.runs.runner import JobRunner, read_metrics

TIMING = {"time", "step_time", "train_runtime", "train_samples_per_second", "train_steps_per_second",
          "eval_runtime", "eval_samples_per_second", "eval_steps_per_second", "total_flos"}


@pytest.fixture
def layer_passes(monkeypatch):
    """How often the decoder layers ran with gradients on: with checkpointing each runs again in the backward pass
    (the recomputation), so that a setting that silently did nothing cannot pass for one that works."""
    from transformers.models.qwen3 import modeling_qwen3

    count = {"grad": 0}
    forward = modeling_qwen3.Qwen3DecoderLayer.forward

    def counted(self, *args, **kw):
        count["grad"] += torch.is_grad_enabled()
        return forward(self, *args, **kw)

    monkeypatch.setattr(modeling_qwen3.Qwen3DecoderLayer, "forward", counted)
    return count


def _train(ws, kind, cfg, fn, passes: dict) -> tuple[list[dict], dict, int]:
    r = JobRunner(ws)
    before = passes["grad"]
    rid = r.submit(kind, cfg, fn)
    assert r.wait(rid, 900) == "completed", r.status(rid)
    d = ws.run_dir(rid)
    name = next(n for n in ("adapter_model.safetensors", "model.safetensors") if (d / "adapter" / n).exists())
    return read_metrics(d), load_file(str(d / "adapter" / name)), passes["grad"] - before


def assert_same_training(on, off, rel: float = 1e-4) -> None:
    (m_on, w_on, grad_on), (m_off, w_off, grad_off) = on, off
    assert grad_on == 2 * grad_off > 0  # checkpointing ran: every layer with gradients again in the backward pass
    assert [m["step"] for m in m_on] == [m["step"] for m in m_off]
    compared = 0
    for a, b in zip(m_on, m_off):
        assert a.keys() == b.keys()
        for key in b.keys() - TIMING:
            if isinstance(b[key], float):
                assert a[key] == pytest.approx(b[key], rel=rel, abs=1e-6), (a["step"], key, a[key], b[key])
                compared += key in ("loss", "reward", "kl")
    assert compared >= 3, m_off  # losses and rewards were there to compare
    assert w_on.keys() == w_off.keys()
    for name in w_off:
        assert torch.allclose(w_on[name].float(), w_off[name].float(), rtol=1e-4, atol=1e-6), name
    moved = [n for n in w_off if "lora_B" in n and w_off[n].abs().max() > 0]
    assert moved or not any("lora_B" in n for n in w_off)  # a LoRA run learnt something worth comparing


@pytest.mark.train
@pytest.mark.parametrize("backend", ["auto", "transformers"])  # Unsloth's offloaded mode; transformers' own
def test_rloo_with_checkpointing_trains_the_same_policy(workspace, backend, layer_passes):
    from rloo_studio.core.model_options import LoraSpec
    from rloo_studio.rloo.config import RlooJobConfig
    from rloo_studio.rloo.job import train_rloo

    runs = {gc: _train(workspace, "rloo", RlooJobConfig(
        max_steps=3, backend=backend, per_device_train_batch_size=8, num_generations=4, lora=LoraSpec(r=4, alpha=8),
        max_completion_length=48, save_steps=100, learning_rate=2e-3, gradient_checkpointing=gc),
        train_rloo, layer_passes)
        for gc in (False, True)}
    assert_same_training(runs[True], runs[False])


@pytest.mark.train
@pytest.mark.parametrize("finetune", ["lora", "full"])
def test_a_process_reward_model_with_checkpointing_trains_the_same_weights(tmp_path, finetune, layer_passes):
    from test_prm import synthetic_labels

    from rloo_studio.label.demo_data import open_workspace
    from rloo_studio.prm.config import PrmJobConfig
    from rloo_studio.prm.job import train_prm

    ws = open_workspace(tmp_path / "ws")
    synthetic_labels(ws, 24)
    base = dict(max_steps=4, per_device_train_batch_size=16, save_steps=100, eval_steps=2, logging_steps=1,
                warmup_steps=0, finetune=finetune, extra_layers=0 if finetune == "lora" else 1,
                token_labels="steps", copies=0, learning_rate=1e-3)
    runs = {gc: _train(ws, "prm", PrmJobConfig(**base, gradient_checkpointing=gc), train_prm, layer_passes)
            for gc in (False, True)}
    assert_same_training(runs[True], runs[False])
