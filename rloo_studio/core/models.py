"""Load a policy (causal LM) or a reward model (sequence classifier), with LoRA.

Unsloth's FastLanguageModel where it serves (causal LMs, when unsloth imported), plain
transformers + PEFT otherwise; `backend` chooses. 4-bit goes through bitsandbytes.
Every failure to find or load a model becomes a ModelLoadError with a plain message.
"""
from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from rloo_studio.core import bootstrap  # noqa: F401  (unsloth before transformers)
import torch  # noqa: E402

from rloo_studio.core.errors import ModelLoadError  # noqa: E402

BACKENDS = ("auto", "unsloth", "transformers")
# Set by the app (not the CLI): local model folders must lie under one of these (workspace,
# bundled assets, the Hugging Face cache, --allow-path). None: no restriction.
ALLOWED_ROOTS: list[Path] | None = None
DEFAULT_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass
class LoraSpec:
    r: int = 16
    """LoRA rank."""
    alpha: int = 32
    """LoRA scaling numerator (scale = alpha / r)."""
    dropout: float = 0.0
    """Dropout on the LoRA input."""
    target_modules: list[str] = field(default_factory=lambda: list(DEFAULT_TARGETS))
    """Linear layers that get adapters (Qwen3 names)."""


def resolve(name_or_path: str) -> str:
    """A local folder for a path or a hub id already in the local cache; never downloads."""
    name = (name_or_path or "").strip()
    if not name:
        raise ModelLoadError("No model given. Enter a local folder or a Hugging Face hub id.")
    if len(name) > 1024 or any(len(part) > 255 for part in Path(name).parts):  # the OS would refuse to look
        raise ModelLoadError(f"No model at {name[:60]}… ({len(name)} characters): that is too long to be a "
                             "folder or a hub id. Check the path.")
    p = Path(name).expanduser()
    if ALLOWED_ROOTS is not None and (p.exists() or name.startswith(("/", ".", "~"))):
        real = p.resolve()
        if not any(real == r or r in real.parents for r in ALLOWED_ROOTS):
            raise ModelLoadError(
                f"{name} is outside the folders this app may read ({', '.join(str(r) for r in ALLOWED_ROOTS)}). "
                "Copy the model into the workspace, or restart the app with --allow-path FOLDER."
            )
    if p.exists():
        if not p.is_dir() or not ((p / "config.json").exists() or (p / "adapter_config.json").exists()):
            raise ModelLoadError(f"{p} is not a model folder (it has no config.json). Point to the saved model's folder.")
        return str(p.resolve())
    if name.startswith(("/", ".", "~")) or name.count("/") != 1 or os.sep == "\\" and "\\" in name:
        raise ModelLoadError(f"No model at {name}: the folder does not exist. Check the path.")
    try:
        from huggingface_hub import snapshot_download

        return snapshot_download(name, local_files_only=True)
    except Exception:
        raise ModelLoadError(
            f"{name} is not in the local Hugging Face cache, and RLOO Studio does not download at run time. "
            f"Download it first (hf download {name}) or enter a local folder."
        ) from None


def restrict_to(roots: list[str | Path]) -> None:
    """Limit local model paths to these folders (and the Hugging Face cache)."""
    from huggingface_hub.constants import HF_HUB_CACHE

    global ALLOWED_ROOTS
    ALLOWED_ROOTS = [Path(r).expanduser().resolve() for r in [*roots, HF_HUB_CACHE]]


TRUST_SHORT = "Runs the model's own Python code: only for a model whose source you trust."
TRUST_WARNING = ("trust_remote_code is on: this model's own Python code will run on this machine with your "
                 "permissions. Keep it on only for a model whose source you trust.")


def ships_code(path: str | Path) -> bool:
    """Whether a model folder brings its own Python classes (auto_map in config.json or tokenizer_config.json)."""
    for name in ("config.json", "tokenizer_config.json"):
        try:
            if json.loads((Path(path) / name).read_text()).get("auto_map"):
                return True
        except (OSError, ValueError, AttributeError):
            continue
    return False


def check_remote_code(path: str, trust_remote_code: bool) -> None:
    """Refuse, with a plain message, to load a model that needs its own code unless the user ticked trust."""
    if not trust_remote_code and ships_code(path):
        raise ModelLoadError(
            f"{path} ships its own Python code (auto_map in its config), which RLOO Studio runs only when you tick "
            "trust_remote_code. Tick it only if you trust where this model comes from; otherwise choose another model."
        )


def use_unsloth(backend: str) -> bool:
    if backend not in BACKENDS:
        raise ModelLoadError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if backend == "unsloth" and not bootstrap.UNSLOTH_VERSION:
        raise ModelLoadError(f"Unsloth is not available ({bootstrap.UNSLOTH_ERROR}); choose backend 'transformers'.")
    return backend != "transformers" and bool(bootstrap.UNSLOTH_VERSION)


def default_dtype() -> torch.dtype:
    if torch.cuda.is_available():
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.float32  # CPU: fp32 is exact and, for small models, as fast as bf16


def load_tokenizer(path: str, trust_remote_code: bool = False):
    from transformers import AutoTokenizer

    check_remote_code(path, trust_remote_code)
    try:
        tok = AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code)
    except Exception as exc:
        raise ModelLoadError(f"Could not load the tokenizer of {path}: {exc}") from None
    if tok.pad_token is None:  # generation and batching need one; EOS is the usual stand-in
        tok.pad_token = tok.eos_token
    return tok


def think_token_ids(tok) -> tuple[int | None, int | None]:
    """Ids of <think> and </think> from the tokenizer (None where the vocabulary lacks one)."""
    unk = tok.unk_token_id
    ids = []
    for t in ("<think>", "</think>"):
        i = tok.convert_tokens_to_ids(t)
        ids.append(None if i is None or i == unk else i)
    return ids[0], ids[1]


def _bnb_config(load_in_4bit: bool):
    if not load_in_4bit:
        return None
    from transformers import BitsAndBytesConfig

    return BitsAndBytesConfig(
        load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
        bnb_4bit_compute_dtype=default_dtype(),
    )


# from_pretrained is not thread-safe: it builds the model under process-wide init contexts (meta device,
# skipped weight init), so two loads at once in two threads (a training job and the Playground or Inspect
# tab) can give a model with parameters left on the meta device or an untied, random lm_head. One at a time.
LOAD_LOCK = threading.RLock()


def load_locked(loader, path: str, **kw):
    """loader(path, **kw) under LOAD_LOCK; a failure other than out-of-memory becomes a plain ModelLoadError."""
    try:
        with LOAD_LOCK:
            return loader(path, **kw)
    except torch.OutOfMemoryError:
        raise
    except Exception as exc:
        raise ModelLoadError(f"Could not load the model at {path}: {type(exc).__name__}: {str(exc)[:300]}") from None


def load_causal_lm(name_or_path: str, backend: str = "auto", load_in_4bit: bool = False,
                   max_seq_length: int = 2048, trust_remote_code: bool = False):
    """(model, tokenizer, backend_used) for generation or RL; no adapter attached yet."""
    path = resolve(name_or_path)
    check_remote_code(path, trust_remote_code)
    if use_unsloth(backend):
        from unsloth import FastLanguageModel

        model, tok = load_locked(
            FastLanguageModel.from_pretrained, path, max_seq_length=max_seq_length, dtype=default_dtype(),
            load_in_4bit=load_in_4bit, trust_remote_code=trust_remote_code,
        )
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        return model, tok, "unsloth"
    from transformers import AutoModelForCausalLM

    tok = load_tokenizer(path, trust_remote_code)
    model = load_locked(
        AutoModelForCausalLM.from_pretrained, path, dtype=default_dtype(),
        quantization_config=_bnb_config(load_in_4bit), trust_remote_code=trust_remote_code,
    )
    return model, tok, "transformers"


def add_lora(model, lora: LoraSpec, backend_used: str, task_type: str = "CAUSAL_LM", seed: int = 0):
    if backend_used == "unsloth" and task_type == "CAUSAL_LM":
        from unsloth import FastLanguageModel

        return FastLanguageModel.get_peft_model(
            model, r=lora.r, lora_alpha=lora.alpha, lora_dropout=lora.dropout,
            target_modules=list(lora.target_modules), random_state=seed, use_gradient_checkpointing=False,
        )
    from peft import get_peft_model

    return get_peft_model(model, lora_config(lora, task_type))


def lora_config(lora: LoraSpec, task_type: str):
    """PEFT config. task_type SEQ_CLS makes PEFT train and save the score head too."""
    from peft import LoraConfig

    return LoraConfig(
        r=lora.r, lora_alpha=lora.alpha, lora_dropout=lora.dropout, target_modules=list(lora.target_modules),
        task_type=task_type,
    )


def load_seq_cls(name_or_path: str, load_in_4bit: bool = False, trust_remote_code: bool = False):
    """(model, tokenizer): a one-label sequence classifier over a causal decoder (fresh score head)."""
    from transformers import AutoModelForSequenceClassification

    path = resolve(name_or_path)
    tok = load_tokenizer(path, trust_remote_code)
    model = load_locked(
        AutoModelForSequenceClassification.from_pretrained, path, num_labels=1, dtype=default_dtype(),
        quantization_config=_bnb_config(load_in_4bit), trust_remote_code=trust_remote_code,
    )
    model.config.pad_token_id = tok.pad_token_id  # the head reads the last non-pad token
    return model, tok


def run_trusts_code(adapter_dir: str | Path) -> bool:
    """Whether the user ticked trust_remote_code for the run that saved this adapter (its config.yaml).

    Only for adapters found by run id: a typed folder never grants trust by what lies beside it."""
    return bool(run_setting(adapter_dir, "trust_remote_code", False))


def run_setting(adapter_dir: str | Path, key: str, default=None):
    """A setting of the run that saved this adapter (its config.yaml beside adapter/), or `default`."""
    import yaml

    try:
        value = (yaml.safe_load((Path(adapter_dir).parent / "config.yaml").read_text()) or {}).get(key, default)
    except (OSError, ValueError, AttributeError):
        return default
    return default if value is None else value


def load_reward_adapter(adapter_dir: str | Path, base: str | None = None, trust_remote_code: bool = False):
    """A trained reward model: base + PEFT adapter (score head included). Returns (model, tokenizer)."""
    from peft import PeftConfig, PeftModel

    adapter_dir = Path(adapter_dir)
    if not (adapter_dir / "adapter_config.json").exists():
        raise ModelLoadError(f"No trained adapter in {adapter_dir}: the run saved none (did it fail early?).")
    base = base or PeftConfig.from_pretrained(str(adapter_dir)).base_model_name_or_path
    model, tok = load_seq_cls(base, trust_remote_code=trust_remote_code)
    model = PeftModel.from_pretrained(model, str(adapter_dir))
    model.eval()
    return model, tok
