"""Real training steps on the CPU through TRL 1.15 (unsloth imported first by conftest)."""
import torch
from safetensors.torch import load_file

from rloo_studio.core.model_options import LoraSpec
from rloo_studio.reward.config import RewardJobConfig
from rloo_studio.reward.job import train_reward
from rloo_studio.rloo.config import RlooJobConfig
from rloo_studio.rloo.job import train_rloo
from rloo_studio.runs.runner import JobRunner, read_metrics


def _lora_state(path):
    return load_file(str(path / "adapter_model.safetensors"))


def test_rloo_steps_change_lora_weights(workspace):
    r = JobRunner(workspace)
    cfg = RlooJobConfig(max_steps=3, per_device_train_batch_size=8, num_generations=4, lora=LoraSpec(r=8, alpha=16))
    rid = r.submit("rloo", cfg, train_rloo)
    assert r.wait(rid, 600) == "completed", r.status(rid)
    d = workspace.run_dir(rid)
    steps = [m for m in read_metrics(d) if "reward" in m]
    assert [m["step"] for m in steps] == [1, 2, 3]
    for key in ("loss", "kl", "reward", "reward_std", "rewards/correctness/mean", "completions/clipped_ratio"):
        assert key in steps[-1]
    assert list(d.rglob("events.out.tfevents.*"))  # TensorBoard logs beside metrics.jsonl
    state = _lora_state(d / "adapter")
    # LoRA B matrices start at zero: any non-zero entry was written by an optimizer step.
    b = [v for k, v in state.items() if "lora_B" in k]
    assert b and any(v.abs().sum() > 0 for v in b)


def test_reward_step_trains_and_saves_score_head(workspace):
    from rloo_studio.core.models import load_seq_cls

    base, _ = load_seq_cls(RewardJobConfig().model)
    torch.manual_seed(0)
    r = JobRunner(workspace)
    rid = r.submit("reward", RewardJobConfig(max_steps=3, eval_fraction=0.1), train_reward)
    assert r.wait(rid, 600) == "completed", r.status(rid)
    d = workspace.run_dir(rid)
    state = _lora_state(d / "adapter")
    heads = {k: v for k, v in state.items() if "score" in k}
    assert heads, f"no score head in the adapter: {sorted(state)[:5]}"
    # The saved head differs from a fresh one and the LoRA B matrices moved off zero.
    (head,) = [v for k, v in heads.items() if k.endswith("weight")]
    assert head.shape == base.score.weight.shape
    assert any(v.abs().sum() > 0 for k, v in state.items() if "lora_B" in k)
    metrics = read_metrics(d)
    assert any("eval_accuracy" in m for m in metrics) and any("accuracy" in m for m in metrics)


def test_saved_reward_adapter_reloads_with_same_scores(workspace):
    from rloo_studio.core.models import load_reward_adapter
    from rloo_studio.label.store import preference_pairs
    from rloo_studio.reward.job import pair_rows

    r = JobRunner(workspace)
    rid = r.submit("reward", RewardJobConfig(max_steps=2, eval_fraction=0.0), train_reward)
    assert r.wait(rid, 600) == "completed"
    adapter = workspace.run_dir(rid) / "adapter"
    m1, tok = load_reward_adapter(adapter)
    m2, _ = load_reward_adapter(adapter)
    row = pair_rows(tok, preference_pairs(workspace)[:1])[0]
    enc = tok(row["prompt"] + row["chosen"] + tok.eos_token, return_tensors="pt")
    with torch.no_grad():
        assert torch.allclose(m1(**enc).logits, m2(**enc).logits)
