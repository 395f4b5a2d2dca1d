"""The Reward model tab's charts: which TRL metrics each chart shows (PLOTS), its title in words, and
its lines (runs.chart_data holds the Chart / Line data; ui.charts draws them)."""
from __future__ import annotations

from rloo_studio.runs.chart_data import PALETTE, Chart, Line, points

# plot title -> (series label, metric key); held-out values come at each evaluation
PLOTS = {
    "loss": [("train", "loss"), ("held-out", "eval_loss")],
    "accuracy": [("train", "accuracy"), ("held-out", "eval_accuracy")],
    "margin": [("train", "margin"), ("held-out", "eval_margin")],
    "mean reward": [("train", "mean_reward"), ("held-out", "eval_mean_reward")],
}

REWARD_TITLES = {  # PLOTS titles -> words
    "loss": "loss (pairwise, lower is better)",
    "accuracy": "accuracy: chosen scored higher",
    "margin": "margin: score(chosen) − score(rejected)",
    "mean reward": "mean reward (both responses)",
}


def reward_charts(records: list[dict]) -> list[Chart]:
    """The reward model's charts: each plot's training-batch line and held-out line (step 0: untrained)."""
    colors = {"train": PALETTE[0], "held-out": PALETTE[1]}
    names = {"train": "training batches", "held-out": "held-out pairs"}
    out = []
    for plot_title, pairs in PLOTS.items():
        chart = Chart(REWARD_TITLES.get(plot_title, plot_title))
        for label, key in pairs:
            steps, vals = points(records, key)
            if steps:
                chart.lines.append(Line(names.get(label, label), key, steps, vals, colors.get(label, PALETTE[2])))
        out.append(chart)
    return out
