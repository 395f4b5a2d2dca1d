"""A copy of the demo model that ships its own Python code (auto_map), for trust_remote_code tests.

Its configuration module appends a line to MARKER when imported, so a test can tell whether
the model's own code ran."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from rloo_studio.core.paths import DEMO_MODEL

CONFIG_PY = '''
from transformers import Qwen3Config

with open({marker!r}, "a") as f:
    f.write("the model's own code ran\\n")


class CustomQwen3Config(Qwen3Config):
    model_type = "custom_qwen3"
'''
MODELING_PY = '''
from torch import nn
from transformers import Qwen3ForCausalLM, Qwen3ForSequenceClassification, Qwen3Model, Qwen3PreTrainedModel

from .configuration_custom import CustomQwen3Config


class CustomQwen3Model(Qwen3Model):
    config_class = CustomQwen3Config


class CustomQwen3ForCausalLM(Qwen3ForCausalLM):
    config_class = CustomQwen3Config


class CustomQwen3ForSequenceClassification(Qwen3ForSequenceClassification):
    config_class = CustomQwen3Config

    def __init__(self, config):  # as transformers' generic head, but the body built directly, not by AutoModel
        Qwen3PreTrainedModel.__init__(self, config)
        self.num_labels = config.num_labels
        self.model = CustomQwen3Model(config)
        self.score = nn.Linear(config.hidden_size, self.num_labels, bias=False)
        self.post_init()
'''


def make_custom_code_model(folder: Path) -> Path:
    """The demo model's weights and tokenizer under a model type that only its own code defines; returns MARKER."""
    shutil.copytree(DEMO_MODEL, folder)
    marker = folder.parent / f"{folder.name}-code-ran.txt"
    (folder / "configuration_custom.py").write_text(CONFIG_PY.format(marker=str(marker)))
    (folder / "modeling_custom.py").write_text(MODELING_PY)
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(model_type="custom_qwen3", architectures=["CustomQwen3ForCausalLM"],
               auto_map={"AutoConfig": "configuration_custom.CustomQwen3Config",
                         "AutoModelForCausalLM": "modeling_custom.CustomQwen3ForCausalLM",
                         "AutoModelForSequenceClassification": "modeling_custom.CustomQwen3ForSequenceClassification"})
    (folder / "config.json").write_text(json.dumps(cfg, indent=2))
    return marker
