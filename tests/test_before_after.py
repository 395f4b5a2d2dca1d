"""What a run learned, said in figures and words (eval.json, runs show, the RLOO tab's before/after panel); the
reward-model preset's 'latest' reward run resolved at launch; the reward model's normalization floor."""
import json

import pytest

from rloo_studio.core.errors import ConfigError
from rloo_studio.rloo.config import LATEST
from rloo_studio.rloo.evaluate import learned, reward_trend, split_figures
from rloo_studio.rloo.rewards import shaped
from rloo_studio.runs.jobs import KINDS

BEFORE = {"n": 200, "accuracy": 0.48, "format_rate": 1.0, "thinking_rate": 0.55, "n_reasoning": 110,
          "accuracy_reasoning": 0.873, "accuracy_not_reasoning": 0.0}


def _after(**kw):
    return {**BEFORE, **kw}


def test_figures_split_by_whether_the_answer_reasons():
    g = ([{"formatted": True, "correct": True, "thinking": True}] * 6 + [{"formatted": True, "correct": False,
                                                                           "thinking": True}] * 2
         + [{"formatted": True, "correct": False, "thinking": False}] * 2)
    m = split_figures(g)
    assert m == {"n": 10, "format_rate": 1.0, "accuracy": 0.6, "thinking_rate": 0.8, "n_reasoning": 8,
                 "accuracy_reasoning": 0.75, "accuracy_not_reasoning": 0.0}
    assert split_figures(g[:8])["accuracy_not_reasoning"] is None  # no answer without reasoning: no rate


def test_the_words_say_when_reasoning_was_learned_and_the_arithmetic_got_worse():
    trend = {"key": "rewards/reward_model/raw_mean", "first": -1.2, "last": 2.5, "steps": 40}
    worse = {"before": BEFORE, "after": _after(accuracy=0.675, thinking_rate=0.98, accuracy_reasoning=0.69),
             "reward": trend}
    assert ("the policy learned to reason (55% → 98% of its answers), but its arithmetic got worse: 87% → 69% "
            "among reasoning answers") in learned(worse).lower()
    assert "+19.5 points" in learned(worse)
    kept = {"before": BEFORE, "after": _after(accuracy=0.8, thinking_rate=0.93, accuracy_reasoning=0.86),
            "reward": trend}
    assert "got worse" not in learned(kept) and "learned to reason: 55% → 93%" in learned(kept)
    # the reward rose, nothing new was reasoned, and the arithmetic fell: said too
    fell = {"before": BEFORE, "after": _after(accuracy=0.4, accuracy_reasoning=0.72), "reward": trend}
    assert "The reward rose, but its arithmetic got worse: 87% → 72%" in learned(fell)
    assert learned({"before": BEFORE}) == ""


def test_the_reward_trend_reads_the_reward_models_raw_score_when_there_is_one():
    recs = [{"step": s, "reward": 0.0, "rewards/reward_model/raw_mean": s / 10} for s in range(1, 21)] + [{"x": 1}]
    t = reward_trend(recs)
    assert t["key"] == "rewards/reward_model/raw_mean" and t["first"] == pytest.approx(0.3)
    assert t["last"] == pytest.approx(1.8) and t["steps"] == 20
    assert reward_trend([{"step": 1, "reward": 0.5}, {"step": 2, "reward": 0.9}])["key"] == "reward"
    assert reward_trend([{"step": 1, "reward": 0.5}]) is None


def test_the_panel_and_runs_show_report_the_split(tmp_path, workspace, capsys):
    from rloo_studio.cli import main
    from rloo_studio.rloo.evaluate import eval_rows, figures_line
    from rloo_studio.ui.rloo_render import eval_line

    ev = {"before": BEFORE, "after": _after(accuracy=0.675, thinking_rate=0.98, accuracy_reasoning=0.69),
          "reward": {"key": "reward", "first": 0.1, "last": 0.9, "steps": 40}}
    headers, rows = eval_rows(ev)
    assert headers == ["held-out, n=200", "before training", "after", "change"]
    assert [r[0] for r in rows] == ["accuracy", "reasons", "right when it reasons", "right when it does not"]
    assert [r[1] for r in rows] == ["48.0%", "55.0%", "87.3%", "0.0%"]
    assert [r[3] for r in rows[:3]] == ["+19.5 points", "+43.0 points", "-18.3 points"]
    assert "right 69.0% of the time when it reasons" in figures_line(ev["after"])
    rid = "rloo-shown"
    workspace.upsert_run(rid, kind="rloo", name=rid, status="completed")
    (workspace.run_dir(rid)).mkdir(parents=True, exist_ok=True)
    (workspace.run_dir(rid) / "eval.json").write_text(json.dumps(ev))
    panel = eval_line(workspace, rid)
    assert "87% → 69% among reasoning answers" in panel and "<td>+19.5 points</td>" in panel
    capsys.readouterr()
    assert main(["runs", "show", rid, "--workspace", str(workspace.root)]) == 0
    shown = json.loads(capsys.readouterr().out)["before_after"]
    assert shown["after"]["accuracy_reasoning"] == 0.69 and "arithmetic got worse" in shown["learned"]


def test_the_std_floor_keeps_noise_small_and_leaves_real_differences_alone():
    logged = {}
    noise = lambda **kw: [0.01, -0.02, 0.03, 0.0, -0.01, 0.02, 0.0, -0.03]  # noqa: E731  scores alike
    plain = shaped(noise, normalize=True, std_floor=0.0)()
    floored = shaped(noise, normalize=True, std_floor=1.0)(log_metric=lambda k, v: logged.__setitem__(k, v))
    assert max(abs(v) for v in plain) > 1.0  # the noise blown up to full-size rewards
    assert max(abs(v) for v in floored) < 0.05  # kept as small as it is
    assert set(logged) == {"rewards/<lambda>/raw_mean", "rewards/<lambda>/raw_std"}
    spread = lambda **kw: [-4.0, 3.0, -3.5, 4.2, 3.8, -4.1, 3.9, -3.6]  # noqa: E731  reasons or not: far apart
    assert shaped(spread, normalize=True, std_floor=1.0)() == pytest.approx(shaped(spread, normalize=True)(), abs=1e-6)


def test_the_reward_model_preset_takes_the_newest_reward_run_at_launch(workspace):
    from rloo_studio.runs import lifecycle

    cfg = KINDS["rloo"].preset_config("demo-cpu-reward-model")
    assert (cfg.rewards, cfg.reward_weights, cfg.reward_model_run, cfg.beta, cfg.max_steps) == (
        ["reward_model"], [1.0], LATEST, 0.1, 40)
    with pytest.raises(ConfigError, match="no reward run with a saved adapter yet"):
        lifecycle.new_run(workspace, "rloo", KINDS["rloo"].preset_config("demo-cpu-reward-model"))
    for rid in ("reward-older", "reward-newer"):
        d = workspace.run_dir(rid) / "adapter"
        d.mkdir(parents=True)
        (d / "adapter_config.json").write_text("{}")
        workspace.upsert_run(rid, kind="reward", name=rid, status="completed")
    workspace.upsert_run("reward-no-adapter", kind="reward", name="x", status="failed")  # newest, no adapter
    assert lifecycle.new_run(workspace, "rloo",
                             KINDS["rloo"].preset_config("demo-cpu-reward-model")).reward_model_run == "reward-newer"
    named = KINDS["rloo"].preset_config("demo-cpu-reward-model")
    named.reward_model_run = "reward-older"  # a run named by id stays that run
    assert lifecycle.new_run(workspace, "rloo", named).reward_model_run == "reward-older"


def test_the_status_line_shows_a_reward_models_raw_score():
    """A run rewarded by a reward model alone logs a batch-standardised reward near 0 at every step; the status line
    shows the reward model's raw score beside it, which is what rises."""
    from rloo_studio.ui.rloo_render import figures

    recs = [{"step": 40, "loss": 0.0, "reward": 0.0, "rewards/reward_model/raw_mean": 1.963, "kl": 0.0177}]
    assert figures(recs) == "last: loss 0, reward 0, reward model's raw score 1.96, kl 0.0177"
    assert figures([{"step": 1, "loss": 0.01, "reward": 0.3, "kl": 0.003}]) == "last: loss 0.01, reward 0.3, kl 0.003"


def test_demo_answers_are_checked_step_by_step_and_the_slips_are_reported():
    from rloo_studio.core.demo_task import step_labels
    from rloo_studio.rloo.evaluate import eval_rows, figures_line, grade

    prompt, right = "Add 123 and 154.", "<think>\n3+4+0=7\n\n2+5+0=7\n\n1+1+0=2\n</think>\n\nThe answer is 277."
    slip = "<think>\n3+4+0=7\n\n2+5+0=8\n\n1+1+0=2\n</think>\n\nThe answer is 287."
    assert step_labels(prompt, right) == [True, True, True]
    assert step_labels(prompt, slip) == [True, False, False]  # once wrong, every later step is wrong
    assert step_labels(prompt, right + "\n\n4+4=8") == [True, True, True]  # steps are inside <think> only
    assert step_labels("Name a colour.", right) is None and step_labels(prompt, right, answer="278") is None
    grades = [grade(r, "277", True, prompt=prompt) for r in (right, right, slip, "The answer is 277.")]
    assert [g.get("wrong_steps") for g in grades] == [0, 0, 2, None]  # no reasoning: no steps to check
    m = split_figures(grades)
    assert m["slip_rate"] == pytest.approx(1 / 3) and m["wrong_steps_per_answer"] == pytest.approx(2 / 3)
    assert "a wrong step in 33.3% of its reasoning answers (0.67 per answer)" in figures_line(m)
    assert "slip_rate" not in split_figures([grade(right, "277", True)])  # no prompt: nothing checked, nothing said

    before = {**BEFORE, "slip_rate": 0.468, "wrong_steps_per_answer": 0.97}
    after = {**BEFORE, "accuracy": 0.59, "accuracy_reasoning": 0.66, "slip_rate": 0.338,
             "wrong_steps_per_answer": 0.61}
    headers, rows = eval_rows({"before": before, "after": after})
    assert [r[0] for r in rows[-2:]] == ["reasoning answers with a wrong step", "wrong steps per answer"]
    assert rows[-2][1:] == ["46.8%", "33.8%", "-13.0 points"] and rows[-1][1:] == ["0.97", "0.61", "-0.36"]
    same = eval_rows({"before": before, "after": {**before, "wrong_steps_per_answer": 0.968}})[1]
    assert same[-1][3] == "+0.00" and same[0][3] == "+0.0 points"  # no "-0.00" for a change too small to show
    assert ("Its reasoning slips less: a wrong step in 47% → 34% of its reasoning answers (0.97 → 0.61 wrong steps "
            "per answer).") in learned({"before": before, "after": after})
