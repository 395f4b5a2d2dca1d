"""Memory pre-flight arithmetic against real Qwen3 configs (built locally, weights on the meta device)."""
import pytest
import torch
from transformers import Qwen3Config, Qwen3ForCausalLM

from rloo_studio.core.memory import NF4_BYTES, GiB, ModelShape, classifier_params, estimate, lora_params, param_counts

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
    # A policy's log-probs go through TRL's fused LM head: one 4,096 x 32,768 tile of logits at a time and the float32
    # gradient of the hidden states, never batch x len x vocab (that would be 4.6 GiB here).
    assert e16.parts["LM head (fused log-probs)"] == 4096 * 32768 * 2 + 4 * 1024 * 2560 * 4
    # A classifier (reward model: 1 label, process reward model: 2) has a score layer and no LM head.
    cls = estimate(s, batch=4, seq_len=1024, head="classifier", num_labels=2)
    assert cls.parts["classifier head"] == 4 * 1024 * 2 * 8 and "LM head (fused log-probs)" not in cls.parts
    # tied: the embedding stays
    assert cls.parts["weights"] == classifier_params(s, 2) * 2 == (c["total"] + 2560 * 2) * 2
    untied = ModelShape.from_config(Qwen3Config(**{**QWEN3_4B, "tie_word_embeddings": False}))
    assert classifier_params(untied, 1) == param_counts(untied)["total"] - 151936 * 2560 + 2560
    # The KV cache for generation: 2 (k, v) * layers * kv_heads * head_dim * 2 bytes * batch * length.
    g = estimate(s, batch=4, seq_len=1024, generation_batch=16, generation_len=2048)
    assert g.parts["generation KV cache"] == 2 * 36 * 8 * 128 * 2 * 16 * 2048
    small = ModelShape.from_config(Qwen3Config(**QWEN3_0_6B))
    r = estimate(s, batch=4, seq_len=1024, reward_shapes=(small, small))
    assert r.parts["reward models"] == 2 * classifier_params(small, 2) * 2
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
    from rloo_studio.prm.config import PrmJobConfig
    from rloo_studio.runs.jobs import KINDS
    from rloo_studio.runs.plan import memory_line

    cfgs = {f: PrmJobConfig(model=str(DEMO_MODEL), finetune=f, extra_layers=0 if f == "lora" else 2)
            for f in ("lora", "frozen", "full")}
    total = {f: KINDS["prm"].plan(cfg).total for f, cfg in cfgs.items()}
    assert total["lora"] > 0 and total["frozen"] > 0 and total["full"] > total["frozen"], total
    assert memory_line("prm", cfgs["full"]).startswith("Memory: Estimated peak memory")


def test_checkpointing_keeps_one_hidden_state_a_layer():
    s = ModelShape.from_config(Qwen3Config(**QWEN3_4B))
    on, off = (estimate(s, batch=8, seq_len=2304, gradient_checkpointing=g).parts["activations"] for g in (True, False))
    tokens = 8 * 2304
    # per token and layer: the norms' float32 copies and outputs, 7 q-sized (32 heads x 128) and 4 kv-sized (8 x 128)
    # attention tensors, the MLP's four 9,728-wide ones, all in bf16 but the float32 copies
    layer = (2 * 2560 * (4 + 2) + (7 * 4096 + 4 * 1024) * 2 + 4 * 9728 * 2) * tokens
    assert off == 36 * layer and on == 36 * tokens * 2560 * 2 + layer
    assert on < off / 15


def test_preflight_reads_the_model_config():
    from rloo_studio.core.memory import preflight
    from rloo_studio.core.paths import DEMO_MODEL

    e = preflight(str(DEMO_MODEL), batch=8, seq_len=128)
    assert e.parts["weights"] == 1_025_664 * 4 and e.free is None  # a CPU trains in float32
    assert "CUDA context" not in e.parts
    assert e.fits is None and e.verdict().startswith("Estimated peak memory") and "CPU run, float32" in e.verdict()
    card = preflight(str(DEMO_MODEL), batch=8, seq_len=128, card_gib=16)  # planning for a GPU: 16-bit, its context
    assert card.parts["weights"] == 1_025_664 * 2 and card.parts["CUDA context"] > 0
    assert card.free == 15.5 * GiB and card.fits and card.verdict().endswith("on a 16 GiB card (15.5 GiB free after "
                                                                              "0.5 GiB for the driver and desktop; "
                                                                              "90% of it usable): fits.")


def test_the_rloo_estimate_is_sized_from_the_prompt_sets_longest_prompt(tmp_path):
    import re

    from rloo_studio.core.workspace import Workspace
    from rloo_studio.inspect.model_input import tokenizer
    from rloo_studio.label.prompts import add_prompt_set
    from rloo_studio.rloo.config import RlooJobConfig
    from rloo_studio.runs.plan import memory_line

    ws = Workspace(tmp_path / "ws")
    long = "Add " + " and ".join(str(100 + i) for i in range(60)) + "."
    add_prompt_set(ws, "short", [{"prompt": "Add 1 and 2."}], "test")
    add_prompt_set(ws, "long", [{"prompt": "Add 1 and 2."}, {"prompt": long}], "test")

    def figure(line):
        return float(re.search(r"Estimated peak memory ([\d.]+) GiB", line)[1])

    lines = {name: memory_line("rloo", RlooJobConfig(prompt_set=name), ws) for name in ("short", "long")}
    tok = tokenizer(RlooJobConfig().model)
    text = tok.apply_chat_template([{"role": "user", "content": long}], add_generation_prompt=True, tokenize=False,
                                   enable_thinking=True)
    n = len(tok(text, add_special_tokens=False)["input_ids"])
    assert f"(prompts up to {n} tokens)" in lines["long"], lines
    assert figure(lines["short"]) < figure(lines["long"])
    # no workspace, or a prompt set that is not there: a typical chat prompt, said as an estimate all the same
    for line in (memory_line("rloo", RlooJobConfig()), memory_line("rloo", RlooJobConfig(prompt_set="gone"), ws)):
        assert line.startswith("Memory: Estimated peak memory"), line
