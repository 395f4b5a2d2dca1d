"""Will a run fit, here or on a card of a given size, and what would: the one check behind the tabs' Check settings
and Fit to this card, the CLI's `--check`, `--gpu-memory` and `--fit`, the memory line each job logs, and the guard
that refuses, on a GPU, to launch a run that will not fit.

A kind's estimate and its levers are its registry entry's (runs.jobs.JobKind.plan / fit); the arithmetic is
core/memory.py, the search for what fits core/memory_fit.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rloo_studio.core.errors import ConfigError, StudioError, explain
from rloo_studio.runs.jobs import KINDS

GiB = 2**30


@dataclass
class Plan:
    """What Check settings found for a config: the kind's pre-flight, the memory estimate, and what would fit."""

    kind: str
    cfg: Any
    card_gib: float | None = None  # planned for a card of this size (None: this machine)
    problem: str | None = None  # what the kind's pre-flight refused, in words (None: it passed)
    estimate: Any = None  # core.memory.Estimate, or None where none could be made
    line: str = ""  # the memory line
    fitted: Any = None  # the nearest config that fits (the config itself when it fits or nothing helps)
    changes: list[str] = field(default_factory=list)  # what `fitted` changed, in words

    @property
    def fits(self) -> bool | None:
        return None if self.estimate is None else self.estimate.fits

    @property
    def passes(self) -> bool:
        """The run can start: the estimate does not say it will not fit, and the pre-flight passed, where it
        judges this machine (a plan for another card tells what this machine lacks, without judging it)."""
        return self.fits is not False and (self.problem is None or self.card_gib is not None)

    def parts(self) -> list[tuple[str, str]]:
        return self.estimate.table() if self.estimate is not None else []


def words(e, fitted, changes: list[str]) -> str:
    """The memory line of an estimate `e`, with the nearest config that fits (`fitted`, `changes`) where it will
    not fit."""
    line = ("Memory" + (f" ({e.note})" if e.note else "") + ": " + e.verdict()
            + (f" ({e.shape_note}.)" if e.shape_note else ""))
    if changes and fitted.fits:
        return line + (f" It fits ({fitted.total / GiB:.1f} GiB) with: {'; '.join(changes)}. Fit to this card "
                       "applies it (CLI: --fit).")
    if e.fits is False:
        tried = f" (with {'; '.join(changes)}: {fitted.total / GiB:.1f} GiB)" if changes else ""
        return line + (f" Nothing the studio can change makes it fit{tried}: a card with more memory, or a smaller "
                       "model.")
    return line


def estimate(kind: str, cfg, ws=None, card_gib: float | None = None) -> Plan:
    """The memory half of a plan: the estimate, its line, and what would fit (no pre-flight)."""
    job, plan = KINDS[kind], Plan(kind, cfg, card_gib, fitted=cfg)
    if not job.memory:
        return plan
    try:
        plan.estimate = e = job.plan(cfg, ws, card_gib)
        plan.fitted, f, plan.changes = job.fit(cfg, ws, card_gib) if e.fits is False else (cfg, e, [])
    except Exception as exc:  # noqa: BLE001 — an estimate never stops a check; the model check says why
        plan.estimate, plan.line = None, f"Memory: not estimated ({explain(exc)})"
        return plan
    plan.line = words(e, f, plan.changes)
    return plan


def memory_line(kind: str, cfg, ws=None, card_gib: float | None = None) -> str:
    """The pre-flight's "Memory: ..." line a job logs and a tab shows."""
    return estimate(kind, cfg, ws, card_gib).line


def check(ws, kind: str, cfg, card_gib: float | None = None) -> Plan:
    """Check settings: the kind's pre-flight (model, data, settings the job would trip over; a StudioError in
    words becomes `problem`) and the memory plan, here or for a card of `card_gib` GiB. Starts nothing."""
    problem = None
    try:
        KINDS[kind].check(ws, cfg)
    except StudioError as exc:
        problem = str(exc)
    plan = estimate(kind, cfg, ws, card_gib)
    plan.problem = problem
    return plan


def guard(ws, kind: str, cfg) -> None:
    """On a GPU, refuse a run whose estimate does not fit the free memory, in words, unless the config's
    memory_guard is off. On a CPU nothing is checked (its memory is not the GPU's)."""
    if not getattr(cfg, "memory_guard", False) or not KINDS[kind].memory:
        return
    from rloo_studio.core.memory import device_free

    if device_free() is None:
        return
    plan = estimate(kind, cfg, ws)
    if plan.fits is False:
        raise ConfigError(f"{plan.line} Launch refused: untick memory_guard (CLI: --set memory_guard=false) to "
                          "start it all the same.")
