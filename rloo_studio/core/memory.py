"""Memory pre-flight: will this run fit on this device, or on a card of a given size?

An estimate from the model's shape (config.json only, no weights): weights (4-bit or 16-bit), LoRA weights with
their gradients and optimizer states, activations for batch x length (all layers', or with gradient checkpointing
one hidden state per layer and one layer recomputed), the head's working memory, reward models beside a policy, the
generation KV cache, and a fixed allowance for the CUDA context. With LoRA the RLOO reference model is the base
with adapters switched off: no second copy of the weights.

The shapes of the models the presets and docs name ship with the studio (rloo_studio/assets/model-shapes/), so a run can
be planned for any card before its model is downloaded (`train-<kind> --check --gpu-memory GIB`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from rloo_studio.core.paths import MODEL_SHAPES

GiB = 2**30
CUDA_CONTEXT = 0.8 * GiB  # driver context + allocator slack, measured typically 0.5-1 GB
CARD_RESERVE = 0.5 * GiB  # planning for a card: what its driver, a desktop and other processes hold of it
USABLE = 0.9  # a run fits when its estimate is at most this share of the free memory (allocator fragmentation)
NF4_BYTES = 0.5 + 0.5 / 64 + 4 / (64 * 256)  # 4-bit weights + fp8 block scales + double-quant constants
# TRL 1.15 computes RLOO's log-probs with a fused LM head (trl.trainer.utils.add_fused_lm_head): the hidden states go
# through the LM head in tiles of 4,096 tokens x 32,768 vocabulary entries (kernels/chunked_logprob.py
# TOKEN_CHUNK_SIZE, _CHUNKED_LOGPROB_CHUNK_SIZE), never a tokens x vocabulary tensor; the backward pass accumulates
# the hidden states' gradient in float32. Unsloth's replacement (unsloth/models/_fused_rl_logprobs.py) builds no
# tokens x vocabulary tensor either.
FUSED_TOKENS, FUSED_VOCAB = 4096, 32768
# On a CPU that path is Unsloth's CPU op: a forward and backward of the log-probs of 582 tokens on the Qwen3-0.6B
# shape (vocabulary 151,936) rose by 1.03 GiB with checkpointing, of which the layers' part is 0.13 (2026-12-07,
# this 2-core machine): float32 logits and their gradient, tokens x vocabulary x 8 bytes (0.66 GiB), as a whole.
HEADS = ("causal_lm", "classifier")


@dataclass(frozen=True)
class ModelShape:
    vocab: int
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    tied: bool = True

    @classmethod
    def from_config(cls, cfg) -> "ModelShape":
        c = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
        experts = getattr(c, "num_experts", None) or getattr(c, "n_routed_experts", None)
        if experts:  # the dense formulas below would count one MLP where the model has `experts`
            raise ValueError(f"{getattr(c, 'model_type', 'this model')} is a mixture-of-experts model ({experts} "
                             "experts): its memory is not estimated")
        head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
        return cls(c.vocab_size, c.hidden_size, c.num_hidden_layers, c.num_attention_heads,
                   getattr(c, "num_key_value_heads", None) or c.num_attention_heads, head_dim,
                   c.intermediate_size, bool(getattr(c, "tie_word_embeddings", False)))

    def linear_shapes(self) -> dict[str, tuple[int, int]]:
        """(in, out) of each linear layer in one decoder block, by its Qwen3/Llama name."""
        h, q, kv, i = self.hidden, self.heads * self.head_dim, self.kv_heads * self.head_dim, self.intermediate
        return {"q_proj": (h, q), "k_proj": (h, kv), "v_proj": (h, kv), "o_proj": (q, h),
                "gate_proj": (h, i), "up_proj": (h, i), "down_proj": (i, h)}


def param_counts(s: ModelShape) -> dict[str, int]:
    """Parameters by part, as in Qwen3ForCausalLM (q/k RMS norms of head_dim, no biases)."""
    linear = sum(a * b for a, b in s.linear_shapes().values())
    norms = 2 * s.hidden + 2 * s.head_dim  # input + post-attention norms, q_norm + k_norm
    embed = s.vocab * s.hidden
    counts = {"embed": embed, "layers": s.layers * (linear + norms), "final_norm": s.hidden,
              "lm_head": 0 if s.tied else embed}
    counts["total"] = sum(counts.values())
    counts["linear"] = s.layers * linear  # the part that 4-bit quantizes
    return counts


def classifier_params(s: ModelShape, num_labels: int) -> int:
    """A sequence or token classifier over the decoder (transformers' *ForSequenceClassification /
    *ForTokenClassification): the decoder and a `score` layer of num_labels outputs, no LM head."""
    c = param_counts(s)
    return c["total"] - c["lm_head"] + s.hidden * num_labels


def lora_params(s: ModelShape, r: int, targets: list[str]) -> int:
    shapes = s.linear_shapes()
    unknown = [t for t in targets if t not in shapes]
    if unknown:
        raise ValueError(f"unknown target module {unknown[0]!r}; known: {', '.join(shapes)}")
    return s.layers * sum(r * (shapes[t][0] + shapes[t][1]) for t in targets)


@dataclass
class Estimate:
    parts: dict[str, float] = field(default_factory=dict)  # bytes
    free: float | None = None  # bytes free on the device (None: CPU, not checked)
    where: str = ""  # what `free` is: "this GPU", "a 24 GiB card"
    shape_note: str = ""  # where the model's shape came from when it is not the model's own folder
    note: str = ""  # what the kind sized it from ("prompts up to 55 tokens")

    @property
    def total(self) -> float:
        return sum(self.parts.values())

    @property
    def fits(self) -> bool | None:
        return None if self.free is None else self.total <= USABLE * self.free

    def table(self) -> list[tuple[str, str]]:
        return [(k, f"{v / GiB:.2f} GiB") for k, v in self.parts.items()] + [("total", f"{self.total / GiB:.2f} GiB")]

    def verdict(self) -> str:
        """'Estimated peak … GiB …: fits.' / '…: will not fit.' / the CPU's figure, unchecked."""
        if self.free is None:
            return f"Estimated peak memory {self.total / GiB:.1f} GiB (CPU run, float32: not checked against a GPU)."
        usable = f"{self.free / GiB:.1f} GiB free" if self.where == "this GPU" else \
            f"{self.free / GiB:.1f} GiB free after {CARD_RESERVE / GiB:.1f} GiB for the driver and desktop"
        head = f"Estimated peak {self.total / GiB:.1f} GiB on {self.where} ({usable}; {USABLE:.0%} of it usable)"
        return head + (": fits." if self.fits else ": will not fit.")


def estimate(shape: ModelShape, *, batch: int, seq_len: int, load_in_4bit: bool = False, dtype_bytes: int = 2,
             lora_r: int = 16, targets: list[str] | None = None, optimizer: str = "adamw",
             gradient_checkpointing: bool = True, head: str = "causal_lm", num_labels: int = 1,
             reward_shapes: tuple[ModelShape, ...] = (), generation_batch: int = 0, generation_len: int = 0,
             full_reference: bool = False, cuda: bool = True, train: str = "lora", extra_layers: int = 0) -> Estimate:
    """Peak training memory, in bytes, by part.

    batch: sequences per optimizer micro-step; seq_len: prompt + response tokens.
    optimizer: 'adamw' (fp32 states, 8 B/param) or 'adamw_8bit' (2 B/param).
    head: 'causal_lm' (a policy: log-probs through TRL's fused LM head) or 'classifier' (a reward or process
    reward model: a `score` layer of num_labels outputs and no LM head).
    reward_shapes: reward models held beside a policy (16-bit classifiers, no gradients).
    full_reference: a separate reference model (full fine-tuning with beta > 0); LoRA runs reuse the base.
    train: what learns: 'lora' (adapters on `targets`), 'full' (every weight) or 'top' (only `extra_layers` fresh
    decoder layers added above the base, which stays frozen); `extra_layers` count as weights whatever learns.
    """
    if head not in HEADS:
        raise ValueError(f"unknown head {head!r}; choose one of {', '.join(HEADS)}")
    targets = targets or list(shape.linear_shapes())
    c = param_counts(shape)
    total = classifier_params(shape, num_labels) if head == "classifier" else c["total"]
    fresh = extra_layers * c["layers"] // shape.layers
    e = Estimate()
    if load_in_4bit:  # bitsandbytes quantizes the linear layers; embeddings / lm_head / norms stay 16-bit
        e.parts["weights"] = c["linear"] * NF4_BYTES + (total - c["linear"]) * dtype_bytes
    else:
        e.parts["weights"] = total * dtype_bytes
    e.parts["weights"] += fresh * dtype_bytes
    state = 8 if optimizer == "adamw" else 2
    if train == "lora":
        e.parts["LoRA + grads + optimizer"] = lora_params(shape, lora_r, targets) * (4 + 4 + state)
    elif train == "full":
        e.parts["grads + optimizer"] = (total + fresh) * (4 + state)
    else:
        e.parts["fresh layers' grads + optimizer"] = fresh * (4 + state)
    tokens = batch * seq_len
    # Activations: with checkpointing one hidden state per layer plus one layer recomputed in full; without, every
    # layer's (layer_bytes).
    per_layer_full = layer_bytes(shape, dtype_bytes) * tokens
    if gradient_checkpointing:
        e.parts["activations"] = shape.layers * tokens * shape.hidden * dtype_bytes + per_layer_full
    else:
        e.parts["activations"] = shape.layers * per_layer_full
    if head == "causal_lm" and cuda:  # one logits tile at a time, and the float32 gradient of the hidden states
        e.parts["LM head (fused log-probs)"] = (min(tokens, FUSED_TOKENS) * min(shape.vocab, FUSED_VOCAB)
                                                * dtype_bytes + tokens * shape.hidden * 4)
    elif head == "causal_lm":  # the CPU's op holds float32 logits and their gradient (measured: above)
        e.parts["LM head (log-probs)"] = tokens * shape.vocab * 4 * 2
    else:  # float32 logits of num_labels per token and their gradient
        e.parts["classifier head"] = tokens * num_labels * 4 * 2
    if full_reference:
        e.parts["reference model"] = e.parts["weights"]
    if reward_shapes:
        e.parts["reward models"] = sum(classifier_params(s, 2) for s in reward_shapes) * dtype_bytes
    if generation_batch and generation_len:
        e.parts["generation KV cache"] = (2 * shape.layers * shape.kv_heads * shape.head_dim * dtype_bytes
                                          * generation_batch * generation_len)
    if cuda:
        e.parts["CUDA context"] = CUDA_CONTEXT
    return e


def layer_bytes(s: ModelShape, dtype_bytes: int) -> int:
    """What one Qwen3 / Llama decoder layer keeps for its backward pass, per token, as transformers' modeling code
    computes it with SDPA attention (no s^2 term): its two RMSNorms (a float32 copy and the normed output), the
    attention's q / k / v projections, their q/k norms and rotary outputs, k and v repeated to every query head
    (grouped-query attention), the attention's output and o_proj's input (7 q-sized and 4 kv-sized tensors), and
    the SwiGLU MLP's gate, up, activation and product. On the Qwen3-0.6B shape in float32 (139 KB a token and
    layer) it is 0.75-0.85 of what the CPU measured (bench/bench_checkpointing.py)."""
    q, kv = s.heads * s.head_dim, s.kv_heads * s.head_dim
    return 2 * s.hidden * (4 + dtype_bytes) + (7 * q + 4 * kv) * dtype_bytes + 4 * s.intermediate * dtype_bytes


def device_free() -> float | None:
    try:
        import torch

        if torch.cuda.is_available():
            return float(torch.cuda.mem_get_info()[0])
    except Exception:
        pass
    return None


def shipped_shape(name: str) -> Path | None:
    """The config.json the studio ships for a hub id (rloo_studio/assets/model-shapes/<org>/<name>/), or None."""
    parts = str(name).strip().split("/")
    if len(parts) != 2 or not all(parts) or any(p in (".", "..") for p in parts):
        return None
    path = MODEL_SHAPES / parts[0] / parts[1] / "config.json"
    return path if path.is_file() else None


def read_shape(name: str) -> tuple[ModelShape, str]:
    """(shape, note): from the model's own config.json (a folder, or a hub id in the local cache), else from the
    shape the studio ships for that hub id (note says so); never runs a model's own code, never downloads."""
    from rloo_studio.core.errors import ModelLoadError
    from rloo_studio.core.models import resolve

    try:
        path, note = Path(resolve(name)) / "config.json", ""
    except ModelLoadError:
        path = shipped_shape(name)
        if path is None:
            raise
        note = f"{name} is not on this machine: the estimate reads the shape the studio ships for it"
    return ModelShape.from_config(_config(path)), note


def _config(path: Path):
    """A config.json as transformers reads it; a model type transformers does not know, as plain JSON."""
    from transformers import AutoConfig, PretrainedConfig

    try:
        return AutoConfig.from_pretrained(str(path.parent), trust_remote_code=False)  # never ask on stdin
    except (ValueError, KeyError, OSError):
        return PretrainedConfig.from_dict(json.loads(path.read_text()))


def preflight(model: str, *, card_gib: float | None = None, reward_models: tuple[str, ...] = (),
              **kw) -> Estimate:
    """Estimate for a model named by path or hub id (`estimate`'s keywords in `kw`), on this machine's GPU, or on
    a card of `card_gib` GiB when planning (a GPU's 16-bit weights and its CUDA context wherever this runs), or
    on this CPU in float32 (no CUDA context, not checked)."""
    shape, note = read_shape(model)
    rshapes = tuple(read_shape(r)[0] for r in reward_models)
    known = set(shape.linear_shapes())
    kw["targets"] = [t for t in (kw.get("targets") or known) if t in known]
    if card_gib is not None:
        free, where = card_gib * GiB - CARD_RESERVE, f"a {card_gib:g} GiB card"
    else:
        free, where = device_free(), "this GPU"
    gpu = free is not None  # a GPU trains in 16-bit (core/models.default_dtype); a CPU in float32
    e = estimate(shape, reward_shapes=rshapes, dtype_bytes=2 if gpu else 4, cuda=gpu, **kw)
    e.free, e.where, e.shape_note = free, where if gpu else "", note
    return e


def optimizer_kind(optim: str) -> str:
    """The optimizer-state size class of a transformers optimizer name."""
    return "adamw_8bit" if "8bit" in optim else "adamw"
