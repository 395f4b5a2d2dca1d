"""The Runs tab's core (no gradio): each run's headline figure (runs.headline), the runs it used and the runs that
used it (runs.links), and the curves its overlay offers, one chart per kind and metric (runs.overlays), on run
folders written as their jobs leave them (tests/runs_tab_fixture.py)."""
import json

import pytest
from runs_tab_fixture import TRAINER_END, runs_workspace

from rloo_studio.runs import catalog, headline, links, overlays
from rloo_studio.runs.jobs import KINDS

BOOKKEEPING = ("total_flos", "train_runtime", "train_samples_per_second", "train_steps_per_second", "train_loss",
               "epoch", "eval_runtime", "eval_samples_per_second", "eval_steps_per_second", "num_tokens", "time")


@pytest.fixture
def runs(empty_workspace):
    return empty_workspace, runs_workspace(empty_workspace)


def test_an_rloo_run_links_to_the_run_that_rewarded_it_and_back(runs):
    ws, ids = runs
    every = links.run_links(ws)
    assert every[ids["rloo_prm"]].uses == [("process reward model", ids["prm"])]
    assert every[ids["rloo_rm"]].uses == [("reward model", ids["reward"])]
    assert every[ids["prm"]].used_by == [ids["rloo_prm"]] and every[ids["reward"]].used_by == [ids["rloo_rm"]]
    known = set(every)
    assert links.links_text(every[ids["rloo_prm"]], known) == f"rewarded by {ids['prm']} (process reward model)"
    assert links.links_text(every[ids["prm"]], known) == f"rewarded {ids['rloo_prm']}"
    catalog.delete_run(ws, ids["prm"])  # the RLOO run still says what rewarded it, and that it is gone
    after = links.run_links(ws)
    assert links.links_text(after[ids["rloo_prm"]], set(after)).endswith("(process reward model, deleted)")


def test_a_scorer_key_whose_reward_is_not_used_is_no_link():
    assert links.used({"rewards": ["correctness"], "reward_model_run": "reward-1"}) == []
    assert links.used({"rewards": ["correctness", "reward_model"], "reward_model_run": "reward-1",
                       "process_reward_run": ""}) == [("reward model", "reward-1")]
    assert links.used({}) == []


def test_each_row_leads_with_the_figure_that_says_whether_the_run_worked(runs):
    ws, ids = runs
    rows = {s["id"]: headline.headline(ws, s) for s in catalog.summaries(ws)}
    assert rows[ids["rloo_prm"]] == "held-out accuracy 50.5% → 90.0% (+39.5 points)"
    assert rows[ids["reward"]] == "held-out pair accuracy 87.5%"
    assert rows[ids["prm"]] == "held-out step accuracy 84.0% · first wrong step found 62.0%"
    assert rows[ids["rloo_rm"]] == "reward 0.8 · KL 0.02"  # no eval.json: its training figures, no loss
    assert headline.held_out({"before": {"accuracy": 0.385}}) == "held-out accuracy 38.5% before training"
    assert headline.held_out({"before": {"accuracy": 0.5}, "after": {"accuracy": 0.4999}}).endswith("(+0.0 points)")


def test_the_eval_file_is_the_one_the_rloo_job_writes():
    from rloo_studio.rloo.evaluate import EVAL_FILE

    assert headline.EVAL_FILE == EVAL_FILE


def test_the_picker_offers_the_job_tabs_curves_in_their_words_and_no_bookkeeping(runs):
    ws, ids = runs
    loaded = overlays.load(ws, list(ids.values()))
    offered = overlays.curves(loaded)
    assert not {c.key for c in offered} & set(BOOKKEEPING)
    assert all(k in {c.key for c in offered} for k in ("loss", "eval_accuracy", "eval_step_accuracy", "reward", "kl"))
    # every curve is named by its kind's chart, as the job tab titles it
    for kind in ("reward", "rloo", "prm"):
        recs = next(r for _, k, r in loaded if k == kind)
        titles = {c.title for c in KINDS[kind].chart_fn()(recs)}
        mine = [c for c in offered if c.kind == kind]
        assert mine and all(c.label.split(overlays.SEP)[0] in titles for c in mine), kind
        assert all(c.name.startswith(KINDS[kind].title + overlays.SEP) for c in mine)
    names = {c.value: c.name for c in offered}
    assert names["rloo:loss"] == "RLOO › loss (RLOO)" and names["rloo:kl"] == "RLOO › KL to the reference"
    assert names["prm:eval_step_accuracy"] == "process-reward › held-out step accuracy › all steps"
    assert names["reward:eval_accuracy"] == "reward-model › accuracy: chosen scored higher › held-out pairs"
    assert len(set(names.values())) == len(names)


def test_two_kinds_never_share_an_axis(runs):
    ws, ids = runs
    loaded = overlays.load(ws, [ids["prm"], ids["rloo_prm"]])
    picks = overlays.picks(overlays.curves(loaded), None)
    assert picks == ["rloo:reward", "prm:eval_step_accuracy"]  # each kind's headline curve, without asking
    losses = overlays.charts(loaded, ["prm:loss", "rloo:loss"])
    assert [c.title for c in losses] == ["process-reward › loss (lower is better) › training batches",
                                         "RLOO › loss (RLOO)"]
    assert [[ln.name for ln in c.lines] for c in losses] == [[ids["prm"]], [ids["rloo_prm"]]]
    assert max(losses[0].lines[0].values) > 0.5 and max(losses[1].lines[0].values) < 1e-7
    assert "Near zero by design" in losses[1].note  # the RLOO tab's word on its loss comes along
    assert max(losses[0].lines[0].steps) == 2000 and max(losses[1].lines[0].steps) == 160


def test_runs_of_one_kind_share_a_chart_and_picks_are_kept(runs):
    ws, ids = runs
    loaded = overlays.load(ws, [ids["rloo_prm"], ids["rloo_rm"], ids["reward"]])
    offered = overlays.curves(loaded)
    kept = overlays.picks(offered, ["rloo:kl", "prm:loss"])  # a pick whose run left is dropped
    assert kept == ["rloo:kl", "reward:eval_accuracy"]
    kl = overlays.charts(loaded, kept)[0]
    assert sorted(ln.name for ln in kl.lines) == sorted([ids["rloo_prm"], ids["rloo_rm"]])
    assert len(overlays.picks(offered, [c.value for c in offered])) == overlays.MAX_CHARTS


def test_a_run_with_nothing_to_chart_is_named(empty_workspace):
    from rloo_studio.runs.runner import prepare_run

    ctx = prepare_run(empty_workspace, "generate", {"n": 2})
    ctx.metric({"step": 1, **TRAINER_END})
    loaded = overlays.load(empty_workspace, [ctx.run_id])
    assert overlays.curves(loaded) == [] and overlays.without_curves(loaded) == [ctx.run_id]
    assert overlays.charts(loaded, overlays.picks([], None)) == []


def test_a_broken_config_leaves_the_row_unlinked(runs):
    ws, ids = runs
    (ws.run_dir(ids["rloo_rm"]) / "config.yaml").write_text("rewards: [reward_model\n")
    (ws.run_dir(ids["rloo_prm"]) / headline.EVAL_FILE).write_text(json.dumps(["not", "a", "dict"]))
    every = links.run_links(ws)
    assert every[ids["rloo_rm"]].uses == [] and every[ids["reward"]].used_by == []
    row = next(s for s in catalog.summaries(ws) if s["id"] == ids["rloo_prm"])
    assert headline.headline(ws, row) == "reward 0.8 · KL 0.02"
