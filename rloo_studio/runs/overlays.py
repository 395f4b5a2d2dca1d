"""Curves of several runs overlaid (the Runs tab): which curves the picked runs can show, named as their job tabs name
them, and one chart per (kind, metric).

A curve is a kind's metric as that kind's own charts draw it (runs.jobs.JobKind.chart_fn: rloo.charts, reward.charts,
prm.charts), so the picker offers what the job tabs chart, in their words, and never the Trainer's bookkeeping
(total_flos, runtimes, samples per second, epoch). A kind without charts offers its key_metrics. Two kinds' curves
never share an axis: a process reward model's loss (0.6 -> 0.01 over 2,000 steps) beside an RLOO loss (about 1e-8
by design) would flatten one of them into a line along zero, and the two losses measure different things.
"""
from __future__ import annotations

from dataclasses import dataclass

from rloo_studio.core.workspace import Workspace
from rloo_studio.runs.chart_data import Chart, overlay_chart, points, title
from rloo_studio.runs.headline import HEADLINES
from rloo_studio.runs.jobs import KINDS
from rloo_studio.runs.jobs import title as kind_title
from rloo_studio.runs.runner import read_metrics

MAX_CHARTS = 4  # charts shown at once (the tab lays out this many)
SEP = " › "


@dataclass(frozen=True)
class Curve:
    kind: str
    key: str  # the TRL metric key
    label: str  # in the kind's words: its chart's title, then the line's name where the chart has several
    note: str = ""  # the kind's note under that chart, when the curve is the chart's only metric (RLOO's loss)

    @property
    def value(self) -> str:
        """The picker's value: 'kind:key' (kinds' names hold no ':')."""
        return f"{self.kind}:{self.key}"

    @property
    def name(self) -> str:
        """The picker's label and the chart's title: 'process-reward › held-out step accuracy › all steps'."""
        return kind_title(self.kind) + SEP + self.label


Run = tuple[str, str, list[dict]]  # (run id, kind, metric records)


def load(ws: Workspace, run_ids: list[str]) -> list[Run]:
    kinds = {r["id"]: r["kind"] for r in ws.runs()}
    return [(rid, kinds[rid], read_metrics(ws.run_dir(rid))) for rid in run_ids if rid in kinds]


def _kind_curves(kind: str, records: list[dict]) -> list[Curve]:
    """The curves one run of `kind` has points for, in the order its charts draw them."""
    job = KINDS.get(kind)
    fn = job.chart_fn() if job else None
    if fn is None:  # no charts of its own: the figures that sum such a run up
        return [Curve(kind, key, words) for words, key in (job.key_metrics if job else ())
                if points(records, key)[0]]
    out = []
    for chart in fn(records):
        for line in chart.lines:
            key = line.key.split(" = ")[0]  # RLOO's total drawn as its only reward: 'reward = rewards/x/mean'
            name = title(key) if key != line.key else line.name
            alone = name.casefold() in chart.title.casefold()  # 'loss' in 'loss (RLOO)': the chart is that metric
            out.append(Curve(kind, key, chart.title if alone else chart.title + SEP + name,
                             chart.note if alone else ""))
    return out


def curves(runs: list[Run]) -> list[Curve]:
    """Every curve some picked run has points for: kinds in the registry's order, each kind's in its charts' order."""
    seen: dict[str, Curve] = {}
    for kind in sorted({k for _, k, _ in runs}, key=_order):
        for _, k, records in runs:
            if k == kind:
                for c in _kind_curves(kind, records):
                    seen.setdefault(c.value, c)
    return list(seen.values())


def _order(kind: str) -> tuple[int, str]:
    names = list(KINDS)
    return (names.index(kind) if kind in names else len(names), kind)


def picks(available: list[Curve], current: list[str] | None) -> list[str]:
    """The curves to draw: the current picks that the runs still have, and for each kind without one the curve of its
    headline figure (runs.headline: held-out accuracy, reward, ...), else of its first key figure (the registry's
    key_metrics), else its first curve; at most MAX_CHARTS."""
    values = [c.value for c in available]
    out = [v for v in (current or []) if v in values]
    for kind in dict.fromkeys(c.kind for c in available):
        if any(v.split(":", 1)[0] == kind for v in out):
            continue
        mine = [c.key for c in available if c.kind == kind]
        wanted = [k for _, k, _ in HEADLINES.get(kind, ())]
        wanted += [k for _, k in getattr(KINDS.get(kind), "key_metrics", ())]
        out.append(f"{kind}:{next((k for k in wanted if k in mine), mine[0])}")
    return out[:MAX_CHARTS]


def charts(runs: list[Run], chosen: list[str], smoothing: float = 0.0, log: bool = False) -> list[Chart]:
    """One chart per picked curve, in the order picked: that kind's runs, a line each named by its run id in the
    run's colour (the colour it has on its job tab), titled as the picker names it."""
    by_value = {c.value: c for c in curves(runs)}
    out = []
    for value in chosen[:MAX_CHARTS]:
        curve = by_value.get(value)
        if curve is None:
            continue
        mine = [(rid, records) for rid, kind, records in runs if kind == curve.kind]
        chart = overlay_chart(mine, curve.key, smoothing, log)
        chart.title, chart.note = curve.name, curve.note
        missing = [rid for rid, _ in mine if rid not in {ln.name for ln in chart.lines}]
        if missing:
            chart.note = (chart.note + "<br>" if chart.note else "") + f"no points: {', '.join(missing)}"
        out.append(chart)
    return out


def without_curves(runs: list[Run]) -> list[str]:
    """The picked runs with nothing to chart (a generate or export run, a run before its first step), to say so
    rather than leave them out silently."""
    return [rid for rid, kind, records in runs if not _kind_curves(kind, records)]
