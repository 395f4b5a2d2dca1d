"""Showing when a reward model is blind: held-out accuracy per kind of pair, and the RLOO warning when the
reward-model reward does not move with a rule reward on the live completions."""
import json
import random

from rloo_studio.cli import main
from rloo_studio.core.model_options import LoraSpec
from rloo_studio.core.thinking import pair_kind
from rloo_studio.reward import blind, runs_list
from rloo_studio.reward import breakdown as reward_breakdown
from rloo_studio.reward.config import RewardJobConfig
from rloo_studio.reward.job import held_out_rows, train_reward
from rloo_studio.rloo import health
from rloo_studio.runs.runner import JobRunner, read_metrics

THINK = "<think>\n7+5+0=12\n\n3+4+1=8\n</think>\n\nThe answer is {a}."
PLAIN = "The answer is {a}."


def _samples(rm, seed=0, steps=3, prompts=8, k=4):
    """samples.jsonl rows: 70% of completions think, thinkers are right half the time, others never."""
    rng = random.Random(seed)
    rows = []
    for step in range(1, steps + 1):
        for p in range(prompts):
            for _ in range(k):
                thinks = rng.random() < 0.7
                correct = thinks and rng.random() < 0.5
                text = (THINK if thinks else PLAIN).format(a=812 if correct else 811)
                rows.append({"step": step, "prompt": f"What is {p}?", "completion": text, "response": text,
                             "rewards": {"reward_model": rm(thinks, correct, rng), "correctness": float(correct),
                                         "think_format": 1.0 if thinks else -1.0}})
    return rows


def test_pair_kind_reads_the_think_blocks():
    assert pair_kind(THINK.format(a=1), PLAIN.format(a=2)) == "only chosen reasons"
    assert pair_kind("12</think>\n\nThe answer is 3.", THINK) == "both reason"  # only the closing tag
    assert pair_kind(PLAIN, THINK) == "only rejected reasons"
    assert pair_kind(PLAIN, "3") == "neither reasons"


def test_pair_kind_reads_a_response_as_the_qwen3_thinking_template_leaves_it(qwen3_tokenizer):
    """Qwen3-Thinking's generation prompt opens <think>: a response without tags, or one cut before </think>,
    is reasoning; the held-out breakdown and the stratified split read pairs the same way."""
    from rloo_studio.core.thinking import continuation, template_info
    from rloo_studio.reward.job import pair_rows, split_rows

    start = template_info(qwen3_tokenizer).start
    assert start == "think"
    tagless = "7+5+0=12\n\n3+4+1=8\n</think>\n\nThe answer is 812."  # as Qwen3-Thinking writes it
    cut = "7+5+0=12\n\n3+4+1="  # stopped at max length inside the reasoning: no tag at all
    cut_opened = "<think>\n7+5+0=12\n\n3+4"  # the same, with the opening tag written out
    for text in (tagless, cut, cut_opened, THINK.format(a=1)):
        assert blind.reasons(text, start), text
    assert not blind.reasons(cut) and blind.reasons(cut_opened)  # without the template: a cut tagless text is answer
    assert pair_kind(cut, tagless, start) == "both reason"
    assert pair_kind(cut, tagless) == "only rejected reasons"
    # the job's rows drop the <think> the template opened; the split still counts both sides as reasoning
    rows = pair_rows(qwen3_tokenizer, [{"prompt": "Add.", "chosen": THINK.format(a=k), "rejected": cut_opened,
                                        "pair_id": k} for k in range(10)])
    assert (rows[0]["rejected"] == continuation(template_info(qwen3_tokenizer), cut_opened)
            and "<think>" not in rows[0]["rejected"])
    assert {pair_kind(r["chosen"], r["rejected"], start) for r in rows} == {"both reason"}
    held, train = split_rows(rows, 0.3, 0, start=start)
    assert len(held) == 3 and len(train) == 7


def test_blind_warning_fires_when_the_reward_model_sees_only_the_format():
    format_only = _samples(lambda thinks, correct, rng: (1.0 if thinks else -1.0) + rng.gauss(0, 0.1))
    warns = blind.blind_warnings(format_only)
    assert len(warns) == 1, warns
    w = warns[0]
    assert "correct and wrong answers alike among completions that think" in w and "correctness" in w, w
    r = next(c["r"] for c in blind.correlations(format_only)
             if c["rule"] == "correctness" and c["slice"] == "among completions that think")
    assert f"r = {r:.2f}" in w and abs(r) < blind.BLIND_R
    # It did see the format: overall, the reward model moves with think_format.
    assert "reward model vs think_format: r = 0.9" in blind.correlation_text(format_only)


def test_blind_warning_stays_silent_when_the_reward_model_tracks_correctness():
    sees_answers = _samples(lambda thinks, correct, rng: 1.0 * correct + 0.5 * thinks + rng.gauss(0, 0.1))
    assert blind.blind_warnings(sees_answers) == []
    assert all(c["r"] > 0.5 for c in blind.correlations(sees_answers) if c["r"] is not None)
    # Late in a run every completion thinks; think_format then only grades reasoning length, which is no
    # blindness of the reward model.
    all_think = [{**s, "response": THINK.format(a=812 if s["rewards"]["correctness"] else 811),
                  "rewards": {**s["rewards"], "think_format": random.Random(i).choice([0.3, 0.7, 1.0])}}
                 for i, s in enumerate(sees_answers)]
    assert blind.blind_warnings(all_think) == []


def test_rloo_warnings_and_runs_show_carry_the_blind_warning(tmp_path):
    format_only = _samples(lambda thinks, correct, rng: (1.0 if thinks else -1.0) + rng.gauss(0, 0.1))
    records = [{"step": s, "reward": 0.5, "frac_reward_zero_std": 0.0} for s in (1, 2, 3)]
    (w,) = health.warnings(records, 64, format_only)
    assert w == blind.blind_warnings(format_only)[0]
    (tmp_path / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in format_only))
    fig = blind.run_figures(tmp_path)
    assert fig["blind_warnings"] == [w]
    assert {(c["rule"], c["slice"]) for c in fig["reward_model_vs_rules"]} >= {
        ("correctness", "among completions that think"), ("think_format", "over all recent completions")}


def test_blind_warning_needs_a_reward_model_and_enough_completions():
    rules_only = [{**s, "rewards": {k: v for k, v in s["rewards"].items() if k != "reward_model"}}
                  for s in _samples(lambda *a: 0.0)]
    assert blind.blind_warnings(rules_only) == [] and blind.correlations(rules_only) == []
    few = _samples(lambda thinks, correct, rng: float(thinks), steps=1, prompts=2, k=2)
    assert blind.blind_warnings(few) == []


def test_short_reward_run_records_held_out_accuracy_per_kind_and_source(workspace, capsys):
    cfg = RewardJobConfig(max_steps=3, per_device_train_batch_size=8, eval_fraction=0.1, lora=LoraSpec(r=8, alpha=8))
    r = JobRunner(workspace)
    rid = r.submit("reward", cfg, train_reward)
    assert r.wait(rid, 900) == "completed", r.status(rid)
    d = workspace.run_dir(rid)
    held = held_out_rows(d)
    b = reward_breakdown.read(d)
    assert b == json.loads((d / reward_breakdown.FILE).read_text())
    assert b["pairs"] == len(held) == int(237 * cfg.eval_fraction)
    for group in ("by_kind", "by_source"):
        assert sum(s["pairs"] for s in b[group].values()) == len(held), b[group]
        assert sum(s["correct"] for s in b[group].values()) == b["correct"]
    # The demo's two kinds: format pairs (only the chosen side reasons) and slip pairs (both reason).
    assert set(b["by_kind"]) <= {"only chosen reasons", "both reason"} and "only chosen reasons" in b["by_kind"]
    # The per-pair scores give the same accuracy TRL logged at the last evaluation.
    assert round(runs_list.final_eval(read_metrics(d))["accuracy"] * b["pairs"]) == b["correct"]
    last = [m for m in read_metrics(d) if any(k.startswith("eval_accuracy/kind:") for k in m)]
    assert len(last) == 1 and last[0]["step"] == 3
    for kind, s in b["by_kind"].items():
        assert last[0][f"eval_accuracy/kind:{kind}"] == s["accuracy"]
        assert last[0][f"eval_pairs/kind:{kind}"] == s["pairs"]
    # Where a person reads it: the Reward tab's runs list and summary text, and `runs show`.
    text = runs_list.breakdown(workspace, rid)
    assert "held-out accuracy by kind — " in text and "held-out accuracy by source — " in text
    s = b["by_kind"]["only chosen reasons"]
    assert f"only chosen reasons: {s['correct']}/{s['pairs']}" in text
    (row,) = runs_list.runs_rows(workspace)
    assert f"only chosen reasons {s['correct']}/{s['pairs']}" in \
        row[runs_list.RUN_HEADERS.index("held-out right, by kind of pair")]
    capsys.readouterr()
    assert main(["runs", "show", rid, "--workspace", str(workspace.root)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["held_out_accuracy_by"]["by_kind"] == b["by_kind"]
    assert shown["last"]["eval_pairs/kind:only chosen reasons"] == s["pairs"]
