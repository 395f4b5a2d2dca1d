"""Chart data in words (rloo_studio.runs.chart_data, and each stage's charts: rloo.charts, reward.charts) and the
figures drawn from it (ui/charts.py), without a browser; the RLOO completions table (rloo.completions); the Inspect
tab's score view (one y scale for a pair, the answer coloured, what the numbers mean)."""
import json

import pytest

from rloo_studio.reward.charts import reward_charts
from rloo_studio.rloo.charts import rloo_charts
from rloo_studio.rloo.completions import completion_groups
from rloo_studio.runs import chart_data


def _rec(step, **kw):
    base = {"step": step, "loss": 1e-8 * step, "reward": 0.1 * step, "rewards/correctness/mean": 0.5,
            "kl": 0.01 * step, "completions/clipped_ratio": 0.0, "step_time": 2.0}
    return {**base, **kw}


def test_titles_in_words_and_values_for_their_size():
    assert chart_data.title("kl") == "KL to the reference"
    assert chart_data.title("rewards/correctness/mean") == "reward: correctness"
    assert chart_data.title("completions/clipped_ratio") == "cut at max length"
    assert [chart_data.fmt(v) for v in (0, 0.9531, 12.44, 1234.5, 5.2e-8, None)] == ["0", "0.953", "12.4", "1,234",
                                                                           "5.20e-08", "–"]


def test_rloo_charts_name_every_line_and_show_constants_with_their_value():
    recs = [_rec(s) for s in range(1, 5)] + [{"step": 4, "train_runtime": 9.0}]
    charts = rloo_charts(recs, "rloo-a")
    by = {c.title: c for c in charts}
    reward = by["reward: total and each reward"]
    assert [ln.name for ln in reward.lines] == ["reward (weighted total)", "reward: correctness"]
    assert [ln.key for ln in reward.lines] == ["reward", "rewards/correctness/mean"]
    assert reward.lines[0].steps == [1, 2, 3, 4] and all(isinstance(s, int) for s in reward.lines[0].steps)
    assert reward.legend(reward.lines[1]) == "reward: correctness = 0.5 (constant)"
    cut = by["share of completions cut at max length"]
    assert cut.legend(cut.lines[0]) == "cut at max length = 0 (constant)"
    assert "leave-one-out" in by["loss (RLOO)"].note and "Watch" in by["loss (RLOO)"].note


def test_one_reward_of_weight_one_is_one_line_that_says_it_is_the_total():
    # The weighted total of one reward (weight 1) equals that reward at every step: two lines would lie one
    # exactly on the other and one would be hidden. A reader needs one line that says it is both.
    recs = [_rec(s, reward=0.25 * s, **{"rewards/correctness/mean": 0.25 * s}) for s in range(1, 5)]
    reward = rloo_charts(recs, "rloo-a")[1]
    assert [(ln.name, ln.key) for ln in reward.lines] == [("total = correctness",
                                                          "reward = rewards/correctness/mean")]
    assert reward.legend(reward.lines[0]) == "total = correctness · 1"
    # two rewards (or a weight other than 1): the total and each reward, each its own line
    two = [_rec(s, reward=0.75 * s, **{"rewards/correctness/mean": 0.5 * s, "rewards/think_format/mean": 0.25 * s})
           for s in range(1, 5)]
    names = [ln.name for ln in rloo_charts(two, "rloo-b")[1].lines]
    assert names == ["reward (weighted total)", "reward: correctness", "reward: think_format"]
    # an overlay: each run's reward chart follows the same rule under its own heading
    both = rloo_charts(two, "rloo-b", recs, "rloo-a")[1]
    assert [(ln.group, ln.name) for ln in both.lines][-1] == ("rloo-a (dashed)", "total = correctness")
    assert all(len(ln.name) <= chart_data.LEGEND_CHARS for ln in both.lines)  # every name fits whole in its legend row


def test_a_line_under_an_equal_later_line_is_drawn_wider():
    pytest.importorskip("plotly")
    from rloo_studio.ui.charts import WIDTH, widths

    bands = next(c for c in rloo_charts([{**_rec(s), "clip_ratio/low_mean": 0.0, "clip_ratio/high_mean": 0.0,
                                            "clip_ratio/region_mean": 0.0} for s in range(1, 5)], "r")
                 if c.title.startswith("clip ratio"))
    assert len(bands.lines) == 3
    w = widths(bands.lines)  # three equal lines: each shows on both sides of the ones drawn over it
    assert w[0] > w[1] > w[2] == WIDTH
    a = chart_data.Line("a", "k", [1, 2, 3], [1.0, 2.0, 3.0], "#000")
    b = chart_data.Line("b", "k", [1, 2, 3], [3.0, 2.0, 1.0], "#111")
    assert widths([a, b]) == [WIDTH, WIDTH]  # lines that only cross: both drawn as usual
    # wider than every equal line drawn over it, also when those lie under further lines themselves
    c, d = (chart_data.Line("c", "k", [1, 2, 3], [3.0, 2.0, 0.0], "#222"),
            chart_data.Line("d", "k", [1, 2, 3], [3.0, 2.0, 1.0], "#333"))
    w = widths([a, b, c, d])  # a: alone; b under c (the segment 1-2) and d (all of it); c under d (1-2)
    assert w[0] == WIDTH and w[1] > w[2] > w[3] == WIDTH
    e = chart_data.Line("e", "k", [1, 2, 3, 4], [0.5, 0.0, 0.5, 1.0], "#444")
    f = chart_data.Line("f", "k", [1, 2, 3, 4], [0.5, 1.0, 0.5, 0.0], "#555")
    assert widths([e, f]) == [WIDTH, WIDTH]  # equal at two steps but no common segment: nothing is hidden
    six = widths(bands.lines * 2)  # an overlay of two runs with the same three zero lines
    assert all(six[i] > six[i + 1] for i in range(5))


def test_overlays_name_the_runs_in_their_own_colours():
    a = [_rec(s) for s in range(1, 4)]
    b = [_rec(s, kl=0.02 * s) for s in range(1, 6)]
    charts = rloo_charts(b, "rloo-b", a, "rloo-a")
    kl = next(c for c in charts if c.title == "KL to the reference")
    assert [(ln.name, ln.dash) for ln in kl.lines] == [("rloo-b", "solid"), ("rloo-a", "dash")]
    colors = chart_data.run_colors(["rloo-b", "rloo-a"])
    assert [ln.color for ln in kl.lines] == [colors["rloo-b"], colors["rloo-a"]]
    reward = charts[1]
    assert [(ln.group, ln.name) for ln in reward.lines][1:3] == [("rloo-b (solid)", "reward: correctness"),
                                                                 ("rloo-a (dashed)", "reward (weighted total)")]
    over = chart_data.overlay_chart([("rloo-a", a), ("rloo-b", b)], "kl")
    assert [ln.name for ln in over.lines] == ["rloo-a", "rloo-b"] and over.title == "KL to the reference"
    assert over.lines[0].color == colors["rloo-a"]  # the same colour on the Runs tab as on the RLOO tab
    assert len(set(chart_data.run_colors([f"run-{i}" for i in range(10)]).values())) == 10  # shown runs never share
    # two ids whose own colours collide get the same colours whichever tab lists them first
    x, y = next((f"rloo-{i}", f"rloo-{j}") for i in range(20) for j in range(i + 1, 20)
                if chart_data.run_color(f"rloo-{i}") == chart_data.run_color(f"rloo-{j}"))
    assert (chart_data.run_colors([x, y]) == chart_data.run_colors([y, x])
            and len(set(chart_data.run_colors([x, y]).values())) == 2)


def test_smoothing_and_log_scale():
    recs = [_rec(s, kl=float(s)) for s in range(1, 5)] + [_rec(5, kl=0.0)]
    sm = chart_data.overlay_chart([("r", recs)], "kl", smoothing=0.9).lines[0].values
    assert sm[0] == pytest.approx(1.0) and sm[3] < 4.0
    lg = chart_data.overlay_chart([("r", recs)], "kl", log=True)
    assert lg.log and lg.lines[0].steps == [1, 2, 3, 4]  # a log axis drops the non-positive value


def test_reward_charts_train_and_held_out():
    recs = [{"step": 0, "eval_loss": 0.7}, {"step": 1, "loss": 0.69}, {"step": 2, "loss": 0.6, "eval_loss": 0.5}]
    loss = reward_charts(recs)[0]
    assert [(ln.name, ln.steps) for ln in loss.lines] == [("training batches", [1, 2]), ("held-out pairs", [0, 2])]


def test_figure_has_a_legend_entry_hover_and_integer_steps_per_line():
    pytest.importorskip("plotly")
    from rloo_studio.ui.charts import figure

    c = rloo_charts([_rec(s) for s in range(1, 30)], "rloo-a")[1]
    fig = json.loads(figure(c).to_json())
    assert [t["name"] for t in fig["data"]] == [c.legend(ln) for ln in c.lines]
    assert "TRL key: rewards/correctness/mean" in fig["data"][1]["hovertemplate"]
    assert "step %{x}" in fig["data"][0]["hovertemplate"]
    assert fig["layout"]["xaxis"]["tickformat"] == "d" and fig["layout"]["xaxis"]["dtick"] == 5
    assert fig["layout"]["showlegend"] is True and fig["layout"]["title"]["text"] == f"<b>{c.title}</b>"
    assert fig["config"]["displayModeBar"] is False  # Plotly's toolbar would sit on the title
    lo, hi = fig["layout"]["xaxis"]["range"]
    assert lo < 0 and hi > 29  # points at step 0 and at the last step are drawn whole, not cut by the edge


def test_a_single_point_is_drawn_whole_and_larger():
    pytest.importorskip("plotly")
    from rloo_studio.ui.charts import figure

    loss = reward_charts([{"step": 0, "eval_loss": 0.7}, {"step": 1, "loss": 0.69}, {"step": 2, "loss": 0.6}])[0]
    fig = json.loads(figure(loss).to_json())
    held = next(t for t in fig["data"] if t["name"].startswith("held-out pairs"))
    assert held["x"] == [0] and "markers" in held["mode"] and held["marker"]["size"] >= 9
    assert held["cliponaxis"] is False
    lo, hi = fig["layout"]["xaxis"]["range"]
    assert lo <= -0.3 and hi >= 2.3  # the point at step 0 sits inside the plot, with room for its marker


def test_completion_groups_keep_a_prompts_completions_together():
    samples = []
    for step in (1, 2):
        for prompt in ("Add 1 and 2.", "Add 3 and 4."):
            for adv, total in ((-0.5, 0.0), (0.5, 1.0)):
                samples.append({"step": step, "prompt": prompt, "completion": "<think>\n1+2=3\n</think>\n\n3",
                                "rewards": {"correctness": total}, "total": total, "advantage": adv,
                                "length": 9, "truncated": False})
    cols, rows = completion_groups(samples)
    assert cols[:6] == ["group", "step", "prompt", "#", "thinking", "answer"] and "advantage" in cols
    assert [r[1] for r in rows] == [2, 2, 2, 2, 1, 1, 1, 1]  # newest step first
    assert [r[0] for r in rows[:4]] == ["1 · k=2", "1 · k=2", "2 · k=2", "2 · k=2"]
    assert rows[0][cols.index("advantage")] == 0.5 and rows[1][cols.index("advantage")] == -0.5
    assert rows[0][4] == "1+2=3" and rows[0][5] == "3"
    _, as_made = completion_groups(samples, "as generated")
    assert as_made[0][cols.index("advantage")] == -0.5
    cut = {"step": 3, "prompt": "Add 5 and 6.", "completion": "<think>\n5+6=", "rewards": {"correctness": 0.0},
           "total": 0.0, "advantage": 0.0, "length": 64, "truncated": True}
    row = completion_groups(samples + [cut])[1][0]  # newest first
    assert row[4:6] == ["5+6=", "(cut before </think>)"] and row[cols.index("cut")] == "yes"


def test_inspect_pair_shares_one_y_scale_and_colours_the_answer():
    from rloo_studio.inspect.scoring import Scored, StepScore
    from rloo_studio.ui import inspect_render as I

    text = "<think>\n1+2=3\n</think>\n\nThe answer is 3."
    a = Scored("p", text, 0.9, 0.8, 0.2, [StepScore("1+2=3", 8, 13, 0.2, 0.1, 3)], ["<think>", "1", "+", "EOS"],
               [0.0, 0.1, 0.2, 0.9], True, False)
    b = Scored("p", text, -0.4, 0.1, 0.3, [StepScore("1+2=3", 8, 13, 0.3, 0.3, 3)], ["<think>", "1", "+", "EOS"],
               [0.0, -0.1, 0.3, -0.4], True, False)
    span = I.shared_span(a, b)
    assert span == (-0.4, 0.9)
    left, right = I.plot_svg(a, span=span), I.plot_svg(b, span=span)
    ticks = lambda svg: [t for t in svg.split("text-anchor='end'>")[1:6]]  # noqa: E731
    assert ticks(left) == ticks(right)  # the same y labels on both sides
    assert "token 1: &#x27;1&#x27;" in left or "token 1: '1'" in left  # the token's text on hover
    html = I.steps_html(a)
    assert "class='rs-answer'" in html and "The answer is 3." in html.split("rs-answer")[1]
    assert "what the answer adds" not in html  # the meaning line belongs under the numbers
    assert "answer alone" in I.MEANING and "after thinking" in I.MEANING


def test_every_rule_reward_as_the_only_reward_is_named_whole_in_the_legend():
    from rloo_studio.rloo.config import RULE_REWARDS

    for r in (*RULE_REWARDS, "reward_model"):
        recs = [{"step": k, "loss": 0.0, "reward": 0.5 * k, f"rewards/{r}/mean": 0.5 * k} for k in (1, 2, 3)]
        (line,) = next(c for c in rloo_charts(recs) if c.title.startswith("reward")).lines
        assert line.name == f"total = {r}" and len(line.name) <= chart_data.LEGEND_CHARS, line.name
