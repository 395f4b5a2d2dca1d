"""Chart data in words, without gradio: what each training chart shows, its lines named for a reader,
values formatted for their size, one colour per run. The UI (rloo_studio/ui/charts.py) only draws.

A Chart is a title in words, an optional one-line note, and Lines; a Line is a legend name, the TRL
metric key it comes from (shown in the hover), integer steps and values. Sources: TRL's metric
records (metrics.jsonl) as the RLOO, reward and Runs tabs read them.
"""
from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field
from rloo_studio.core.thinking import parse

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
LOSS_NOTE = ("Near zero by design: leave-one-out advantages<br>average zero in each prompt's group.<br>"
             "Watch the reward rise and KL stay small instead.")


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


def rloo_charts(records: list[dict], run_id: str = "", earlier: list[dict] | None = None, earlier_id: str = "",
                smoothing: float = 0.0, log: bool = False) -> list[Chart]:
    """One Chart per entry of rloo_view.PLOTS, titled in words; an earlier run's lines dashed and named by its id."""
    from rloo_studio.rloo import view as rv

    recs = rv.step_records(records)
    old = rv.step_records(earlier) if earlier else []
    pair_colors = run_colors([run_id or "this run", earlier_id or "earlier run"]) if old else {}
    out = []
    for plot_title, keys in rv.PLOTS:
        chart = Chart(CHART_TITLES.get(plot_title, plot_title), log=log,
                      note=LOSS_NOTE if plot_title == "loss" else "")
        for runs, rid, dash in ((recs, run_id, "solid"), (old, earlier_id or "earlier run", "dash")):
            if not runs:
                continue
            keys_here = rv.expand(keys, runs)
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


CHART_TITLES = {  # rloo.view.PLOTS titles -> words
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


REWARD_TITLES = {  # reward.view.PLOTS titles -> words
    "loss": "loss (pairwise, lower is better)",
    "accuracy": "accuracy: chosen scored higher",
    "margin": "margin: score(chosen) − score(rejected)",
    "mean reward": "mean reward (both responses)",
}


def reward_charts(records: list[dict]) -> list[Chart]:
    """The reward model's charts: each plot's training-batch line and held-out line (step 0: untrained)."""
    from rloo_studio.reward.view import PLOTS

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


def overlay_chart(runs: list[tuple[str, list[dict]]], key: str, smoothing: float = 0.0, log: bool = False) -> Chart:
    """One metric of several runs: a line per run, named by the run id, in the run's colour."""
    colors = run_colors([rid for rid, _ in runs])
    chart = Chart(title(key), log=log)
    for rid, records in runs:
        steps, vals = points(records, key, smoothing, log)
        if steps:
            chart.lines.append(Line(rid, key, steps, vals, colors[rid]))
    return chart


# -- the RLOO completions table: a prompt's k completions together ---------------------------------

ORDERS = ("advantage (best first)", "reward (best first)", "as generated")


def completion_groups(samples: list[dict], order: str = ORDERS[0], limit: int = 64) -> tuple[list[str], list[list]]:
    """(headers, rows): the newest groups first, each prompt's completions together (the rollout view of
    verl / miles), with each reward, the weighted total and the leave-one-out advantage; thinking and
    answer apart. Within a group the rows follow `order`."""
    from rloo_studio.rloo.view import completion_columns

    names = completion_columns(samples)[4:-4]
    recent = samples[-limit:]
    groups: dict[tuple, list[dict]] = {}
    for s in recent:
        groups.setdefault((s.get("step"), s.get("prompt")), []).append(s)
    keys = sorted(groups, key=lambda k: -(k[0] or 0))  # newest step first, prompts in generation order
    headers = ["group", "step", "prompt", "#", "thinking", "answer", *names, "total", "advantage", "tokens", "cut"]
    rows = []
    for g, key in enumerate(keys, 1):
        members = list(enumerate(groups[key], 1))
        if order.startswith("advantage"):
            members.sort(key=lambda m: -(m[1].get("advantage") or 0))
        elif order.startswith("reward"):
            members.sort(key=lambda m: -(m[1].get("total") or 0))
        for i, s in members:
            p = parse(s.get("response") or s.get("completion", ""))
            think = p.thinking if (p.has_close or p.has_open) else ""
            answer = p.answer if not p.truncated else "(cut before </think>)"
            rows.append([f"{g} · k={len(members)}", s.get("step"), s.get("prompt"), i, think, answer,
                         *[_round(s.get("rewards", {}).get(n)) for n in names], _round(s.get("total")),
                         _round(s.get("advantage")), s.get("length"), "yes" if s.get("truncated") else ""])
    return headers, rows


def _round(v):
    return None if not isinstance(v, (int, float)) else round(float(v), 3)
