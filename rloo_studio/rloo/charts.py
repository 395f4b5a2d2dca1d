"""The RLOO tab's charts: which TRL metrics each chart shows (PLOTS), its title in words, and its lines
(runs.chart_data holds the Chart / Line data and the words for each metric key; ui.charts draws them)."""
from __future__ import annotations

import math

from rloo_studio.rloo.completions import expand
from rloo_studio.rloo.health import step_records
from rloo_studio.runs.chart_data import PALETTE, Chart, Line, points, run_colors, title

# (plot title, metric keys); a key ending in '/*/mean' expands to every reward function's mean.
PLOTS: list[tuple[str, list[str]]] = [
    ("loss", ["loss"]),
    ("reward", ["reward", "rewards/*/mean"]),
    ("KL", ["kl"]),
    ("reward spread", ["reward_std", "frac_reward_zero_std"]),
    ("entropy", ["entropy"]),
    ("completion length", ["completions/mean_length", "completions/min_length", "completions/max_length"]),
    ("truncated (clipped_ratio)", ["completions/clipped_ratio"]),
    ("clip-ratio bands", ["clip_ratio/low_mean", "clip_ratio/high_mean", "clip_ratio/region_mean"]),
    ("step time (s)", ["step_time"]),
]

CHART_TITLES = {  # PLOTS titles -> words
    "loss": "loss (RLOO)",
    "reward": "reward: total and each reward",
    "KL": "KL to the reference",
    "reward spread": "reward spread within groups",
    "entropy": "entropy",
    "completion length": "completion length (tokens)",
    "truncated (clipped_ratio)": "share of completions cut at max length",
    "clip-ratio bands": "clip ratio (importance-sampling bands)",
    "step time (s)": "seconds per step",
}

LOSS_NOTE = ("Near zero by design: leave-one-out advantages<br>average zero in each prompt's group.<br>"
             "Watch the reward rise and KL stay small instead.")


def rloo_charts(records: list[dict], run_id: str = "", earlier: list[dict] | None = None, earlier_id: str = "",
                smoothing: float = 0.0, log: bool = False) -> list[Chart]:
    """One Chart per entry of PLOTS, titled in words; an earlier run's lines dashed and named by its id."""
    recs = step_records(records)
    old = step_records(earlier) if earlier else []
    pair_colors = run_colors([run_id or "this run", earlier_id or "earlier run"]) if old else {}
    out = []
    for plot_title, keys in PLOTS:
        chart = Chart(CHART_TITLES.get(plot_title, plot_title), log=log,
                      note=LOSS_NOTE if plot_title == "loss" else "")
        for runs, rid, dash in ((recs, run_id, "solid"), (old, earlier_id or "earlier run", "dash")):
            if not runs:
                continue
            keys_here = expand(keys, runs)
            total_as = _total_is_one_reward(runs, keys_here, smoothing, log)
            for i, key in enumerate(keys_here):
                if key == total_as:
                    continue  # drawn once, as the total (below)
                steps, vals = points(runs, key, smoothing, log)
                if not steps:
                    continue
                name, color = title(key), PALETTE[i % len(PALETTE)]
                if key == "reward" and total_as:  # one line, the total and the only reward: say both
                    name, key = f"total = {title(total_as).removeprefix('reward: ')}", f"reward = {total_as}"
                if old:  # two runs on one chart: say whose line it is; one metric: each run in its colour
                    rid = rid or "this run"
                    group = f"{rid} ({'solid' if dash == 'solid' else 'dashed'})" if len(keys) > 1 else ""
                    name = name if len(keys) > 1 else rid
                    color = color if len(keys) > 1 else pair_colors.get(rid, color)
                else:
                    group = ""
                chart.lines.append(Line(name, key, steps, vals, color, dash, group))
        out.append(chart)
    return out


def _same(a: tuple[list[int], list[float]], b: tuple[list[int], list[float]]) -> bool:
    """The same points (steps and values, to float rounding)."""
    return a[0] == b[0] and all(math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12) for x, y in zip(a[1], b[1]))


def _total_is_one_reward(records: list[dict], keys: list[str], smoothing: float, log: bool) -> str:
    """The run's only reward key when its line equals the weighted total at every step ('' otherwise): with
    one reward of weight 1 the total and that reward are one line, and drawing both would hide one under the
    other. Only with a single reward, so a run of several rewards never merges two lines (nor un-merges
    them mid-run when a reward that was 0 so far moves)."""
    rewards = [k for k in keys if k.startswith("rewards/")]
    if "reward" not in keys or len(rewards) != 1:
        return ""
    total = points(records, "reward", smoothing, log)
    return rewards[0] if total[0] and _same(points(records, rewards[0], smoothing, log), total) else ""
