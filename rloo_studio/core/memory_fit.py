"""The nearest config that fits: a job's memory levers tried in order until the estimate (core/memory.py) fits.

A lever is a function config -> (changed config, what it now says) or None when it can change nothing more. Each
is applied again while the estimate still does not fit and it still lowers the estimate; one that does not lower it
(4-bit under a full fine-tune, say) is passed over. The order is the issue of cost: what changes memory alone first
(gradient checkpointing), then what changes speed (a smaller generation batch, 4-bit weights, a smaller micro-batch
with more accumulation, which keep the effective batch and the completions per step), and what changes the run
itself last (shorter sequences). Standard library only: config classes import it.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

Lever = Callable[[Any], "tuple[Any, str] | None"]


def fit(cfg, plan: Callable, levers: list[Lever]) -> tuple[Any, Any, list[str]]:
    """(config, its estimate, what changed, in words): `cfg` itself when it fits or nothing helps; `plan(cfg)` is
    the estimate (memory.Estimate, whose `fits` is None where nothing is checked)."""
    est, said = plan(cfg), {}
    for lever in levers:
        while est.fits is False:
            step = lever(cfg)
            if step is None:
                break
            new_cfg, words = step
            new_est = plan(new_cfg)
            if new_est.total >= est.total:
                break
            cfg, est, said[lever] = new_cfg, new_est, words  # a lever applied twice says its last value once
        if est.fits is not False:
            break
    return cfg, est, list(said.values())


def checkpointing(cfg):
    if not cfg.gradient_checkpointing:
        return dataclasses.replace(cfg, gradient_checkpointing=True), "gradient checkpointing on"
    return None


def four_bit(cfg):
    if not cfg.load_in_4bit:
        return dataclasses.replace(cfg, load_in_4bit=True), "the base model in 4-bit"
    return None


def micro_batch(multiple: Callable[[Any], int] = lambda cfg: 1) -> Lever:
    """The largest smaller micro-batch (a multiple of `multiple(cfg)` that divides the effective batch) with the
    accumulation that keeps the effective batch: per_device_train_batch_size x gradient_accumulation_steps."""
    def lever(cfg):
        m, b, total = multiple(cfg), cfg.per_device_train_batch_size, \
            cfg.per_device_train_batch_size * cfg.gradient_accumulation_steps
        smaller = [d for d in range(b - 1, 0, -1) if d % m == 0 and total % d == 0]
        if not smaller:
            return None
        d = next((d for d in smaller if d <= b // 2), smaller[-1])
        return (dataclasses.replace(cfg, per_device_train_batch_size=d, gradient_accumulation_steps=total // d),
                f"micro-batch {d} with gradient accumulation {total // d} (the same {total} per step)")
    return lever


def shorter(key: str, floor: int, what: str) -> Lever:
    """`key` halved, never below `floor`."""
    def lever(cfg):
        now = getattr(cfg, key)
        if now <= floor:
            return None
        new = max(floor, now // 2)
        return dataclasses.replace(cfg, **{key: new}), f"{what} {new} tokens"
    return lever
