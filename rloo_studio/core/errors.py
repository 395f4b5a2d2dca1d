"""Errors a user can act on, and the translation of everything else into a plain message."""
from __future__ import annotations


class StudioError(Exception):
    """An error whose message tells the user what is wrong and what to do."""


class ConfigError(StudioError, ValueError):
    pass


class ModelLoadError(StudioError):
    pass


class DataError(StudioError, ValueError):
    pass


class DivergedError(StudioError):
    pass


OOM_HINT = (
    "Out of memory. Lower the batch size (per_device_train_batch_size) and raise gradient_accumulation_steps, "
    "shorten max_length / max_completion_length, or load the model in 4-bit."
)


def explain(exc: BaseException, in_run: bool = False) -> str:
    """One message for the page: what happened and what to change. `in_run`: the error ended a run,
    whose log.txt holds the traceback."""
    if isinstance(exc, StudioError):
        return str(exc)
    text = str(exc)
    if isinstance(exc, OSError) and exc.errno == 28:  # ENOSPC
        where = f" writing {exc.filename}" if exc.filename else ""
        return (f"The disk is full{where}. Free some space (old runs' checkpoints are the usual culprit), "
                "then resume the run: earlier checkpoints are kept.")
    if "database or disk is full" in text:  # SQLite's words for it
        return "The disk is full: the workspace's database could not grow. Free some space, then try again."
    if isinstance(exc, OSError) and exc.errno == 36:  # ENAMETOOLONG
        return "That file name is too long for the file system; choose a shorter name (at most 200 characters)."
    if isinstance(exc, MemoryError) or "out of memory" in text.lower() or type(exc).__name__ == "OutOfMemoryError":
        return f"{OOM_HINT} ({type(exc).__name__}: {text[:200]})"
    return f"{type(exc).__name__}: {text[:500]}" + (" (the run's log.txt has the details)" if in_run else "")
