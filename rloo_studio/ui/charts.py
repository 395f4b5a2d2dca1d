"""The one chart builder of the app: a series.Chart drawn with Plotly inside gr.Plot.

Why Plotly and not Gradio's LinePlot: see docs/CHARTS.md (legends that wrap instead of clipping,
hover with step, value and TRL key, log axes, dashed overlays, and a redraw that sizes a chart first
drawn in a hidden tab). Every chart of the Reward, RLOO and Runs tabs is made here.
"""
from __future__ import annotations

import json
import math

import gradio as gr
import plotly.graph_objects as go

from rloo_studio.runs.chart_data import Chart, Line, fmt

HEIGHT = 300
TITLE_H, ROW_H = 30, 19  # pixels: the title line, one legend row
FONT = "system-ui, -apple-system, Segoe UI, Roboto, sans-serif"

WIDTH = 2.2  # a line's width; a line with a later one drawn over it is wider by UNDER per such line
UNDER = 2.0
# No mode bar: at these widths Plotly's toolbar sits on the chart's title. Zoom stays (drag a box;
# double-click to reset), and hover is unchanged.
CONFIG = {"displayModeBar": False, "displaylogo": False, "responsive": True}


class Figure(go.Figure):
    """A Plotly figure whose JSON carries its config (gr.Plot hands the JSON's "config" to Plotly)."""

    def to_json(self, *args, **kwargs) -> str:
        out = json.loads(super().to_json(*args, **kwargs))
        out["config"] = CONFIG
        return json.dumps(out)


def _dtick(max_step: int) -> int:
    """An integer tick spacing (1, 2, 5, 10, 20, 50, ...) giving at most about 8 ticks."""
    raw = max(1, math.ceil(max_step / 8))
    mag = 10 ** int(math.floor(math.log10(raw)))
    for m in (1, 2, 5, 10):
        if m * mag >= raw:
            return m * mag
    return 10 * mag


def _overlaps(a: Line, b: Line) -> bool:
    """b, drawn over a, would hide part of it: a segment of a (two neighbouring points) is also a segment of
    b with the same values, or every step they share (at least one) has the same value."""
    same = lambda x, y: math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12)  # noqa: E731
    bv, bi = dict(zip(b.steps, b.values)), {s: i for i, s in enumerate(b.steps)}
    shared = [s for s in a.steps if s in bv]
    av = dict(zip(a.steps, a.values))
    if shared and all(same(av[s], bv[s]) for s in shared):
        return True
    return any(s in bi and t in bi and bi[t] == bi[s] + 1 and same(av[s], bv[s]) and same(av[t], bv[t])
               for s, t in zip(a.steps, a.steps[1:]))


def widths(lines: list[Line]) -> list[float]:
    """Each line's width: one drawn under later lines with the same values is wider than each of them by
    UNDER, so it shows on both sides of them instead of being hidden (three zero clip-ratio lines: three
    nested stripes)."""
    level = [0] * len(lines)  # how many stripes lie over a line: one more than the widest line over it
    for i in range(len(lines) - 1, -1, -1):
        level[i] = max([level[j] + 1 for j in range(i + 1, len(lines)) if _overlaps(lines[i], lines[j])], default=0)
    return [WIDTH + UNDER * n for n in level]


def _x_range(chart: Chart) -> list[float]:
    """Steps from 0 to the last, padded so that a point at either end (the held-out point at step 0, the
    newest step) is drawn whole, not cut in half by the plot's edge."""
    hi = max([max(ln.steps) for ln in chart.lines if ln.steps] + [1])
    pad = max(0.3, 0.03 * hi)
    return [-pad, hi + pad]


def figure(chart: Chart, height: int = HEIGHT) -> go.Figure:
    fig = Figure()
    max_step, groups = 0, []
    for line, width in zip(chart.lines, widths(chart.lines)):
        heading = line.group and line.group not in groups
        if heading:
            groups.append(line.group)
        max_step = max(max_step, max(line.steps, default=0))
        few = len(line.steps) < 3
        fig.add_trace(go.Scatter(
            x=line.steps, y=line.values, name=chart.legend(line), mode="lines+markers" if few else "lines",
            legendgroup=line.group or None, legendgrouptitle=dict(text=line.group) if heading else None,
            line=dict(color=line.color, width=width, dash=line.dash, simplify=False, shape="linear"),
            marker=dict(size=(9 if len(line.steps) == 1 else 7) + width - WIDTH, color=line.color),
            cliponaxis=False,  # a point on the plot's edge is drawn whole
            customdata=[[fmt(v)] for v in line.values],
            hovertemplate=(f"<b>{line.name}</b><br>step %{{x}}<br>value %{{customdata[0]}}"
                           f"<br><span style='color:#888'>TRL key: {line.key}</span><extra></extra>"),
        ))
    empty = not chart.lines
    note = chart.note
    if empty:
        note = "no points yet" + (f"<br>{note}" if note else "")
    # Title on top, then one legend row per line (a row never wraps or clips at the widths used here),
    # then the plot: the top margin is made for exactly that many rows.
    top = TITLE_H + ROW_H * (len(chart.lines) + len(groups)) + 6
    bottom = 96 if chart.note else 44
    height = max(height, top + bottom + 130)  # many lines (an overlay): a taller chart, never a squashed plot
    fig.update_layout(
        height=height, autosize=True, template="plotly_white",
        font=dict(family=FONT, size=12),
        title=dict(text=f"<b>{chart.title}</b>", x=0, xref="container", xanchor="left", y=1, yref="container",
                   yanchor="top", pad=dict(t=8, l=10), font=dict(size=14)),
        margin=dict(l=56, r=14, t=top, b=bottom, autoexpand=True),
        showlegend=True,
        legend=dict(orientation="h", entrywidth=1, entrywidthmode="fraction", x=0, xref="container",
                    xanchor="left", y=1 - TITLE_H / height,
                    yref="container", yanchor="top", font=dict(size=12), tracegroupgap=0, indentation=6,
                    bgcolor="rgba(255,255,255,0)", itemclick="toggle", itemdoubleclick="toggleothers"),
        hovermode="closest", hoverlabel=dict(font=dict(family=FONT, size=12)),
        xaxis=dict(title=dict(text="step", standoff=4), tickformat="d", dtick=_dtick(max_step), tick0=0,
                   range=_x_range(chart), autorange=False, zeroline=False, showgrid=True),
        yaxis=dict(title=dict(text=chart.ylabel or ("value (log scale)" if chart.log else "")),
                   type="log" if chart.log else "linear", tickformat="~g" if chart.log else "",
                   exponentformat="e", zeroline=True, showgrid=True, automargin=True),
    )
    if empty:
        fig.update_xaxes(range=[0, 10], dtick=2)
        fig.update_yaxes(showticklabels=False)
    if note:
        fig.add_annotation(text=note, xref="paper", yref="paper", x=0, xanchor="left",
                           y=(0.5 if empty else 0), yanchor=("middle" if empty else "top"),
                           yshift=(0 if empty else -36), showarrow=False,
                           align="left", font=dict(size=11, color="#666"))
    return fig


def plot(title: str, elem_id: str, height: int = HEIGHT) -> gr.Plot:
    """An empty chart block; its label is the chart's title in words."""
    return gr.Plot(figure(Chart(title), height), label=title, show_label=False, elem_id=elem_id,
                   elem_classes=["studio-chart"], min_width=320)
