"""Process set-up that must run before transformers / trl / peft are imported.

Unsloth patches TRL's trainers at import time (and, on CPU, replaces TRL's Triton log-prob
kernel that otherwise crashes with '0 active drivers'), so every process that trains imports
this module first: app.py, the CLI, the test suite. Nothing here downloads anything.
"""
from __future__ import annotations

import os
import sys
import warnings

# No network at run time: models and data come from disk or the local cache only.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("UNSLOTH_DISABLE_STATISTICS", "1")
warnings.filterwarnings("ignore", message=".*Enum subclass.*")

UNSLOTH_VERSION: str | None = None
UNSLOTH_ERROR: str | None = None


def _import_unsloth() -> None:
    global UNSLOTH_VERSION, UNSLOTH_ERROR
    if os.environ.get("RLOO_STUDIO_NO_UNSLOTH") == "1":
        UNSLOTH_ERROR = "disabled by RLOO_STUDIO_NO_UNSLOTH=1"
        return
    late = [m for m in ("transformers", "trl", "peft") if m in sys.modules and "unsloth" not in sys.modules]
    if late:
        warnings.warn(f"{', '.join(late)} imported before unsloth; Unsloth's patches may not apply", stacklevel=3)
    try:
        import contextlib

        with contextlib.redirect_stdout(sys.stderr):  # its banner must not pollute --json output
            import unsloth  # noqa: F401

        from importlib.metadata import version

        UNSLOTH_VERSION = version("unsloth")
    except Exception as exc:  # a broken GPU driver or a missing package: fall back to plain transformers
        UNSLOTH_ERROR = f"{type(exc).__name__}: {exc}"


_import_unsloth()
