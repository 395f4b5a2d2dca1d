"""A process reward run measured on ProcessBench's terms (inspect/processbench.py, prm/evaluate.py): the rule on a
hand-made set, `eval-prm` and `rs.eval_prm` on a ProcessBench file and on the workspace's step labels, their refusals
in one line, and the training's held-out figures equal to this evaluation of the same rows."""
import json

import pytest

from rloo_studio.core import demo_task
from rloo_studio.core.errors import DataError
from rloo_studio.inspect import processbench
from rloo_studio.inspect.process import step_figures

PROMPT = "Add 820 and 634."


def pb_figures(truth, probs, threshold=0.5):
    return processbench.figures(step_figures(truth, probs, threshold), threshold)


def test_f1_by_the_papers_rule_on_a_hand_made_set():
    """Two erroneous rows (one whose first wrong step is named exactly, one where no step is flagged by then) and two
    correct rows (no step flagged): 0.5 and 1.0, F1 = 2 * 0.5 * 1 / 1.5."""
    truth = [[1, 1, 0], [1, 0], [1, 1, 1], [1, 1]]
    probs = [[0.9, 0.8, 0.3], [0.9, 0.7], [0.9, 0.8, 0.7], [0.6, 0.95]]
    out = pb_figures(truth, probs)
    assert tuple(out) == processbench.KEYS
    assert out == {"f1": pytest.approx(2 / 3), "erroneous_accuracy": 0.5, "correct_accuracy": 1.0, "threshold": 0.5,
                   "n": 4, "erroneous": 2, "correct": 2, "left_out": 0}
    # at 0.65 the second correct row's first step (0.6) is flagged: 0.5 and 0.5
    assert pb_figures(truth, probs, 0.65)["correct_accuracy"] == 0.5
    assert pb_figures(truth, probs, 0.65)["f1"] == pytest.approx(0.5)
    # a step flagged before the first wrong one is a wrong answer too; both shares 0: F1 0; no correct rows: no F1
    assert pb_figures([[1, 0]], [[0.1, 0.1]])["erroneous_accuracy"] == 0.0
    assert pb_figures([[1, 0], [1]], [[0.9, 0.9], [0.1]])["f1"] == 0.0
    assert pb_figures([[1, 0]], [[0.9, 0.1]])["f1"] is None


def test_a_threshold_outside_0_and_1_is_refused():
    assert processbench.check_threshold(None) == 0.5
    for bad in (0, 1, 1.5, -0.1, True, "0.3"):
        with pytest.raises(DataError, match="between 0 and 1"):
            processbench.check_threshold(bad)


def _cli(args, capsys):
    from rloo_studio.cli import main

    code = main(["eval-prm", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_eval_prm_refuses_bad_input_in_one_line(empty_workspace, tmp_path, capsys):
    """A run that is not a process reward run, a missing file, a file of another shape, a bad threshold: exit 2 and
    one line saying what is wrong, before any model is loaded (these runs saved none)."""
    ws = empty_workspace
    ws.upsert_run("rm-1", kind="reward", name="rm-1", status="completed")
    ws.upsert_run("prm-1", kind="prm", name="prm-1", status="completed")
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"prompt": "p", "chosen": "a", "rejected": "b"}) + "\n")
    base = ["--workspace", str(ws.root), "--json"]
    cases = [(["--reward-run", "rm-1"], "Run rm-1 is a reward-model run: it gives an outcome reward model"),
             (["--reward-run", "nope"], "There is no"),
             (["--reward-run", "prm-1", "--file", str(tmp_path / "missing.jsonl")], "missing.jsonl: no such file"),
             (["--reward-run", "prm-1", "--file", str(pairs)], "pairs.jsonl holds preference pairs"),
             (["--reward-run", "prm-1", "--threshold", "1.5"], "between 0 and 1"),
             (["--reward-run", "prm-1", "--held-out"], "Run prm-1 kept no record of its held-out rows"),
             (["--reward-run", "prm-1"], "No step labels yet")]
    for args, said in cases:
        code, out, err = _cli(base + args, capsys)
        assert code == 2 and out == "", (args, out)
        assert err.startswith("error: ") and said in err and err.count("\n") == 1, (args, err)


def _the_rule(p_correct: list[float], label: int, threshold: float = 0.5) -> bool:
    """ProcessBench's verdict on one row, from the model's step probabilities: the first flagged step (or -1)."""
    return next((k for k, p in enumerate(p_correct) if p < threshold), -1) == label


@pytest.mark.train
def test_eval_prm_on_a_processbench_file_from_the_cli_and_python(empty_workspace, tmp_path, capsys):
    """A process run that doubts the second step of one response (tests/prm_run_fixture.py); a ProcessBench file of
    that response with every label: the figures are the rule applied to `score`'s p_correct; --json prints exactly
    the keys; rs.eval_prm returns the same; imported into the workspace, its step labels give the rule's figures too,
    and Inspect's figures over them (labeled_figures) are the same numbers."""
    from prm_run_fixture import doubting_prm_run

    import rloo_studio as rs
    from rloo_studio.label.steps import response_steps

    ws = empty_workspace
    response = demo_task.target_response({"prompt": PROMPT, "answer": "1454"})
    rid = doubting_prm_run(ws, PROMPT, response, doubt=2)
    steps = response_steps(response)
    labels = [-1, 0, 1, 2]
    path = tmp_path / "processbench.jsonl"
    path.write_text("".join(json.dumps({"problem": PROMPT, "steps": steps, "label": k}) + "\n" for k in labels))
    p = [s["p_correct"] for s in rs.score(ws, rid, PROMPT, response)["steps"]]
    for threshold in (None, 0.3, 0.01):
        th = 0.5 if threshold is None else threshold
        right = {k: _the_rule(p, k, th) for k in labels}
        err = sum(right[k] for k in labels if k >= 0) / 3
        ok = float(right[-1])
        want = {"f1": 2 * err * ok / (err + ok) if err + ok else 0.0, "erroneous_accuracy": err,
                "correct_accuracy": ok, "threshold": th, "n": 4, "erroneous": 3, "correct": 1, "left_out": 0}
        extra = ["--threshold", str(threshold)] if threshold is not None else []
        code, out, _ = _cli(["--workspace", str(ws.root), "--reward-run", rid, "--file", str(path), "--json", *extra],
                            capsys)
        assert code == 0
        got = json.loads(out)
        assert list(got) == list(processbench.KEYS) and got == pytest.approx(want)
        assert rs.eval_prm(ws, rid, file=path, threshold=threshold) == got
    assert right == {-1: True, 0: False, 1: False, 2: False}  # at 0.01 it flags no step: only the correct row
    code, out, _ = _cli(["--workspace", str(ws.root), "--reward-run", rid, "--file", str(path)], capsys)
    assert code == 0 and out.startswith("ProcessBench F1 ") and "erroneous rows: 33.3%" in out
    assert rs.import_file(ws, path).responses == 1  # four rows of one response: one response, labeled once
    rs.import_file(ws, path, keep_duplicates=True)  # each row its own response, as the file has them
    on_labels = rs.eval_prm(ws, rid)  # the first row's response (every step right) and the four copies
    assert (on_labels["n"], on_labels["erroneous"], on_labels["correct"]) == (5, 3, 2)
    # at 0.5, as from the file: it flags step 1 (index), so only the row whose first wrong step is 1 is right
    assert (on_labels["correct_accuracy"], on_labels["erroneous_accuracy"], on_labels["f1"]) == (0.0, 1 / 3, 0.0)
    # Inspect's figures over the workspace's step labels are the same mechanism
    from rloo_studio.inspect.process import labeled_figures, load_process_scorer

    shown = labeled_figures(ws, load_process_scorer(ws, rid))
    assert (shown["processbench_f1"], shown["first_wrong_found"], shown["correct_called_correct"],
            shown["responses"]) == (0.0, 1 / 3, 0.0, 5)


@pytest.mark.train
def test_the_held_out_figures_of_training_are_this_evaluation_of_the_same_rows(empty_workspace):
    """The training's held-out figures (prm/job.py figures over the Trainer's per-position probabilities) and
    eval_prm(held_out=True), which reads the run's held-out rows with the scorer: the same numbers, on a process run
    saved in seconds over demo responses with exact step labels (tests/test_prm.py synthetic_labels)."""
    import torch
    from prm_run_fixture import doubting_prm_run
    from test_prm import synthetic_labels

    from rloo_studio.inspect.process import load_process_scorer
    from rloo_studio.prm import data
    from rloo_studio.prm.config import PrmJobConfig
    from rloo_studio.prm.evaluate import eval_prm
    from rloo_studio.prm.job import figures

    ws = empty_workspace
    synthetic_labels(ws, 40)
    rid = doubting_prm_run(ws, PROMPT, demo_task.target_response({"prompt": PROMPT, "answer": "1454"}))
    scorer = load_process_scorer(ws, rid)
    cfg = PrmJobConfig(eval_fraction=0.5, read_at=scorer.read_at, step_score=scorer.step_score)
    _, held_rows = data.run_rows(ws, ws.run_dir(rid), cfg)  # the split, saved in the run folder as a run saves it
    held, _ = data.examples(scorer.tok, held_rows, cfg)
    with torch.no_grad():
        p_right = [scorer.model(input_ids=torch.tensor([e["input_ids"]])).logits.float().softmax(-1)[0, :, 1].tolist()
                   for e in held]
    logged = figures(p_right, held, cfg.step_score)
    got = eval_prm(ws, rid, held_out=True)
    assert got["n"] == len(held) == 40 and got["left_out"] == 0
    assert 0 < got["erroneous"] < got["n"]
    assert (got["f1"], got["erroneous_accuracy"], got["correct_accuracy"]) == pytest.approx(
        (logged.get("processbench_f1"), logged["first_wrong_found"], logged["correct_called_correct"]))


@pytest.mark.train
def test_a_trained_runs_logged_held_out_f1_is_eval_prm_on_its_held_out_rows(tmp_path, capsys):
    """train-prm for a few steps, then eval-prm --held-out: the F1 and both accuracies the run logged at its last
    evaluation. The held-out rows written as a ProcessBench file give the same again."""
    from test_prm import TINY, synthetic_labels

    from rloo_studio.cli import main
    from rloo_studio.label.demo_data import open_workspace
    from rloo_studio.label.steps import response_steps
    from rloo_studio.prm.evaluate import held_out_rows
    from rloo_studio.runs.runner import read_metrics

    ws = open_workspace(tmp_path / "ws")
    synthetic_labels(ws, 30)
    assert main(["train-prm", "--workspace", str(ws.root), *[f"--set={k}={v}" for k, v in TINY.items()],
                 "--set=copies=1", "--set=eval_fraction=0.3"]) == 0
    (run,) = ws.runs("prm")
    last = [m for m in read_metrics(ws.run_dir(run["id"])) if "eval_first_wrong_found" in m][-1]
    capsys.readouterr()
    code, out, _ = _cli(["--workspace", str(ws.root), "--reward-run", run["id"], "--held-out", "--json"], capsys)
    assert code == 0
    got = json.loads(out)
    assert got["erroneous"] and got["correct"] and got["left_out"] == 0
    assert got["n"] == json.loads((ws.run_dir(run["id"]) / "left_out.json").read_text())["held_out"]
    assert (got["f1"], got["erroneous_accuracy"], got["correct_accuracy"]) == pytest.approx(
        (last.get("eval_processbench_f1"), last["eval_first_wrong_found"], last["eval_correct_called_correct"]))
    path = tmp_path / "held_out.jsonl"
    path.write_text("".join(json.dumps({"problem": r["prompt"], "steps": response_steps(r["response"]),
                                        "label": r["labels"].index(-1) if -1 in r["labels"] else -1}) + "\n"
                            for r in held_out_rows(ws, run["id"])))
    code, out, _ = _cli(["--workspace", str(ws.root), "--reward-run", run["id"], "--file", str(path), "--json"], capsys)
    assert code == 0 and json.loads(out) == got
