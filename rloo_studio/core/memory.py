"""Memory pre-flight: will this reward or RLOO run fit on the device?

An estimate from the model's shape (no weights are loaded): weights (4-bit or 16-bit), LoRA
weights with their gradients and optimizer states, activations for batch x length, the logits,
a reward model, the generation KV cache, and a fixed allowance for the CUDA context. With LoRA
the RLOO reference model is the base with adapters switched off: no second copy of the weights.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

GiB = 2**30
CUDA_CONTEXT = 0.8 * GiB  # driver context + allocator slack, measured typically 0.5-1 GB
NF4_BYTES = 0.5 + 0.5 / 64 + 4 / (64 * 256)  # 4-bit weights + fp8 block scales + double-quant constants


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

    @property
    def total(self) -> float:
        return sum(self.parts.values())

    @property
    def fits(self) -> bool | None:
        return None if self.free is None else self.total <= 0.92 * self.free

    def table(self) -> list[tuple[str, str]]:
        return [(k, f"{v / GiB:.2f} GiB") for k, v in self.parts.items()] + [("total", f"{self.total / GiB:.2f} GiB")]


def estimate(shape: ModelShape, *, batch: int, seq_len: int, load_in_4bit: bool = False, dtype_bytes: int = 2,
             lora_r: int = 16, targets: list[str] | None = None, optimizer: str = "adamw",
             gradient_checkpointing: bool = True, chunked_ce: bool = False, reward_shape: ModelShape | None = None,
             generation_batch: int = 0, generation_len: int = 0, full_reference: bool = False,
             cuda: bool = True, train: str = "lora", extra_layers: int = 0) -> Estimate:
    """Peak training memory, in bytes, by part.

    batch: sequences per optimizer micro-step; seq_len: prompt + response tokens.
    optimizer: 'adamw' (fp32 states, 8 B/param) or 'adamw_8bit' (2 B/param).
    full_reference: a separate reference model (full fine-tuning with beta > 0); LoRA runs reuse the base.
    train: what learns: 'lora' (adapters on `targets`), 'full' (every weight) or 'top' (only `extra_layers` fresh
    decoder layers added above the base, which stays frozen); `extra_layers` count as weights whatever learns.
    """
    targets = targets or list(shape.linear_shapes())
    c = param_counts(shape)
    fresh = extra_layers * c["layers"] // shape.layers
    e = Estimate()
    if load_in_4bit:  # bitsandbytes quantizes the linear layers; embeddings / lm_head / norms stay 16-bit
        e.parts["weights"] = c["linear"] * NF4_BYTES + (c["total"] - c["linear"]) * dtype_bytes
    else:
        e.parts["weights"] = c["total"] * dtype_bytes
    e.parts["weights"] += fresh * dtype_bytes
    state = 8 if optimizer == "adamw" else 2
    if train == "lora":
        e.parts["LoRA + grads + optimizer"] = lora_params(shape, lora_r, targets) * (4 + 4 + state)
    elif train == "full":
        e.parts["grads + optimizer"] = (c["total"] + fresh) * (4 + state)
    else:
        e.parts["fresh layers' grads + optimizer"] = fresh * (4 + state)
    tokens = batch * seq_len
    # Activations: with checkpointing one hidden state per layer plus one layer recomputed in full
    # (~34 h bytes per token in 16-bit, flash/SDPA attention so no s^2 term); without, every layer's.
    per_layer_full = 34 * shape.hidden * tokens + 4 * tokens * shape.intermediate * dtype_bytes
    if gradient_checkpointing:
        e.parts["activations"] = shape.layers * tokens * shape.hidden * dtype_bytes + per_layer_full
    else:
        e.parts["activations"] = shape.layers * per_layer_full
    # fp32 logits and their gradient unless a chunked cross-entropy never builds them whole.
    e.parts["logits"] = (tokens * shape.vocab * 4 * 2) / (16 if chunked_ce else 1)
    if full_reference:
        e.parts["reference model"] = e.parts["weights"]
    if reward_shape is not None:
        e.parts["reward model"] = param_counts(reward_shape)["total"] * dtype_bytes
    if generation_batch and generation_len:
        e.parts["generation KV cache"] = (2 * shape.layers * shape.kv_heads * shape.head_dim * dtype_bytes
                                          * generation_batch * generation_len)
    if cuda:
        e.parts["CUDA context"] = CUDA_CONTEXT
    return e


def device_free() -> float | None:
    try:
        import torch

        if torch.cuda.is_available():
            return float(torch.cuda.mem_get_info()[0])
    except Exception:
        pass
    return None


def advice(e: Estimate, *, load_in_4bit: bool, batch: int, seq_len: int, optimizer: str,
           gradient_checkpointing: bool) -> str:
    """A plain verdict with the changes that help most, largest saving first."""
    if e.free is None:
        return f"Estimated peak memory {e.total / GiB:.1f} GiB (CPU run, float32: not checked against a GPU)."
    head = f"Estimated peak {e.total / GiB:.1f} GiB of {e.free / GiB:.1f} GiB free"
    if e.fits:
        return head + ": fits."
    tips = []
    if not load_in_4bit:
        tips.append("load the model in 4-bit")
    if not gradient_checkpointing:
        tips.append("turn on gradient checkpointing")
    if batch > 1:
        tips.append(f"lower the batch to {max(1, batch // 2)} and double gradient accumulation")
    if seq_len > 512:
        tips.append(f"shorten the max length to {seq_len // 2}")
    if optimizer == "adamw":
        tips.append("use adamw_8bit")
    return head + ": will not fit. Try: " + "; ".join(tips) + "."


def preflight(model: str, *, batch: int, seq_len: int, load_in_4bit: bool = False, lora_r: int = 16,
              targets: list[str] | None = None, optimizer: str = "adamw", gradient_checkpointing: bool = True,
              chunked_ce: bool = False, reward_model: str | None = None, generation_batch: int = 0,
              generation_len: int = 0, train: str = "lora", extra_layers: int = 0) -> tuple[Estimate, str]:
    """Estimate for a model named by path or cached hub id (reads only its config.json)."""
    from transformers import AutoConfig

    from rloo_studio.core.models import resolve

    def read(name):  # config.json only; a model type transformers does not know is read as plain JSON,
        path = resolve(name)  # so that estimating never runs a model's own code
        try:
            return AutoConfig.from_pretrained(path, trust_remote_code=False)  # False, not None: never ask on stdin
        except ValueError:
            from transformers import PretrainedConfig

            return PretrainedConfig.from_json_file(str(Path(path) / "config.json"))

    shape = ModelShape.from_config(read(model))
    rshape = ModelShape.from_config(read(reward_model)) if reward_model else None
    known = set(shape.linear_shapes())
    free = device_free()
    # a GPU trains in 16-bit (core/models.default_dtype); a CPU in float32, with no CUDA context
    e = estimate(shape, batch=batch, seq_len=seq_len, load_in_4bit=load_in_4bit, lora_r=lora_r,
                 targets=[t for t in (targets or known) if t in known], optimizer=optimizer,
                 gradient_checkpointing=gradient_checkpointing, chunked_ce=chunked_ce, reward_shape=rshape,
                 generation_batch=generation_batch, generation_len=generation_len,
                 dtype_bytes=2 if free is not None else 4, cuda=free is not None, train=train,
                 extra_layers=extra_layers)
    e.free = free
    return e, advice(e, load_in_4bit=load_in_4bit, batch=batch, seq_len=seq_len, optimizer=optimizer,
                     gradient_checkpointing=gradient_checkpointing)


def optimizer_kind(optim: str) -> str:
    """The optimizer-state size class of a transformers optimizer name."""
    return "adamw_8bit" if "8bit" in optim else "adamw"


def line(model: str, **kw) -> str:
    """The pre-flight's "Memory: ..." line for a job's model and shape (see `preflight`); a model that is not
    there is reported by the model check itself, so here it only says the estimate could not be made."""
    try:
        return "Memory: " + preflight(model, **kw)[1]
    except Exception as exc:  # noqa: BLE001
        return f"Memory: not estimated ({exc})"
