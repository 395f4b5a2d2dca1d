"""Fresh layers over a frozen base, trained without running the base at every step (finetune=frozen).

The base's layers never change, so what they give each example is computed once, before training. The Trainer then
trains a model of the fresh layers alone (the same class, fed those states as inputs_embeds: the same positions,
mask and arithmetic as the whole model); its weights go back into the whole model, which is what is saved and
scored. The same data order and the same seeded weights as training the whole model with the base frozen, which is
what reproduce.py does; about 1.5x faster a step on the demo (bench/bench_prm_train.py).
"""
from __future__ import annotations

import copy
import re

from rloo_studio.core import bootstrap  # noqa: F401  (unsloth before transformers)

# isort: split
import torch  # noqa: E402

from rloo_studio.inspect.process import padded  # noqa: E402

LAYER = re.compile(r"model\.layers\.(\d+)\.(.*)")


@torch.inference_mode()
def base_states(model, n_base: int, examples: list[dict], batch_size: int = 64) -> list[torch.Tensor]:
    """Each example's hidden states after the base's `n_base` layers (the residual stream, before any norm)."""
    inner, layers = model.model, model.model.layers
    device = next(model.parameters()).device
    saved: dict = {}
    hook = layers[n_base - 1].register_forward_hook(
        lambda mod, args, out: saved.__setitem__("h", out[0] if isinstance(out, tuple) else out))
    out: list[torch.Tensor] = [torch.empty(0)] * len(examples)
    order = sorted(range(len(examples)), key=lambda i: len(examples[i]["input_ids"]))
    inner.layers = layers[:n_base]
    try:
        for i in range(0, len(order), batch_size):
            idx = order[i:i + batch_size]
            ids, mask = padded([e["input_ids"] for e in examples], idx, 0)
            inner(input_ids=ids.to(device), attention_mask=mask.to(device))
            for r, j in enumerate(idx):
                out[j] = saved["h"][r, :len(examples[j]["input_ids"])].detach().cpu().clone()
    finally:
        hook.remove()
        inner.layers = layers
    return out


def states_bytes(model, examples: list[dict]) -> int:
    """The memory the base's states of `examples` take: one hidden vector per token, in the model's dtype."""
    item = next(model.parameters()).element_size()
    return sum(len(e["input_ids"]) for e in examples) * model.config.hidden_size * item


def check_fits(model, examples: list[dict], free: int) -> None:
    """Refuse, in words, states that would take more than 80% of the `free` host memory (bytes)."""
    from rloo_studio.core.errors import ConfigError

    need = states_bytes(model, examples)
    if need > 0.8 * free:
        raise ConfigError(
            f"The base's states of {len(examples):,} examples would take {need / 2**30:.1f} GiB of memory, and "
            f"{free / 2**30:.1f} GiB is free: with finetune: frozen they are kept in memory for the whole run. Train "
            "with finetune: lora, fewer copies, a shorter max_length, or on a machine with more memory.")


def top_model(model, n_base: int):
    """A model of `model`'s class holding only its layers above `n_base`, its final norm and its head (the weights
    copied), read from inputs_embeds."""
    cfg = copy.deepcopy(model.config)
    cfg.num_hidden_layers = model.config.num_hidden_layers - n_base
    if getattr(cfg, "layer_types", None):
        cfg.layer_types = list(cfg.layer_types)[n_base:]
    top = type(model)(cfg).to(next(model.parameters()).dtype)
    state = {}
    for key, value in model.state_dict().items():
        m = LAYER.match(key)
        if not m:
            state[key] = value
        elif int(m.group(1)) >= n_base:
            state[f"model.layers.{int(m.group(1)) - n_base}.{m.group(2)}"] = value
    top.load_state_dict(state)
    top.model.embed_tokens.requires_grad_(False)  # never read: the inputs are the base's states
    return top


def put_back(model, top, n_base: int) -> None:
    """The trained top layers, norm and head into the whole model."""
    state = {}
    for key, value in top.state_dict().items():
        m = LAYER.match(key)
        if m:
            state[f"model.layers.{int(m.group(1)) + n_base}.{m.group(2)}"] = value
        elif not key.startswith("model.embed_tokens."):
            state[key] = value
    model.load_state_dict(state, strict=False)


def rows(states: list[torch.Tensor], examples: list[dict]) -> list[dict]:
    return [{"inputs_embeds": h, "labels": e["labels"]} for h, e in zip(states, examples)]


def collate(batch: list[dict]) -> dict:
    """Right-padded states, mask and labels (-100 on padding)."""
    width = max(b["inputs_embeds"].shape[0] for b in batch)
    dim = batch[0]["inputs_embeds"].shape[1]
    embeds = torch.zeros(len(batch), width, dim, dtype=batch[0]["inputs_embeds"].dtype)
    mask = torch.zeros(len(batch), width, dtype=torch.long)
    labels = torch.full((len(batch), width), -100, dtype=torch.long)
    for r, b in enumerate(batch):
        n = b["inputs_embeds"].shape[0]
        embeds[r, :n] = b["inputs_embeds"]
        mask[r, :n] = 1
        labels[r, :n] = torch.tensor(b["labels"])
    return {"inputs_embeds": embeds, "attention_mask": mask, "labels": labels}
