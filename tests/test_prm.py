"""The process reward model: where each step is read (real Qwen3 token ids), the training targets, the held-out
figures (ProcessBench's F1), a real training run on the demo that learns to find slipped steps, its resume, and
the scorer that `score`, Inspect and RLOO read it with."""
import json
import random
import re

import pytest

from rloo_studio.core import demo_task
from rloo_studio.core.paths import DEMO_DATA, DEMO_MODEL
from rloo_studio.inspect.process import aggregates, encode, step_figures
from rloo_studio.prm.data import step_targets

QWEN_RESPONSE = "<think>\nFirst, 12 + 30.\n\n12 + 30 = 42.\n\nCheck: 42 - 30 = 12.\n</think>\n\nThe answer is 42."


@pytest.mark.parametrize("read_at", ["after_step", "step_end"])
def test_each_step_is_read_at_its_own_place_on_real_qwen3_ids(qwen3_tokenizer, read_at):
    """Qwen3-Thinking's prompt opens <think>: the response's own <think> is not read twice; each step is read at
    its last token (step_end) or at the last token before the next step begins (after_step), on the real ids. Qwen's
    BPE merges a step's final '.' with the blank line after it, so there the two places are the same token."""
    enc = encode(qwen3_tokenizer, "What is 12 + 30?", QWEN_RESPONSE, True, read_at)
    assert [t for t, _, _ in enc.steps] == ["First, 12 + 30.", "12 + 30 = 42.", "Check: 42 - 30 = 12."]
    assert enc.ids.count(151667) == 1 and enc.ids.count(151668) == 1  # <think> once (the prompt's), </think> once
    read = [qwen3_tokenizer.decode([enc.ids[p]]) for p in enc.positions]
    after = [qwen3_tokenizer.decode([enc.ids[p + 1]]) for p in enc.positions]
    assert read == [".\n\n", ".\n\n", ".\n"] and after == ["1", "Check", "</think>"]  # never a token of the next step
    words = encode(qwen3_tokenizer, "What is 12 + 30?", "<think>\nFirst 12 plus 30\n\nso 42\n</think>\n\n42", True,
                   read_at)
    read = [qwen3_tokenizer.decode([words.ids[p]]) for p in words.positions]
    assert read == (["\n\n", "\n"] if read_at == "after_step" else ["0", "2"])  # the separator, or the last digit


def test_the_demo_model_reads_each_digit_step_after_it():
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(DEMO_MODEL))
    response = demo_task.target_response({"prompt": "Add 820 and 634.", "answer": "1454"})
    enc = encode(tok, "Add 820 and 634.", response)
    assert [t for t, _, _ in enc.steps] == ["0+4+0=4", "2+3+0=5", "8+6+0=14"]
    assert all(tok.decode(enc.ids[p - 1]) in "0123456789" for p in enc.positions)


def test_targets_stop_at_the_first_bad_step():
    assert step_targets(4, [1, 0, -1], "ignore") == [1, 1, 0, None]
    assert step_targets(4, [1, 0, -1], "wrong") == [1, 1, 0, 0]
    assert step_targets(3, [1], "wrong") == [1, None, None]  # unlabeled steps are not trained on
    assert step_targets(2, [-1, 1], "ignore") == [0, None]  # a label after a bad one is never used


def test_figures_follow_processbench():
    truth = [[1, 1, 0], [1, 1], [1, 0], [1, 1, 1]]
    probs = [[0.9, 0.8, 0.2], [0.9, 0.3], [0.4, 0.1], [0.7, 0.6, 0.9]]
    f = step_figures(truth, probs)
    assert f["first_wrong_found"] == 0.5  # found at step 3 in the first, doubted step 1 (too early) in the third
    assert f["correct_called_correct"] == 0.5  # the second doubts a right step, the fourth doubts none
    assert f["processbench_f1"] == pytest.approx(0.5)
    assert f["step_accuracy"] == pytest.approx(8 / 10) and f["wrong_called_wrong"] == 1.0
    assert f["right_called_right"] == pytest.approx(6 / 8)
    assert aggregates([0.5, 0.8]) == {"min": 0.5, "product": 0.4, "last": 0.8, "mean": 0.65}
    assert aggregates([])["min"] is None


def test_min_so_far_reads_the_weakest_token_of_the_reasoning_up_to_each_step():
    from rloo_studio.inspect.process import read_steps

    p = [0.9, 0.8, 0.95, 0.2, 0.99, 0.7, 0.6, 0.97]  # per token; steps span tokens 1-3 and 5-7 (read at 3 and 7)
    assert read_steps(p, [1, 5], [3, 7], "at_read") == [0.2, 0.97]
    assert read_steps(p, [1, 5], [3, 7], "min_so_far") == [0.2, 0.2]  # a wrong token stays wrong for every later step
    assert read_steps(p, [1, 5], [2, 7], "min_so_far") == [0.8, 0.6]  # token 3 and 4 are read by no step


def test_the_teacher_labels_the_token_where_a_step_slips():
    """The bundled demo model as teacher over a demo response with one digit changed: every token before the change
    is right, the changed token is wrong; a response as written keeps its step labels up to its first wrong step."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rloo_studio.prm.teacher import IGNORE, dense_labels, matches, reasoning

    tok = AutoTokenizer.from_pretrained(str(DEMO_MODEL))
    teacher = AutoModelForCausalLM.from_pretrained(str(DEMO_MODEL)).eval()
    prompt = "Add 820 and 634."
    enc = encode(tok, prompt, demo_task.target_response({"prompt": prompt, "answer": "1454"}))
    labels = [IGNORE] * len(enc.ids)
    for pos in enc.positions:
        labels[pos] = 1
    example = {"input_ids": enc.ids, "labels": labels, "starts": list(enc.starts), "positions": enc.positions}
    slip = enc.positions[1] - 1  # the last digit of step 2, "2+3+0=5"
    five, six = tok.convert_tokens_to_ids("5"), tok.convert_tokens_to_ids("6")
    assert enc.ids[slip] == five
    changed = list(enc.ids)
    changed[slip] = six
    right, wrong = matches(teacher, [enc.ids, changed], tok.pad_token_id or 0)
    y_right = dense_labels(example, enc.ids, right, keep_step_labels=True)
    y_wrong = dense_labels(example, changed, wrong, keep_step_labels=False)
    tokens = reasoning(example)
    assert all(y_right[t] == 1 for t in tokens)
    assert [y_wrong[t] for t in tokens if t < slip] == [1] * sum(t < slip for t in tokens)
    assert y_wrong[slip] == 0
    assert all(y == IGNORE for t, y in enumerate(y_wrong) if t not in tokens)
    labels[enc.positions[1]] = labels[enc.positions[2]] = 0  # step labels: step 2 is the first wrong one
    y_steps = dense_labels(example, enc.ids, right, keep_step_labels=True)
    assert [y_steps[p] for p in enc.positions] == [1, 0, 1]  # after the first wrong step, the teacher's labels


def test_fresh_layers_need_a_whole_fine_tune():
    from rloo_studio.core.errors import ConfigError
    from rloo_studio.prm.config import PrmJobConfig

    with pytest.raises(ConfigError, match="extra_layers"):
        PrmJobConfig(finetune="lora", extra_layers=2).validate()
    with pytest.raises(ConfigError, match="frozen"):
        PrmJobConfig(finetune="frozen", extra_layers=0).validate()
    PrmJobConfig(finetune="lora", extra_layers=0).validate()


def synthetic_labels(ws, n: int, seed: int = 0) -> None:
    """Demo responses with exact step labels: a right one, and one whose step k adds wrongly (every step after it
    wrong too, as the chain is), for n prompts of the demo's training set."""
    from rloo_studio.label.steps import write_rollout_labels

    rng = random.Random(seed)
    rows = [json.loads(x) for x in (DEMO_DATA / "prompts_train.jsonl").read_text().splitlines()][:n]
    for r in rows:
        a, b = (int(x) for x in demo_task._operands(r["prompt"]))
        steps = demo_task.reasoning_steps(a, b)
        k = rng.randrange(len(steps))
        lhs, total = steps[k].split("=")
        slipped = steps[:k] + [f"{lhs}={int(total) + rng.choice([-2, -1, 1, 2])}"] + steps[k + 1:]
        for body, verdicts in ((steps, [1] * len(steps)), (slipped, [1] * k + [-1] * (len(steps) - k))):
            text = "<think>\n" + "\n\n".join(body) + f"\n</think>\n\nThe answer is {a + b}."
            write_rollout_labels(ws, r["prompt"], {"answer": r["answer"]}, text, verdicts,
                                 [float(v > 0) for v in verdicts], "demo-train", "synthetic")


TINY = dict(max_steps=6, per_device_train_batch_size=8, save_steps=3, eval_steps=3, logging_steps=1, warmup_steps=0)


def test_a_resumed_run_is_the_run_that_never_stopped_and_reproduce_py_repeats_it(tmp_path):
    """Train 6 steps (checkpoint at 3), keep that run as the reference, drop what came after checkpoint-3, resume:
    the same metrics for steps 4-6, once each, and the same weights (an epoch boundary among them); the held-out
    figures are logged as it goes.
    The run's reproduce.py (no rloo_studio) trains the same fresh layers over the frozen base to the same losses."""
    import shutil
    import subprocess
    import sys

    from resume_check import assert_same_run

    from rloo_studio.label.demo_data import open_workspace
    from rloo_studio.prm.config import PrmJobConfig
    from rloo_studio.prm.job import train_prm
    from rloo_studio.runs.runner import JobRunner, read_metrics

    ws = open_workspace(tmp_path / "ws")
    synthetic_labels(ws, 60)
    r = JobRunner(ws)
    # one copy of each response and batches of 64: an epoch is 4 batches, so the resumed steps cross into the
    # second epoch, whose order of similar-length batches (prm/batches.py) is drawn anew
    cfg = PrmJobConfig(**{**TINY, "per_device_train_batch_size": 64, "copies": 1})
    rid = r.submit("prm", cfg, train_prm)
    assert r.wait(rid, 900) == "completed", r.status(rid)
    d = ws.run_dir(rid)
    evals = [m for m in read_metrics(d) if "eval_step_accuracy" in m]
    assert [m["step"] for m in evals] == [0, 3, 6]  # step 0: the untrained head
    assert max(float(m.get("epoch", 0)) for m in read_metrics(d)) > 1  # the run went into its second epoch
    assert {"eval_first_wrong_found", "eval_correct_called_correct", "eval_processbench_f1"} <= set(evals[-1])
    out = subprocess.run([sys.executable, str(d / "reproduce.py")], cwd="/", capture_output=True, text=True,
                         timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    again = [json.loads(x) for x in (d / "repro-out" / "metrics.jsonl").read_text().splitlines()]
    loss = lambda rs: {m["step"]: m["loss"] for m in rs if "loss" in m}  # noqa: E731
    assert loss(read_metrics(d)).keys() == loss(again).keys() and len(loss(again)) == 6
    assert all(abs(loss(read_metrics(d))[k] - v) < 1e-4 for k, v in loss(again).items()), (read_metrics(d), again)
    shutil.rmtree(d / "repro-out")
    full = shutil.copytree(d, tmp_path / "uninterrupted")
    shutil.rmtree(d / "checkpoints" / "checkpoint-6")
    shutil.rmtree(d / "adapter")
    assert r.submit("prm", cfg, train_prm, run_id=rid) == rid
    assert r.wait(rid, 900) == "completed", r.status(rid)
    assert_same_run(d, full, from_step=3)
    assert (d / "examples.jsonl").read_text() == (full / "examples.jsonl").read_text()


def test_train_prm_from_the_cli_then_score_each_step(tmp_path, capsys):
    """train-prm on a workspace's step labels, then `score --reward-run` with that run: each step's p_correct in
    JSON, and the plain view marks the first step it doubts."""
    from rloo_studio.cli import main
    from rloo_studio.label.demo_data import open_workspace

    ws = open_workspace(tmp_path / "ws")
    synthetic_labels(ws, 30)
    sets = [f"--set={k}={v}" for k, v in TINY.items()]
    assert main(["train-prm", "--workspace", str(ws.root), *sets]) == 0
    (run,) = ws.runs("prm")
    capsys.readouterr()
    response = demo_task.target_response({"prompt": "Add 820 and 634.", "answer": "1454"})
    assert main(["score", "--workspace", str(ws.root), "--reward-run", run["id"], "--prompt", "Add 820 and 634.",
                 "--response", response, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [s["text"] for s in out["steps"]] == ["0+4+0=4", "2+3+0=5", "8+6+0=14"]
    assert all(0 <= s["p_correct"] <= 1 for s in out["steps"]) and out["kind"] == "process"
    assert out["min"] == min(s["p_correct"] for s in out["steps"])
    assert main(["score", "--workspace", str(ws.root), "--reward-run", run["id"], "--prompt", "Add 820 and 634.",
                 "--response", response]) == 0
    text = capsys.readouterr().out
    assert "3 steps" in text and "p_correct" in text
    assert main(["runs", "show", run["id"], "--workspace", str(ws.root)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["held_out"]["step"] == 6 and shown["data"]["train"] > 0


def test_train_prm_demo_trains_on_the_bundled_step_labels_of_the_slipping_policy(tmp_path, capsys):
    """`train-prm --demo` on a new workspace: the demo's step labels from rollouts are there (once, under the
    rollouts' annotator) and the run trains and holds out from them."""
    from rloo_studio.cli import main
    from rloo_studio.core.paths import DEMO_DATA
    from rloo_studio.core.workspace import Workspace
    from rloo_studio.label.steps import labeled_responses

    bundled = len((DEMO_DATA / "step_labels.jsonl").read_text().splitlines())
    root = tmp_path / "new-ws"
    sets = [f"--set={k}={v}" for k, v in TINY.items()] + ["--set=copies=1"]  # the labels are the subject here
    for _ in range(2):  # a second --demo adds nothing again
        assert main(["train-prm", "--workspace", str(root), "--demo", *sets]) == 0
        assert len(labeled_responses(Workspace(root), "rollouts")) == bundled
    capsys.readouterr()
    run = Workspace(root).runs("prm")[0]
    assert main(["runs", "show", run["id"], "--workspace", str(root)]) == 0
    data = json.loads(capsys.readouterr().out)["data"]
    assert data["train"] + data["held_out"] == bundled and data["held_out"] > 0


def test_step_labels_from_rollouts_stop_and_resume_as_the_whole_run(tmp_path):
    """The rollouts job labels the steps of the policy's responses (a step is right when an ending from it reaches
    the answer); stopped after its first batch and resumed, it labels exactly what the uninterrupted run did."""
    from rloo_studio.label import steps
    from rloo_studio.label.demo_data import open_workspace
    from rloo_studio.prm.rollouts import RolloutConfig, label_from_rollouts
    from rloo_studio.runs.runner import JobRunner

    def labels(ws):
        return sorted((r["response"], tuple(r["labels"]), tuple(r["soft"]))
                      for r in steps.labeled_responses(ws, "rollouts"))

    cfg = RolloutConfig(prompts=8, samples=2, continuations=2, max_new_tokens=48, batch_prompts=4)
    whole = open_workspace(tmp_path / "whole", demo=True)
    r = JobRunner(whole)
    rid = r.submit("rollouts", cfg, label_from_rollouts)
    assert r.wait(rid, 600) == "completed", r.status(rid)
    done = labels(whole)
    assert len(done) >= 3 and all(set(lab) <= {1, -1} for _, lab, _ in done)  # the demo model reasons half the time
    assert all(r["annotator"] == steps.ROLLOUTS for r in steps.labeled_responses(whole, "all"))
    parts = open_workspace(tmp_path / "parts", demo=True)
    r2 = JobRunner(parts)

    class StopAfterFirstBatch:  # ctx.metric is called once per batch, after its labels committed
        def __init__(self, ctx):
            self.ctx, self.metric = ctx, ctx.metric

        def __call__(self, record):
            self.metric(record)
            self.ctx.stop_event.set()

    def stopping(c, ctx):
        ctx.metric = StopAfterFirstBatch(ctx)
        return label_from_rollouts(c, ctx)

    rid2 = r2.submit("rollouts", cfg, stopping)
    assert r2.wait(rid2, 600) == "stopped"
    assert 0 < len(labels(parts)) < len(done)
    assert r2.submit("rollouts", cfg, label_from_rollouts, run_id=rid2) == rid2
    assert r2.wait(rid2, 600) == "completed", r2.status(rid2)
    assert labels(parts) == done


def test_rloo_rewarded_by_the_process_reward_model(tmp_path):
    """RLOO steps rewarded only by a process reward model ('latest', named at launch): TRL logs its reward, and the
    process reward logs what the hacking warnings read (right answers, steps, doubted completions)."""
    from rloo_studio.core.model_options import LoraSpec
    from rloo_studio.label.demo_data import open_workspace
    from rloo_studio.prm.config import PrmJobConfig
    from rloo_studio.prm.job import train_prm
    from rloo_studio.rloo.config import RlooJobConfig
    from rloo_studio.rloo.job import train_rloo
    from rloo_studio.rloo.launch_form import launch_check
    from rloo_studio.runs.runner import JobRunner, read_metrics

    ws = open_workspace(tmp_path / "ws", demo=True)
    synthetic_labels(ws, 30)
    r = JobRunner(ws)
    prm = r.submit("prm", PrmJobConfig(**TINY), train_prm)
    assert r.wait(prm, 900) == "completed", r.status(prm)
    cfg = RlooJobConfig(max_steps=2, rewards=["process_reward"], reward_weights=[1.0], process_reward_run="latest",
                        per_device_train_batch_size=8, num_generations=4, max_completion_length=48,
                        lora=LoraSpec(r=4, alpha=8), save_steps=100, process_reward_aggregate="product")
    launch_check(ws, cfg)
    assert cfg.process_reward_run == prm  # 'latest' became the run's id, as its config.yaml will say
    rid = r.submit("rloo", cfg, train_rloo)
    assert r.wait(rid, 900) == "completed", r.status(rid)
    steps = [m for m in read_metrics(ws.run_dir(rid)) if "rewards/process_reward/mean" in m]
    assert [m["step"] for m in steps] == [1, 2]
    assert all(0 <= m["rewards/process_reward/mean"] <= 1 for m in steps)
    assert all({"process/steps", "process/doubted", "process/accuracy", "process/unfinished"} <= set(m) for m in steps)


def test_process_reward_hacking_is_named_in_the_warnings():
    from rloo_studio.rloo.health import warnings

    def recs(accuracy, steps):
        return [{"step": s, "reward": 0.1 * s, "rewards/process_reward/mean": 0.05 * s, "process/accuracy": accuracy(s),
                 "process/steps": steps(s)} for s in range(1, 11)]

    said = warnings(recs(lambda s: 0.45, lambda s: 3.0))
    assert any("right answers stayed at 45% -> 45%" in w and "process-reward hacking" in w for w in said)
    said = warnings(recs(lambda s: 0.40 + 0.03 * s, lambda s: 3.0 + 0.3 * s))
    assert not any("stayed at" in w for w in said) and any("number of steps (3.9 -> 5.4" in w for w in said)
    assert not warnings(recs(lambda s: 0.40 + 0.03 * s, lambda s: 3.0))  # reasoning better: nothing to say


def test_states_that_would_not_fit_in_memory_are_refused_in_words_before_they_are_computed(tmp_path, monkeypatch):
    """finetune: frozen keeps the base's states in memory for the whole run: a job whose states would take more than
    the memory free fails with a message that says how much and what to do, not a traceback."""
    import collections

    import psutil

    from rloo_studio.label.demo_data import open_workspace
    from rloo_studio.prm import cached
    from rloo_studio.prm.config import PrmJobConfig
    from rloo_studio.prm.job import train_prm
    from rloo_studio.runs.runner import JobRunner

    ws = open_workspace(tmp_path / "ws")
    synthetic_labels(ws, 30)
    computed = []
    monkeypatch.setattr(cached, "base_states", lambda *a, **kw: computed.append(1) or [])
    Memory = collections.namedtuple("Memory", "available")
    monkeypatch.setattr(psutil, "virtual_memory", lambda: Memory(available=2 ** 20))  # 1 MiB free
    r = JobRunner(ws)
    rid = r.submit("prm", PrmJobConfig(copies=1, **TINY), train_prm)
    assert r.wait(rid, 900) == "failed"
    message = r.status(rid)["message"]
    assert re.search(r"states of [\d,]+ examples would take [\d.]+ GiB of memory, and 0\.0 GiB is free",
                     message), message
    assert "finetune: lora" in message and "Traceback" not in message
    assert computed == []
