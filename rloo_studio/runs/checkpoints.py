"""A run's checkpoints: the one rule that finds the newest complete one (every resume uses it), and the marker a job
without a Trainer writes so that the same rule finds its progress."""
from __future__ import annotations

import json
from pathlib import Path


def last_good_checkpoint(run_dir: Path) -> str | None:
    """The newest complete checkpoint under run_dir/checkpoints, the one rule every resume uses.

    The Trainer writes trainer_state.json last, so a save cut short by a crash or a full disk lacks
    it, or holds only its start (the file is written in place), and is passed over (transformers'
    get_last_checkpoint would pick it and fail on load)."""
    d = run_dir / "checkpoints"
    if not d.exists():
        return None
    newest_first = sorted((p for p in d.glob("checkpoint-*") if p.name[11:].isdigit()),
                          key=lambda p: int(p.name[11:]), reverse=True)
    return next((str(p) for p in newest_first if _state_written(p)), None)  # one state read, as a rule


def _state_written(checkpoint: Path) -> bool:
    try:
        return isinstance(json.loads((checkpoint / "trainer_state.json").read_text()), dict)
    except (OSError, ValueError):  # missing, or cut short by a kill while it was written
        return False


def mark_checkpoint(ctx, step: int) -> None:
    """For a job that trains no Trainer (the rollouts job): record that everything up to `step` is done and kept,
    as a Trainer's checkpoint folder (trainer_state.json last), so that Resume, the one rule of last_good_checkpoint
    and the rewind treat it alike."""
    if not ctx.main:
        return
    d = ctx.dir / "checkpoints" / f"checkpoint-{step}"
    d.mkdir(parents=True, exist_ok=True)
    (d / "trainer_state.json").write_text(json.dumps({"global_step": step}))


def checkpoint_step(checkpoint: str | None) -> int:
    return int(Path(checkpoint).name[11:]) if checkpoint else 0
