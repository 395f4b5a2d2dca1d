"""The run panel of the Reward and RLOO tabs (ui/run_panel.py), driven through the tabs' ticks without a browser:
what a tick sends is what changed (a chart keeps its hover, an unfolded traceback stays open, the runs list and
the completions table are not re-sent), and everything is sent again when the tab is selected (fresh)."""
import json
import threading
import time

import gradio as gr
import pytest

from rloo_studio.core.errors import ConfigError
from rloo_studio.runs import lifecycle
from rloo_studio.runs.runner import JobRunner, write_status
from rloo_studio.ui import reward_tab, rloo_tab
from rloo_studio.ui.job_section import JobSection


class FakeStudio:
    def __init__(self, ws):
        self.ws, self.runner = ws, JobRunner(ws)


def rloo_steps(cfg, ctx):
    for step in range(1, cfg["steps"] + 1):
        ctx.metric({"step": step, "loss": 0.01, "reward": 0.1 * step, "kl": 0.001 * step})
        with open(ctx.dir / "samples.jsonl", "a") as f:
            for i in range(2):
                f.write(json.dumps({"step": step, "prompt": "1+1?", "completion": f"<think>1+1</think>{i}",
                                    "response": f"<think>1+1</think>{i}", "rewards": {"correct": float(i)},
                                    "total": float(i), "advantage": i - 0.5, "length": 5, "truncated": False}) + "\n")
        ctx.set_progress(step, cfg["steps"])


def fails(cfg, ctx):
    raise ConfigError("learning_rate must be positive, got -1.")


@pytest.fixture
def rloo(empty_workspace):
    studio = FakeStudio(empty_workspace)
    with gr.Blocks():
        section = JobSection.start(studio, "rloo")
        panel = section.run_panel(rloo_tab.EMPTY)
        panel.add_charts([(t, t) for t, _ in rloo_tab.PLOTS], per_row=3)
        section.runs, section.config, section.cli = gr.Dataframe(), gr.Code(), gr.Code()
        live = rloo_tab.Live(section, gr.HTML(), gr.Dataframe(), gr.Dropdown())
    return studio, live


def tick(live, memo, fresh=False, **shown):
    out = rloo_tab.on_tick(live, rloo_tab.Shown(memo=memo, **shown), fresh=fresh)
    return out, out[live.panel.memo]


def test_rloo_tick_sends_what_changed(rloo):
    studio, live = rloo
    panel = live.panel
    out, memo = tick(live, {})
    assert "No RLOO run yet" in out[panel.status] and out[panel.failure] == ""
    rid = studio.runner.submit("rloo", {"steps": 3}, rloo_steps)
    assert studio.runner.wait(rid, 30) == "completed"

    out, memo = tick(live, memo)
    assert rid in out[panel.status] and "completed" in out[panel.status] and "step 3" in out[panel.status]
    assert "last: loss 0.01, reward 0.3, kl 0.003" in out[panel.status]
    assert all(p in out for p in panel.plots) and live.table in out and live.warnings in out
    assert [len(t.x) for t in out[panel.plots[1]].data][0] == 3  # the reward chart's total line: 3 steps
    assert out[panel.failure] == ""

    out, memo = tick(live, memo)  # nothing changed: only the status line (the run box only on the tab's selection)
    assert set(out) == {panel.status, panel.memo}

    with open(studio.ws.run_dir(rid) / "metrics.jsonl", "a") as f:  # one more step logged
        f.write(json.dumps({"step": 4, "loss": 0.01, "reward": 0.5, "kl": 0.004}) + "\n")
    out, memo = tick(live, memo)
    assert all(p in out for p in panel.plots) and live.table not in out  # no new completions
    assert [len(t.x) for t in out[panel.plots[1]].data][0] == 4

    out, memo = tick(live, memo, order="reward (best first)")  # another order: the table, not the charts
    assert live.table in out and not any(p in out for p in panel.plots)
    out, memo = tick(live, memo, order="reward (best first)", smoothing=0.5)
    assert all(p in out for p in panel.plots) and live.table not in out

    out, _ = tick(live, memo, fresh=True, order="reward (best first)", smoothing=0.5)  # the tab was selected
    assert all(p in out for p in panel.plots) and live.table in out and panel.failure not in out
    assert out[live.run] == rid  # the empty run box (a page just opened) now names the run shown
    out, _ = tick(live, memo, fresh=True, run=rid)
    assert live.run not in out  # a run in the box stays as it is


def test_stop_greys_out_once_the_run_has_ended_though_a_tick_read_its_end_a_moment_early(rloo):
    """A run's status.json says "stopped" a moment before its runner lets it go (the end is written to disk first).
    A tick in that moment found Stop still pressable, and the page kept it so for good, the status being unchanged
    afterwards (seen in Chromium on a loaded host, 1 stop in 15). Stop answers from the status every reader sees:
    greyed out from that moment, and so it stays once the run is let go."""
    studio, live = rloo
    with gr.Blocks():
        live.panel.add_controls(gr.Button(), gr.Button())
    stop, resume = live.panel.controls
    page = {}  # the buttons as the page holds them: the last update each tick sent

    def tick_page(memo):
        out, memo = tick(live, memo)
        page.update({button: out[button]["interactive"] for button in (stop, resume) if button in out})
        return out, memo

    go = threading.Event()
    rid = studio.runner.submit("rloo", {}, lambda cfg, ctx: go.wait(30) and None)
    out, memo = tick_page({})
    assert page == {stop: True, resume: False}
    # the runner's last write, before it lets the run go: a tick now reads the status file
    write_status(studio.ws.run_dir(rid), {**studio.runner.status(rid), "status": "stopped"})
    out, memo = tick_page(memo)
    assert "stopped" in out[live.panel.status]
    assert page[stop] is False and not lifecycle.can_stop(studio.runner, rid)  # the Python API's Run.stop agrees
    studio.runner.stop(rid)
    go.set()
    end = time.time() + 30
    while not studio.runner.contexts[rid].final and time.time() < end:  # the runner let the run go
        time.sleep(0.05)
    assert studio.runner.status(rid)["status"] == "stopped"
    out, memo = tick_page(memo)
    assert page == {stop: False, resume: False}  # nothing left to stop, and no checkpoint to resume from


def test_a_typed_run_that_is_not_there_is_said_and_the_failure_box_stays_put(rloo):
    studio, live = rloo
    panel = live.panel
    out, memo = tick(live, {}, run="rloo-nope")
    assert "rloo-nope" in out[panel.status] and "bad" in out[panel.status]

    rid = studio.runner.submit("rloo", {}, fails)
    assert studio.runner.wait(rid, 30) == "failed"
    out, memo = tick(live, memo)
    assert "learning_rate must be positive" in out[panel.failure] and "Traceback" in out[panel.failure]
    assert "failed" in out[panel.status] and "learning_rate" not in out[panel.status]  # said once, in its box
    out, memo = tick(live, memo)
    assert panel.failure not in out  # a traceback the user unfolded stays open
    out, memo = tick(live, memo, fresh=True)
    assert panel.failure not in out


def test_reward_tick_sends_the_runs_list_only_when_it_changed(empty_workspace):
    studio = FakeStudio(empty_workspace)
    with gr.Blocks():
        section = JobSection.start(studio, "reward")
        panel = section.run_panel(reward_tab.EMPTY)
        panel.add_charts([(t, t) for t in reward_tab.PLOTS], per_row=2)
        section.runs, section.config, section.cli = gr.Dataframe(), gr.Code(), gr.Code()
        live = reward_tab.Live(section, gr.Textbox())

    def rtick(memo, fresh=False, watched=None):
        out = reward_tab.on_tick(live, reward_tab.Shown(watched=watched, memo=memo), fresh=fresh)
        return out, out[panel.memo]

    out, memo = rtick({})
    assert "No reward-model run yet" in out[panel.status] and out[section.runs] == []
    out, memo = rtick(memo)
    assert section.runs not in out
    rid = studio.runner.submit("reward", {"steps": 2}, lambda cfg, ctx: [ctx.metric({"step": s, "loss": 1.0 / s})
                                                                         for s in (1, 2)] and None)
    assert studio.runner.wait(rid, 30) == "completed"
    out, memo = rtick(memo)
    assert [row[:2] for row in out[section.runs]] == [[rid, "completed"]]
    assert all(p in out for p in panel.plots) and section.config in out and "completed" in out[live.log]
    out, memo = rtick(memo)
    assert set(out) == {panel.status, panel.memo}
    out, memo = rtick(memo, watched="reward-deleted-meanwhile")  # the newest again
    assert rid in out[panel.status]
    out, memo = rtick(memo, fresh=True)
    assert section.runs in out and all(p in out for p in panel.plots)


def test_the_end_of_a_run_folds_its_before_after_to_a_headline_under_the_charts(empty_workspace):
    """The run's own held-out before / after: one line in the status (each figure at the step it was measured at), the
    table folded under the charts in an accordion titled with it, and the closing message without the figures the
    table repeats; a stopped run's figures say they are step 0's."""
    import json

    from rloo_shown_run import finished_run

    studio = FakeStudio(empty_workspace)
    with gr.Blocks():
        section = JobSection.start(studio, "rloo")
        panel = section.run_panel(rloo_tab.EMPTY)
        live = rloo_tab.Live(section, gr.HTML(), gr.Dataframe(), gr.Dropdown(), gr.Accordion("x"), gr.HTML())
    rid = finished_run(studio.ws)
    d = studio.ws.run_dir(rid)
    ev = json.loads((d / "eval.json").read_text())
    ev["after"]["summary"] = "accuracy 60.0% · reasons 100.0%; format 99.0% on 200 held-out prompts"
    (d / "eval.json").write_text(json.dumps(ev))
    status = json.loads((d / "status.json").read_text())
    status["message"] = f"finished at step 12/12; adapter saved; {ev['after']['summary']}"
    (d / "status.json").write_text(json.dumps(status))

    out, memo = tick(live, {})
    headline = "Held-out accuracy 38.5% → 60.0% (+21.5 points) at step 12"
    assert headline in out[panel.status] and "finished at step 12/12; adapter saved · <span" in out[panel.status]
    assert "format 99.0%" not in out[panel.status]  # said once, in the table
    assert out[live.held].label.endswith(headline) and out[live.held].visible is True
    assert "<td>+21.5 points</td>" in out[live.held_table] and out[panel.shown] == rid
    out, memo = tick(live, memo)
    assert live.held not in out and panel.shown not in out  # unchanged: not sent again (a folded table stays so)

    (d / "eval.json").write_text(json.dumps({"before": ev["before"]}))  # stopped: measured before training only
    status["status"], status["message"] = "stopped", "stopped at step 7/12; adapter saved"
    (d / "status.json").write_text(json.dumps(status))
    out, memo = tick(live, memo)
    assert "Held-out accuracy 38.5% at step 0 (before training); not measured at the stop" in out[panel.status]
