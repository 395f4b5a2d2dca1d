"""What a job's config says about loading a model, without loading one: the LoRA shape, the loader
backends, and the trust_remote_code check and texts.

Standard library only (no torch, transformers or Unsloth), so that config classes, the CLI's --help
and the forms import it in milliseconds; core/models.py does the loading.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from rloo_studio.core.errors import ModelLoadError

BACKENDS = ("auto", "unsloth", "transformers")
DEFAULT_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass
class LoraSpec:
    r: int = field(default=16, metadata={"help": (
        "LoRA rank: the size of each adapter's low-rank update. Higher learns more and trains more parameters; "
        "8-16 is typical.")})
    alpha: int = field(default=32, metadata={"help": (
        "LoRA scaling numerator: updates are scaled by alpha / r, so raising r at a fixed alpha shrinks each "
        "update; alpha = r or 2r is usual.")})
    dropout: float = field(default=0.0, metadata={"help": (
        "Dropout on the LoRA input during training (0 to below 1); 0.05-0.1 can help with few examples.")})
    target_modules: list[str] = field(default_factory=lambda: list(DEFAULT_TARGETS), metadata={"help": (
        "Linear layers that get adapters, by module name (Qwen3 / Llama names: q_proj, k_proj, v_proj, "
        "o_proj, gate_proj, up_proj, down_proj); fewer layers train faster.")})


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
