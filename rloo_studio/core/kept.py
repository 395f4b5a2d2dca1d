"""What the studio keeps in memory between jobs, and giving memory back.

The studio is one long-lived process: a job's models must go when it ends, and the few models kept on purpose
(Inspect's scorer, the process reward model's scorer, the Playground's models: each one at a time) are listed here
with their size, so that the app can show them and "Unload models" can free them all. A holder registers a
`describe` (what it keeps) and a `clear` (drop it) at import; this module imports no torch.
"""
from __future__ import annotations

import ctypes
import gc
import sys
import threading
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Kept:
    holder: str  # who keeps it ("Inspect's reward model", ...)
    what: str  # the model, in words
    bytes: int  # its weights and buffers in memory


_HOLDERS: dict[str, tuple[Callable[[], list[Kept]], Callable[[], object]]] = {}
_LOCK = threading.Lock()


def register(holder: str, describe: Callable[[], list[Kept]], clear: Callable[[], object]) -> None:
    with _LOCK:
        _HOLDERS[holder] = (describe, clear)


def held() -> list[Kept]:
    """Everything kept now, holder by holder."""
    with _LOCK:
        holders = list(_HOLDERS.values())
    return [k for describe, _ in holders for k in describe()]


def unload_all() -> list[Kept]:
    """Drop everything kept (a holder busy answering finishes first, or says so by raising); returns what was
    kept. The memory is then given back (release_memory)."""
    was = held()
    with _LOCK:
        clears = [clear for _, clear in _HOLDERS.values()]
    for clear in clears:
        clear()
    release_memory()
    return was


def model_bytes(model) -> int:
    """Bytes of a torch module's parameters and buffers (0 for anything else)."""
    try:
        return sum(t.numel() * t.element_size() for t in (*model.parameters(), *model.buffers()))
    except Exception:  # noqa: BLE001 — a holder's description never fails the page
        return 0


def release_memory() -> None:
    """Give memory back after a job or an unload: collect the reference cycles a trainer leaves (its callbacks
    hold it; patched methods close over it), empty the CUDA allocator's cache, and hand freed pages back to the
    system (glibc keeps freed memory otherwise)."""
    gc.collect()
    torch = sys.modules.get("torch")  # never imported just to free memory
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        except (OSError, AttributeError):
            pass


def describe_held(kept: list[Kept]) -> str:
    """'Inspect's reward model: reward run reward-… (4.1 MB); …', or '' when nothing is kept."""
    return "; ".join(f"{k.holder}: {k.what} ({_size(k.bytes)})" for k in kept)


def _size(n: int) -> str:
    for unit, scale in (("GB", 2 ** 30), ("MB", 2 ** 20), ("KB", 2 ** 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"
