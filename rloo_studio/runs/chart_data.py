"""Chart data in words, without gradio: charts' lines named for a reader, values formatted for their
size, one colour per run, and one metric of several runs overlaid (the Runs tab). Each stage says what its
own charts show (reward.charts, rloo.charts); the UI (rloo_studio/ui/charts.py) only draws.

A Chart is a title in words, an optional one-line note, and Lines; a Line is a legend name, the TRL
metric key it comes from (shown in the hover), integer steps and values. Sources: TRL's metric
records (metrics.jsonl).
"""
from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field

# Tableau 10: colours a reader can tell apart, also in print.
PALETTE = ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#eeca3b", "#9d755d",
           "#ff9da6", "#79706e"]

TITLES = {  # TRL metric key -> words
    "loss": "loss",
    "reward": "reward (weighted total)",
    "reward_std": "std within a group",
    "frac_reward_zero_std": "groups with one reward",
    "kl": "KL to the reference",
    "entropy": "entropy",
    "completions/mean_length": "mean length (tokens)",
    "completions/min_length": "shortest (tokens)",
    "completions/max_length": "longest (tokens)",
    "completions/clipped_ratio": "cut at max length",
    "completions/mean_terminated_length": "mean length, finished",
    "clip_ratio/low_mean": "clipped low (mean)",
    "clip_ratio/high_mean": "clipped high (mean)",
    "clip_ratio/region_mean": "clipped either way (mean)",
    "step_time": "seconds per step",
    "learning_rate": "learning rate",
    "grad_norm": "gradient norm",
    "accuracy": "accuracy",
    "margin": "margin (chosen − rejected)",
    "mean_reward": "mean reward",
    "eval_loss": "held-out loss",
    "eval_accuracy": "held-out accuracy",
    "eval_margin": "held-out margin",
    "eval_mean_reward": "held-out mean reward",
}

LEGEND_CHARS = 28  # a legend name longer than this is shortened (its value follows; the hover has it whole)


def title(key: str) -> str:
    """A TRL metric key in words: 'rewards/correctness/mean' -> 'reward: correctness', 'kl' -> 'KL to the reference'."""
    if key.startswith("rewards/") and key.endswith("/mean"):
        return "reward: " + key[len("rewards/"):-len("/mean")]
    if key.startswith("rewards/") and key.endswith("/std"):
        return "reward spread: " + key[len("rewards/"):-len("/std")]
    return TITLES.get(key, key.replace("_", " ").replace("/", ": "))


def fmt(v: float | None) -> str:
    """A value written for its size: 0.953, 12.4, 1,234, 5.2e-08, 0."""
    if v is None or not isinstance(v, (int, float)) or not math.isfinite(v):
        return "–"
    a = abs(v)
    if a == 0:
        return "0"
    if a >= 1e5 or a < 1e-3:
        return f"{v:.2e}"
    if a >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def run_color(run_id: str) -> str:
    """The colour of a run wherever runs are overlaid (the same id always gets the same colour)."""
    return PALETTE[zlib.crc32(run_id.encode()) % len(PALETTE)]


def run_colors(run_ids: list[str]) -> dict[str, str]:
    """Each run its own colour (run_color), moved to the next free one only if two shown runs collide.
    Collisions are settled in run-id order (the older run keeps its colour), never in the order the runs
    are listed, so the same runs get the same colours on every tab."""
    out: dict[str, str] = {}
    for rid in sorted(set(run_ids)):
        c = run_color(rid)
        i = PALETTE.index(c)
        while c in out.values() and len(out) < len(PALETTE):
            i = (i + 1) % len(PALETTE)
            c = PALETTE[i]
        out[rid] = c
    return out


@dataclass
class Line:
    name: str  # legend label
    key: str  # TRL metric key (hover)
    steps: list[int]
    values: list[float]
    color: str
    dash: str = "solid"
    group: str = ""  # a legend heading above this line and the next ones of the same group (a run)

    @property
    def constant(self) -> bool:
        return len(self.values) > 1 and max(self.values) == min(self.values)


@dataclass
class Chart:
    title: str
    lines: list[Line] = field(default_factory=list)
    note: str = ""  # one line under the chart, in words
    log: bool = False  # log y axis (only positive values are drawn)
    ylabel: str = ""

    def legend(self, line: Line) -> str:
        """The legend label: the name and the latest value ('= value' for a constant series)."""
        name = line.name if len(line.name) <= LEGEND_CHARS else line.name[:LEGEND_CHARS - 1] + "…"  # hover: whole
        if not line.values:
            return name
        v = fmt(line.values[-1])
        return f"{name} = {v} (constant)" if line.constant else f"{name} · {v}"


def smooth(values: list[float], weight: float) -> list[float]:
    """Exponential moving average, debiased like TensorBoard's (weight 0: raw, 0.99: very smooth)."""
    if not weight:
        return list(values)
    out, avg = [], 0.0
    for n, v in enumerate(values, 1):
        avg = weight * avg + (1 - weight) * v
        out.append(avg / (1 - weight ** n))
    return out


def points(records: list[dict], key: str, smoothing: float = 0.0, log: bool = False) -> tuple[list[int], list[float]]:
    """(steps, values) of one key, the last record per step winning; log keeps positive values only."""
    by_step: dict[int, float] = {}
    for r in records:
        v, s = r.get(key), r.get("step")
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and s is not None:
            by_step[int(s)] = float(v)
    steps = sorted(by_step)
    vals = smooth([by_step[s] for s in steps], smoothing)
    if log:
        kept = [(s, v) for s, v in zip(steps, vals) if v > 0]
        steps, vals = [s for s, _ in kept], [v for _, v in kept]
    return steps, vals


def overlay_chart(runs: list[tuple[str, list[dict]]], key: str, smoothing: float = 0.0, log: bool = False) -> Chart:
    """One metric of several runs: a line per run, named by the run id, in the run's colour."""
    colors = run_colors([rid for rid, _ in runs])
    chart = Chart(title(key), log=log)
    for rid, records in runs:
        steps, vals = points(records, key, smoothing, log)
        if steps:
            chart.lines.append(Line(rid, key, steps, vals, colors[rid]))
    return chart
