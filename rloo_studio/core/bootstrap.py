"""Process set-up that must run before transformers / trl / peft are imported.

Unsloth patches TRL's trainers at import time (and, on CPU, replaces TRL's Triton log-prob
kernel that otherwise crashes with '0 active drivers'), so it must be imported before them. Every
process that trains imports this module first (app.py, the CLI, the test suite); it does not import
Unsloth itself but puts a finder on sys.meta_path that imports Unsloth just before the first import
of transformers, trl or peft, wherever that happens. Unsloth's import takes about 10 s on a CPU (torch
included): the app serves its page without it and pays it when the first model is loaded.
Nothing here downloads anything.
"""
from __future__ import annotations

import os
import sys
import warnings
from importlib.machinery import ModuleSpec

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
    late = [m for m in FIRST if m in sys.modules and "unsloth" not in sys.modules]
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


FIRST = ("transformers", "trl", "peft")  # what Unsloth must come before


class UnslothFirst:
    """The meta path finder that imports Unsloth before the first of FIRST is imported, then leaves. Unsloth
    imports that module itself; the finder hands it over (a spec whose loader returns the module as it is), so
    the import system does not run it a second time."""

    def find_spec(self, name, path=None, target=None):
        if name not in FIRST or self not in sys.meta_path:
            return None
        sys.meta_path.remove(self)
        _import_unsloth()
        return ModuleSpec(name, self) if name in sys.modules else None

    def create_module(self, spec):
        module = sys.modules[spec.name]
        self._spec = module.__spec__  # the import system sets the module's __spec__ to ours: put it back
        return module

    def exec_module(self, module) -> None:
        module.__spec__ = self._spec


def backend() -> str:
    """The training backend in words: Unsloth's version once imported (or, before the first model is loaded,
    as installed), else plain transformers + PEFT."""
    if UNSLOTH_VERSION or UNSLOTH_ERROR:
        return f"Unsloth {UNSLOTH_VERSION}" if UNSLOTH_VERSION else "transformers + PEFT"
    if os.environ.get("RLOO_STUDIO_NO_UNSLOTH") == "1":
        return "transformers + PEFT"
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"Unsloth {version('unsloth')}"
    except PackageNotFoundError:
        return "transformers + PEFT"


if "unsloth" in sys.modules or any(m in sys.modules for m in FIRST):
    _import_unsloth()  # too late to wait: import it now (and warn if it comes after transformers)
elif not any(isinstance(f, UnslothFirst) for f in sys.meta_path):
    sys.meta_path.insert(0, UnslothFirst())
