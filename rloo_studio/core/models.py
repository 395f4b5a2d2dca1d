"""Load a policy (causal LM) or a reward model (sequence classifier), with LoRA.

Unsloth's FastLanguageModel where it serves (causal LMs, when unsloth imported), plain
transformers + PEFT otherwise; `backend` chooses. 4-bit goes through bitsandbytes.
Every failure to find or load a model becomes a ModelLoadError with a plain message.
What a config says about a model without loading one (LoraSpec, backends, the trust check)
lives in core/model_options.py, which imports no torch.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path

from rloo_studio.core import bootstrap  # noqa: F401  (unsloth before transformers)

# isort: split
import torch  # noqa: E402

from rloo_studio.core.errors import ModelLoadError  # noqa: E402
from rloo_studio.core.model_options import BACKENDS, LoraSpec, check_remote_code  # noqa: E402
from rloo_studio.core.paths import ASSETS, DEMO_MODEL, DEMO_SLIPPY_MODEL, outside_allowed  # noqa: E402


def resolve(name_or_path: str) -> str:
    """A local folder for a path or a hub id already in the local cache; never downloads."""
    name = (name_or_path or "").strip()
    if not name:
        raise ModelLoadError("No model given. Enter a local folder or a Hugging Face hub id.")
    if len(name) > 1024 or any(len(part) > 255 for part in Path(name).parts):  # the OS would refuse to look
        raise ModelLoadError(f"No model at {name[:60]}… ({len(name)} characters): that is too long to be a "
                             "folder or a hub id. Check the path.")
    p = moved_demo(Path(name).expanduser())
    roots = (p.exists() or name.startswith(("/", ".", "~"))) and outside_allowed(p)
    if roots:
        raise ModelLoadError(f"{name} is outside the folders this app may read ({roots}). "
                             "Copy the model into the workspace, or restart the app with --allow-path FOLDER.")
    if p.exists():
        if not p.is_dir() or not ((p / "config.json").exists() or (p / "adapter_config.json").exists()):
            raise ModelLoadError(f"{p} is not a model folder (it has no config.json). Point to the saved model's "
                                 "folder.")
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


def moved_demo(p: Path) -> Path:
    """A bundled demo model named by the path it had before the assets moved into the package (<repo>/assets/…):
    where runs saved until 2026-12-07 name it, in their config.yaml and their adapter's base. Any other path as
    it is."""
    if p.parent.name == "assets" and p.name in (DEMO_MODEL.name, DEMO_SLIPPY_MODEL.name) and not p.exists():
        return ASSETS / p.name
    return p


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
                   max_seq_length: int = 2048, trust_remote_code: bool = False, dtype=None):
    """(model, tokenizer, backend_used) for generation or RL; no adapter attached yet.

    dtype: None for default_dtype(); "auto" (transformers) for the precision the weights are stored in."""
    path = resolve(name_or_path)
    check_remote_code(path, trust_remote_code)
    dtype = dtype or default_dtype()
    if use_unsloth(backend):
        from unsloth import FastLanguageModel

        model, tok = load_locked(
            FastLanguageModel.from_pretrained, path, max_seq_length=max_seq_length, dtype=dtype,
            load_in_4bit=load_in_4bit, trust_remote_code=trust_remote_code,
        )
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        return model, tok, "unsloth"
    from transformers import AutoModelForCausalLM

    tok = load_tokenizer(path, trust_remote_code)
    model = load_locked(
        AutoModelForCausalLM.from_pretrained, path, dtype=dtype,
        quantization_config=_bnb_config(load_in_4bit), trust_remote_code=trust_remote_code,
    )
    return model, tok, "transformers"


def add_lora(model, lora: LoraSpec, backend_used: str, task_type: str = "CAUSAL_LM", seed: int = 0,
             gradient_checkpointing: bool = False):
    """The LoRA adapter on `model`. Under Unsloth, gradient checkpointing is its offloaded mode, set here (Unsloth
    restores the mode given here whenever training starts); otherwise the trainer's config turns it on."""
    if backend_used == "unsloth" and task_type == "CAUSAL_LM":
        from unsloth import FastLanguageModel

        return FastLanguageModel.get_peft_model(
            model, r=lora.r, lora_alpha=lora.alpha, lora_dropout=lora.dropout,
            target_modules=list(lora.target_modules), random_state=seed,
            use_gradient_checkpointing="unsloth" if gradient_checkpointing else False,
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


def load_token_cls(name_or_path: str, load_in_4bit: bool = False, trust_remote_code: bool = False,
                   extra_layers: int = 0):
    """(model, tokenizer): a two-label token classifier over a causal decoder (fresh `score` head): a process
    reward model's shape, read at each step (inspect/process.py). `extra_layers`: fresh decoder layers of the
    base's shape on top of its own (from_pretrained draws the weights it does not find)."""
    from transformers import AutoConfig, AutoModelForTokenClassification

    path = resolve(name_or_path)
    tok = load_tokenizer(path, trust_remote_code)
    more = {}
    if extra_layers:
        conf = AutoConfig.from_pretrained(path, trust_remote_code=trust_remote_code)
        more["num_hidden_layers"] = conf.num_hidden_layers + extra_layers
        if getattr(conf, "layer_types", None):  # one per layer: the new ones as the base's last
            more["layer_types"] = list(conf.layer_types) + [conf.layer_types[-1]] * extra_layers
    model = load_locked(
        AutoModelForTokenClassification.from_pretrained, path, num_labels=2, dtype=default_dtype(),
        quantization_config=_bnb_config(load_in_4bit), trust_remote_code=trust_remote_code,
        id2label={0: "wrong", 1: "right"}, label2id={"wrong": 0, "right": 1}, **more,
    )
    model.config.pad_token_id = tok.pad_token_id
    return model, tok


def load_token_cls_adapter(adapter_dir: str | Path, trust_remote_code: bool = False):
    """A trained process reward model: base + PEFT TOKEN_CLS adapter (head included), or a whole fine-tuned
    model saved in the folder. Returns (model, tokenizer) in eval mode."""
    from peft import PeftConfig, PeftModel

    adapter_dir = Path(adapter_dir)
    if (adapter_dir / "adapter_config.json").exists():
        base = PeftConfig.from_pretrained(str(adapter_dir)).base_model_name_or_path
        model, tok = load_token_cls(base, trust_remote_code=trust_remote_code)
        model = PeftModel.from_pretrained(model, str(adapter_dir))
    elif (adapter_dir / "config.json").exists():
        model, tok = load_token_cls(str(adapter_dir), trust_remote_code=trust_remote_code)
    else:
        raise ModelLoadError(f"No trained model in {adapter_dir}: the run saved none (did it fail early?).")
    model.eval()
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


def load_policy(base: str | None, adapter: str | Path | None = None, *, of_run: bool = False,
                load_in_4bit: bool | None = None, trust_remote_code: bool | None = None,
                backend: str = "transformers", dtype=None, device: str | None = "auto"):
    """(model, tokenizer): a policy with a trained LoRA adapter on it (or the bare base), in eval mode.

    The one rule for its settings (an argument given explicitly always wins):
    - `of_run`: the adapter was found by run id (runs/<id>/adapter/, the run's config.yaml beside it);
      only then are the run's saved settings read. A typed adapter folder grants nothing by what lies beside it.
    - `base`: empty means the run's `model` (of_run), else the base named in the adapter's adapter_config.json.
    - `load_in_4bit`: None means the run's saved load_in_4bit (of_run), else False.
    - `trust_remote_code`: never on by default. None means the run's saved value, only when of_run and the base
      is the run's own model (a run's trust covers the model it was ticked for, not another base); else False.
      A model that ships its own code is refused (check_remote_code) unless trust is on.
    - `dtype`: None means default_dtype(); "auto" keeps the stored precision (a merge for export).
    - `device`: "auto" puts the model on the GPU when there is one (4-bit weights are placed by
      bitsandbytes); None leaves it where from_pretrained put it.
    An adapter that does not fit the base is a ModelLoadError that names the base it was trained on.
    """
    setting = (lambda key, default: run_setting(adapter, key, default)) if adapter and of_run else \
        (lambda key, default: default)
    run_model = setting("model", None)
    trained_on = run_model or (_adapter_base(adapter) if adapter else None)
    base = (base or "").strip() or trained_on or ""
    path = resolve(base)
    if load_in_4bit is None:
        load_in_4bit = bool(setting("load_in_4bit", False))
    if trust_remote_code is None:
        trust_remote_code = bool(setting("trust_remote_code", False)) and _same_model(path, run_model)
    model, tok, _ = load_causal_lm(path, backend, bool(load_in_4bit), trust_remote_code=trust_remote_code,
                                   dtype=dtype)
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else None
    if device and not getattr(model, "is_loaded_in_4bit", False):
        model.to(device)  # before the adapter, so that PEFT puts its weights beside the base's
    if adapter:
        model = _put_adapter(model, Path(adapter), base, trained_on)
    model.eval()
    return model, tok


def _adapter_base(adapter: str | Path) -> str | None:
    import json

    try:
        return json.loads((Path(adapter) / "adapter_config.json").read_text()).get("base_model_name_or_path")
    except (OSError, ValueError, AttributeError):
        return None


def _same_model(path: str, run_model: str | None) -> bool:
    try:
        return bool(run_model) and resolve(run_model) == path
    except ModelLoadError:
        return False


def _put_adapter(model, adapter: Path, base: str, trained_on: str | None):
    from peft import PeftModel

    if not (adapter / "adapter_config.json").exists():
        raise ModelLoadError(f"No trained adapter in {adapter}: it has no adapter_config.json.")
    try:
        return PeftModel.from_pretrained(model, str(adapter))  # the root adapter only: TRL's ref/ copy stays out
    except torch.OutOfMemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 — most often an adapter of another base model
        hint = f" It was trained on {trained_on}: load it on that base." if trained_on else ""
        raise ModelLoadError(f"The adapter in {adapter} does not fit the base model {base}: "
                             f"{type(exc).__name__}: {str(exc)[:200]}.{hint}") from None


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
