"""Memory pre-flight arithmetic against real Qwen3 configs (built locally, weights on the meta device)."""
import re

import pytest
import torch
from transformers import Qwen3Config, Qwen3ForCausalLM

from rloo_studio.core.memory import GiB, NF4_BYTES, ModelShape, advice, estimate, lora_params, param_counts

# Published shapes of Qwen3-0.6B and Qwen3-4B (config.json on the hub), typed in: no download.
QWEN3_0_6B = dict(vocab_size=151936, hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
                  num_attention_heads=16, num_key_value_heads=8, head_dim=128, tie_word_embeddings=True)
QWEN3_4B = dict(vocab_size=151936, hidden_size=2560, intermediate_size=9728, num_hidden_layers=36,
                num_attention_heads=32, num_key_value_heads=8, head_dim=128, tie_word_embeddings=True)


def meta_model(kw):
    cfg = Qwen3Config(**kw)
    with torch.device("meta"):
        return cfg, Qwen3ForCausalLM(cfg)


@pytest.mark.parametrize("kw,billions", [(QWEN3_0_6B, 0.596), (QWEN3_4B, 4.022)])
def test_param_count_matches_the_real_model(kw, billions):
    cfg, model = meta_model(kw)
    real = sum(p.numel() for p in model.parameters())
    shape = ModelShape.from_config(cfg)
    assert param_counts(shape)["total"] == real
    assert real / 1e9 == pytest.approx(billions, abs=0.005)


def test_lora_count_matches_peft():
    from peft import LoraConfig, get_peft_model

    cfg, model = meta_model(QWEN3_0_6B)
    targets = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    peft_model = get_peft_model(model, LoraConfig(r=16, target_modules=targets))
    trainable = sum(p.numel() for p in peft_model.parameters() if p.requires_grad)
    assert lora_params(ModelShape.from_config(cfg), 16, targets) == trainable
    with pytest.raises(ValueError, match="unknown target module"):
        lora_params(ModelShape.from_config(cfg), 16, ["qkv"])


def test_estimate_parts_by_hand():
    s = ModelShape.from_config(Qwen3Config(**QWEN3_4B))
    c = param_counts(s)
    e16 = estimate(s, batch=4, seq_len=1024, load_in_4bit=False)
    assert e16.parts["weights"] == c["total"] * 2
    e4 = estimate(s, batch=4, seq_len=1024, load_in_4bit=True)
    assert e4.parts["weights"] == pytest.approx(c["linear"] * NF4_BYTES + (c["total"] - c["linear"]) * 2)
    assert e4.parts["weights"] < 0.4 * e16.parts["weights"]
    n = lora_params(s, 16, list(s.linear_shapes()))
    assert e16.parts["LoRA + grads + optimizer"] == n * 16
    assert estimate(s, batch=4, seq_len=1024, optimizer="adamw_8bit").parts["LoRA + grads + optimizer"] == n * 10
    # Logits: batch * len * vocab fp32 values and their gradient.
    assert e16.parts["logits"] == 4 * 1024 * 151936 * 8
    # The KV cache for generation: 2 (k, v) * layers * kv_heads * head_dim * 2 bytes * batch * length.
    g = estimate(s, batch=4, seq_len=1024, generation_batch=16, generation_len=2048)
    assert g.parts["generation KV cache"] == 2 * 36 * 8 * 128 * 2 * 16 * 2048
    r = estimate(s, batch=4, seq_len=1024, reward_shape=ModelShape.from_config(Qwen3Config(**QWEN3_0_6B)))
    assert r.parts["reward model"] == param_counts(ModelShape.from_config(Qwen3Config(**QWEN3_0_6B)))["total"] * 2
    assert "reference model" not in e16.parts  # LoRA reuses the base with adapters off
    assert estimate(s, batch=1, seq_len=8, full_reference=True).parts["reference model"] == e16.parts["weights"]


def test_what_learns_sets_the_trained_part():
    """A full fine-tune holds every weight's gradient and optimizer state; a frozen base with fresh layers on top
    holds only theirs; the fresh layers are weights of the base's layer size whatever learns."""
    s = ModelShape.from_config(Qwen3Config(**QWEN3_4B))
    c = param_counts(s)
    layer = c["layers"] // s.layers
    full = estimate(s, batch=1, seq_len=8, train="full")
    assert full.parts["grads + optimizer"] == c["total"] * 12 and "LoRA + grads + optimizer" not in full.parts
    top = estimate(s, batch=1, seq_len=8, train="top", extra_layers=2)
    assert top.parts["weights"] == (c["total"] + 2 * layer) * 2
    assert top.parts["fresh layers' grads + optimizer"] == 2 * layer * 12
    assert top.total < full.total


def test_the_process_reward_models_line_follows_what_learns():
    from rloo_studio.core.paths import DEMO_MODEL
    from rloo_studio.prm.config import PrmJobConfig, memory_line

    lines = {f: memory_line(PrmJobConfig(model=str(DEMO_MODEL), finetune=f, extra_layers=0 if f == "lora" else 2))
             for f in ("lora", "frozen", "full")}
    gib = {f: float(re.search(r"Estimated peak memory ([\d.]+) GiB", line)[1]) for f, line in lines.items()}
    assert gib["lora"] > 0 and gib["frozen"] > 0 and gib["full"] > gib["frozen"], lines


def test_advice_when_it_will_not_fit():
    s = ModelShape.from_config(Qwen3Config(**QWEN3_4B))
    e = estimate(s, batch=8, seq_len=2048)
    e.free = 16 * GiB
    assert e.fits is False
    msg = advice(e, load_in_4bit=False, batch=8, seq_len=2048, optimizer="adamw", gradient_checkpointing=True)
    assert "will not fit" in msg and "4-bit" in msg and "lower the batch to 4" in msg
    small = estimate(ModelShape.from_config(Qwen3Config(**QWEN3_0_6B)), batch=1, seq_len=512, load_in_4bit=True,
                     chunked_ce=True)
    small.free = 16 * GiB
    assert small.fits and advice(small, load_in_4bit=True, batch=1, seq_len=512, optimizer="adamw_8bit",
                                 gradient_checkpointing=True).endswith("fits.")


def test_preflight_reads_the_model_config():
    from rloo_studio.core.memory import preflight
    from rloo_studio.core.paths import DEMO_MODEL

    e, msg = preflight(str(DEMO_MODEL), batch=8, seq_len=128)
    assert e.parts["weights"] == 1_025_664 * 4 and e.free is None  # a CPU trains in float32
    assert "CUDA context" not in e.parts
    assert msg.startswith("Estimated peak memory") and "CPU run, float32" in msg


def test_the_rloo_estimate_is_sized_from_the_prompt_sets_longest_prompt(tmp_path):
    import re

    from rloo_studio.core.workspace import Workspace
    from rloo_studio.inspect.model_input import tokenizer
    from rloo_studio.label.prompts import add_prompt_set
    from rloo_studio.rloo.config import RlooJobConfig, memory_line

    ws = Workspace(tmp_path / "ws")
    long = "Add " + " and ".join(str(100 + i) for i in range(60)) + "."
    add_prompt_set(ws, "short", [{"prompt": "Add 1 and 2."}], "test")
    add_prompt_set(ws, "long", [{"prompt": "Add 1 and 2."}, {"prompt": long}], "test")

    def figure(line):
        return float(re.search(r"Estimated peak memory ([\d.]+) GiB", line)[1])

    lines = {name: memory_line(RlooJobConfig(prompt_set=name), ws) for name in ("short", "long")}
    tok = tokenizer(RlooJobConfig().model)
    text = tok.apply_chat_template([{"role": "user", "content": long}], add_generation_prompt=True, tokenize=False,
                                   enable_thinking=True)
    n = len(tok(text, add_special_tokens=False)["input_ids"])
    assert f"(prompts up to {n} tokens)" in lines["long"], lines
    assert figure(lines["short"]) < figure(lines["long"])
    # no workspace, or a prompt set that is not there: a typical chat prompt, said as an estimate all the same
    for line in (memory_line(RlooJobConfig()), memory_line(RlooJobConfig(prompt_set="gone"), ws)):
        assert line.startswith("Memory: Estimated peak memory"), line
