"""RLOO Studio: label preference pairs and reasoning steps, train reward and process reward models, inspect them,
and train a policy with RLOO, in one local app or from Python.

    import rloo_studio as rs
    app = rs.launch(workspace="ws", demo=True)              # the app, in a notebook cell or served from a script
    run = rs.train_reward("ws", preset="demo-cpu")        # the same jobs from Python (rloo_studio/python_api.py)
    run.wait(); run.metrics(); run.plot()

Importing the package loads no torch: each name below loads its module when first used.
"""
from __future__ import annotations

import importlib

# (the package's subpackages label and runs are modules: the functions are label_pair and list_runs)
_API = ("open_workspace", "import_file", "export", "next_pair", "label_pair", "config", "train", "train_reward",
        "train_rloo", "train_prm", "label_steps", "run", "list_runs", "score", "eval_prm", "Run")
_NAMES = {**{name: "rloo_studio.python_api" for name in _API}, "launch": "rloo_studio.notebook",
          "StudioApp": "rloo_studio.notebook", "StudioError": "rloo_studio.core.errors"}
__all__ = sorted(_NAMES)


def __getattr__(name: str):
    if name in _NAMES:
        return getattr(importlib.import_module(_NAMES[name]), name)
    raise AttributeError(f"module 'rloo_studio' has no attribute {name!r}")
