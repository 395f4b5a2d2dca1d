"""The process-reward-model section's charts: which metrics each chart shows and its title in words (runs.chart_data
holds the Chart / Line data; ui.charts draws them)."""
from __future__ import annotations

from rloo_studio.runs.chart_data import PALETTE, Chart, Line, points

# chart title -> (series label, metric key); held-out values come at each evaluation (step 0: the untrained head)
PLOTS = {
    # held out: each judged step's probability as the scorer reads it (min_so_far: the lowest over its tokens), where
    # eval_loss would score single positions that a model trained on every token is not asked to hold the verdict at
    "loss (lower is better)": [("training batches", "loss"), ("held-out steps, as read", "eval_step_loss")],
    "held-out step accuracy": [("all steps", "eval_step_accuracy"),
                               ("right steps called right", "eval_right_called_right"),
                               ("wrong steps called wrong", "eval_wrong_called_wrong")],
    # short series names: a legend that cuts a name loses it (the chart test reads each one whole)
    # ProcessBench's terms (inspect/processbench.py, `eval-prm`): the same figures on the run's held-out rows
    "held-out ProcessBench F1": [("erroneous: first wrong named", "eval_first_wrong_found"),
                                 ("correct: no step flagged", "eval_correct_called_correct"),
                                 ("ProcessBench F1", "eval_processbench_f1")],
}


def prm_charts(records: list[dict]) -> list[Chart]:
    out = []
    for title, series in PLOTS.items():
        chart = Chart(title)
        for i, (label, key) in enumerate(series):
            steps, vals = points(records, key)
            if steps:
                chart.lines.append(Line(label, key, steps, vals, PALETTE[i % len(PALETTE)]))
        out.append(chart)
    return out
