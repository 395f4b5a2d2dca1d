"""Small statistics shared by the views (no torch, no gradio): Pearson's r, built on the standard library."""
from __future__ import annotations

import statistics
from typing import Sequence


def correlation(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Pearson's r of two equally long series (statistics.correlation); None when there are fewer than
    three points or either series is constant (r is undefined, or says nothing)."""
    if len(x) != len(y):
        raise ValueError(f"correlation needs series of one length, got {len(x)} and {len(y)}")
    if len(x) < 3:
        return None
    try:
        return statistics.correlation(x, y)
    except statistics.StatisticsError:  # a constant input
        return None
