import json

import pytest

from rloo_studio.core.errors import ModelLoadError
from rloo_studio.core.models import load_causal_lm, load_seq_cls, resolve, think_token_ids
from rloo_studio.core.paths import DEMO_MODEL
from rloo_studio.core.sampling import sample


def test_missing_path_is_a_clear_error(tmp_path):
    with pytest.raises(ModelLoadError, match="No model at .*does not exist"):
        resolve(str(tmp_path / "nope"))
    with pytest.raises(ModelLoadError, match="not a model folder"):
        resolve(str(tmp_path))
    with pytest.raises(ModelLoadError, match="No model given"):
        resolve("  ")


def test_uncached_hub_id_is_a_clear_error():
    with pytest.raises(ModelLoadError, match="not in the local Hugging Face cache"):
        resolve("nobody-here/not-a-model-xyz")


def test_broken_model_folder_is_a_clear_error(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "qwen3"}))
    with pytest.raises(ModelLoadError, match="Could not load"):
        load_causal_lm(str(tmp_path), backend="transformers")


def test_unknown_backend():
    with pytest.raises(ModelLoadError, match="unknown backend"):
        load_causal_lm(str(DEMO_MODEL), backend="vllm")


@pytest.mark.parametrize("backend", ["transformers", "unsloth"])
def test_demo_model_loads_and_generates(backend):
    model, tok, used = load_causal_lm(str(DEMO_MODEL), backend=backend)
    assert used == backend
    open_id, close_id = think_token_ids(tok)
    assert tok.convert_ids_to_tokens([open_id, close_id]) == ["<think>", "</think>"]
    assert tok.pad_token_id is not None and tok.pad_token_id != tok.eos_token_id
    side = tok.padding_side
    out = sample(model, tok, ["What is 123 + 456?", "Add 5 and 7 please, then explain."], max_new_tokens=48, seed=0)
    assert tok.padding_side == side  # restored after left-padded generation
    assert len(out) == 2 and all(o.ids for o in out)
    assert any("</think>" in o.text for o in out)


def test_seq_cls_reads_last_token_of_either_padding():
    import torch

    model, tok = load_seq_cls(str(DEMO_MODEL))
    texts = ["short", "a much longer text than the first one"]
    scores = {}
    for side in ("left", "right"):
        tok.padding_side = side
        enc = tok(texts, return_tensors="pt", padding=True)
        with torch.no_grad():
            scores[side] = model(**enc).logits[:, 0]
    assert torch.allclose(scores["left"], scores["right"], atol=1e-5)


def test_app_restricts_local_model_paths(tmp_path, monkeypatch):
    import rloo_studio.core.paths as M

    monkeypatch.setattr(M, "ALLOWED_ROOTS", None)
    M.restrict_to([tmp_path / "ws", DEMO_MODEL.parent])
    try:
        assert resolve(str(DEMO_MODEL)) == str(DEMO_MODEL.resolve())
        outside = tmp_path / "elsewhere"
        outside.mkdir()
        (outside / "config.json").write_text("{}")
        with pytest.raises(ModelLoadError, match="outside the folders this app may read"):
            resolve(str(outside))
        with pytest.raises(ModelLoadError, match="outside the folders"):
            resolve(str(tmp_path / "ws" / ".." / "elsewhere"))
        with pytest.raises(ModelLoadError, match="outside the folders"):
            resolve("/etc")
    finally:
        M.ALLOWED_ROOTS = None


def test_model_with_its_own_code_loads_only_when_trusted(tmp_path):
    from custom_model import make_custom_code_model

    from rloo_studio.core.model_options import ships_code
    from rloo_studio.label.generate import GenerateConfig
    from rloo_studio.reward.config import RewardJobConfig
    from rloo_studio.rloo.config import RlooJobConfig

    assert not any(c().trust_remote_code for c in (RewardJobConfig, RlooJobConfig, GenerateConfig))  # off by default
    folder = tmp_path / "custom"
    marker = make_custom_code_model(folder)
    assert ships_code(folder) and not ships_code(DEMO_MODEL)
    for load in (lambda t: load_causal_lm(str(folder), "transformers", trust_remote_code=t),
                 lambda t: load_seq_cls(str(folder), trust_remote_code=t)):
        with pytest.raises(ModelLoadError, match="ships its own Python code.*only when you tick trust_remote_code"):
            load(False)
    from rloo_studio.core.memory import preflight

    est = preflight(str(folder), batch=1, seq_len=64)  # reads config.json as plain JSON
    assert est.total > 0
    assert not marker.exists()  # refused, and estimated, without running any of its code
    model, tok, _ = load_causal_lm(str(folder), "transformers", trust_remote_code=True)
    assert type(model).__name__ == "CustomQwen3ForCausalLM" and marker.exists()


def _run_with_adapter(tmp_path, model, **settings):
    """A run folder as a run leaves it: config.yaml beside adapter/, a LoRA on `model` whose B weights are not
    zero (so that it changes the answers)."""
    import torch
    import yaml
    from peft import get_peft_model

    from rloo_studio.core.model_options import LoraSpec
    from rloo_studio.core.models import lora_config

    base, _, _ = load_causal_lm(str(model), "transformers", trust_remote_code=True)
    peft = get_peft_model(base, lora_config(LoraSpec(r=4, alpha=8), "CAUSAL_LM"))
    torch.manual_seed(0)
    with torch.no_grad():
        for name, p in peft.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.05)
    run = tmp_path / "runs" / "r1"
    peft.save_pretrained(str(run / "adapter"))
    (run / "config.yaml").write_text(yaml.safe_dump({"model": str(model), **settings}))
    return run / "adapter"


def test_load_policy_takes_4bit_from_the_run_and_puts_the_adapter_on(tmp_path):
    import torch

    from rloo_studio.core.models import load_policy

    ad = _run_with_adapter(tmp_path, DEMO_MODEL, load_in_4bit=True)
    assert load_policy(None, ad, of_run=True)[0].is_loaded_in_4bit  # as the run trained
    full, tok = load_policy(None, ad, of_run=True, load_in_4bit=False)  # an explicit setting wins
    typed, _ = load_policy(None, ad)  # a typed folder: base from adapter_config.json, the run's settings unread
    assert not getattr(full, "is_loaded_in_4bit", False) and not getattr(typed, "is_loaded_in_4bit", False)
    assert not full.training and not typed.training
    enc = tok("What is 123 + 456?", return_tensors="pt")
    with torch.no_grad():
        with_adapter, again = full(**enc).logits, typed(**enc).logits
        with full.disable_adapter():
            bare = full(**enc).logits
    assert torch.equal(with_adapter, again) and not torch.allclose(with_adapter, bare)

    config = json.loads((ad / "adapter_config.json").read_text())
    (ad / "adapter_config.json").write_text(json.dumps({**config, "target_modules": ["no_such_layer"]}))
    with pytest.raises(ModelLoadError, match="does not fit the base model .* It was trained on "):
        load_policy(None, ad, of_run=True)


def test_load_policy_trusts_code_only_as_the_run_ticked_it_for_its_own_base(tmp_path):
    import shutil

    from custom_model import make_custom_code_model

    from rloo_studio.core.models import load_policy

    folder = tmp_path / "custom"
    make_custom_code_model(folder)
    ad = _run_with_adapter(tmp_path, folder, trust_remote_code=True)
    model, _ = load_policy(None, ad, of_run=True)  # the run's user ticked trust for this model
    assert type(model.get_base_model()).__name__ == "CustomQwen3ForCausalLM"
    with pytest.raises(ModelLoadError, match="ships its own Python code"):
        load_policy(None, ad)  # the same adapter as a typed folder: the config.yaml beside it grants nothing
    other = tmp_path / "other"
    shutil.copytree(folder, other)
    with pytest.raises(ModelLoadError, match="ships its own Python code"):
        load_policy(str(other), ad, of_run=True)  # another base: the run's trust does not cover it
    assert type(load_policy(str(other), ad, trust_remote_code=True)[0].get_base_model()).__name__ \
        == "CustomQwen3ForCausalLM"  # ticked explicitly
