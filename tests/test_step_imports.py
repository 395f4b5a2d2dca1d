"""ProcessBench files (problem, steps, label) and PRM800K's own JSONL through the one import path: recognised by their
columns, stored as stepwise rows (a response of <think> steps, labeled under 'import'), checked from the store; a bad
row refused with its line and what is wrong, and nothing stored from that file."""
import json

import pandas as pd
import pytest

from rloo_studio.core.errors import DataError
from rloo_studio.label import steps as S
from rloo_studio.label.checking import kind_of
from rloo_studio.label.importing import import_file

PB = [
    {"id": "gsm8k-0", "generator": "m", "problem": "What is 12 + 30?", "steps": ["2+0=2", "1+3=4", "So 42."],
     "label": -1, "final_answer_correct": True},
    {"id": "gsm8k-1", "generator": "m", "problem": "What is 19 + 5?",
     "steps": ["9+5=14, write 4 carry 1", "1+0=1", "So 14."], "label": 1, "final_answer_correct": False},
    {"id": "gsm8k-2", "generator": "m", "problem": "What is 7 + 8?", "steps": ["7+8=16", "So 16."], "label": 0,
     "final_answer_correct": False},
]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def snapshot(ws):
    return {t: ws.query(f"SELECT COUNT(*) FROM {t}")[0][0] for t in
            ("prompts", "responses", "pairs", "labels", "step_labels", "prompt_sets")}


def stored(ws):
    """(prompt, every step of the stored response, the stored verdicts) of each labeled response, from the store."""
    return [(e["prompt"], e["steps"], e["labels"]) for e in S.labeled_responses(ws, "all")]


def test_the_shapes_are_recognised_by_their_columns():
    assert kind_of(PB, "pb.jsonl")[0] == "processbench"
    assert kind_of(PRM, "prm.jsonl")[0] == "prm800k"
    assert kind_of([{"prompt": "p", "completions": ["a"], "labels": [True]}], "s.jsonl")[0] == "steps"
    with pytest.raises(DataError, match="'problem' with 'steps' and 'label' \\(ProcessBench\\)"):
        kind_of([{"problem": "p", "steps": ["a"]}], "half.jsonl")


@pytest.mark.parametrize("form", ["jsonl", "parquet", "datasets"])
def test_processbench_rows_are_labeled_up_to_the_first_wrong_step(empty_workspace, tmp_path, form):
    """Right before the first wrong step, wrong at it, nothing after (ProcessBench's label), every step kept in the
    response; -1: every step right."""
    if form == "jsonl":
        path = write_jsonl(tmp_path / "pb.jsonl", PB)
    elif form == "parquet":
        path = tmp_path / "pb.parquet"
        pd.DataFrame(PB).to_parquet(path)
    else:
        from datasets import Dataset

        path = tmp_path / "pb_ds"
        Dataset.from_list(PB).save_to_disk(str(path))
    res = import_file(empty_workspace, path)
    assert (res.kind, res.shape, res.rows, res.responses, res.step_labels) == ("steps", "ProcessBench", 3, 3, 6)
    assert res.summary().startswith(f"Imported 3 ProcessBench rows from {path.name}: 3 responses with 6 step labels")
    assert stored(empty_workspace) == [
        ("What is 12 + 30?", ["2+0=2", "1+3=4", "So 42."], [1, 1, 1]),
        ("What is 19 + 5?", ["9+5=14, write 4 carry 1", "1+0=1", "So 14."], [1, -1]),
        ("What is 7 + 8?", ["7+8=16", "So 16."], [-1])]
    got = S.labeled_responses(empty_workspace, "all")
    assert {e["annotator"] for e in got} == {S.IMPORTED}
    assert got[0]["response"] == "<think>\n2+0=2\n\n1+3=4\n\nSo 42.\n</think>"  # as the stepwise import writes it
    assert got[1]["prompt_extra"] == {"id": "gsm8k-1", "generator": "m", "final_answer_correct": False}
    # training reads them: the steps after the first wrong one are wrong too (after_first_bad=wrong), or left out
    from rloo_studio.prm.config import PrmJobConfig
    from rloo_studio.prm.data import labeled_rows

    assert [r["targets"] for r in labeled_rows(empty_workspace, PrmJobConfig())] == [[1, 1, 1], [1, 0, 0], [0, 0]]
    again = import_file(empty_workspace, path)
    assert (again.responses, again.skipped) == (0, 3)


def c(text, rating, flagged=None):
    return {"text": text, "rating": rating, "flagged": flagged}


def step(*completions, chosen=0, human=None):
    return {"completions": list(completions), "human_completion": human, "chosen_completion": chosen}


def line(problem, steps, answer, finish="solution", pre=None):
    question = {"problem": problem, "ground_truth_solution": "...", "ground_truth_answer": answer}
    if pre:
        question |= {"pre_generated_steps": pre, "pre_generated_answer": pre[-1], "pre_generated_verifier_score": 0.1}
    return {"labeler": "3a1e", "timestamp": "2023-01-22T04:34:27", "generation": 9 if pre else None,
            "is_quality_control_question": False, "is_initial_screening_question": False, "question": question,
            "label": {"steps": steps, "total_time": 27827, "finish_reason": finish}}


PRM = [
    # a solution: good, neutral, good (the last step's blank line folded: a blank line separates steps)
    line("What is 2 + 2?", [step(c("2 + 2 = 4.", 1)), step(c("Let me check.", 0)), step(c("# Answer\n\n4", 1))], "4"),
    # phase 2, found_error: at the first error the pre-generated step is rated -1 beside alternatives, none chosen
    line("What is 3 + 5?", [step(c("3 + 5 is a sum.", 1)),
                            step(c("Add them.", 0), c("So 3 + 5 = 7.", -1), c("So 3 + 5 = 9.", -1), chosen=None)],
         "8", "found_error", pre=["3 + 5 is a sum.", "So 3 + 5 = 9.", "# Answer\n\n9"]),
    # phase 1: every completion bad, the labeler wrote their own (right) step, then the path goes on
    line("What is 1 + 1?", [step(c("1 + 1 = 3.", -1), chosen=None, human={"text": "1 + 1 = 2.", "rating": None}),
                            step(c("# Answer\n\n2", 1))], "2"),
    # a step without a rating: the labels stop before it, the response keeps the chosen path
    line("What is 5 - 2?", [step(c("5 - 2 = 3.", 1)), step(c("Hmm.", None)), step(c("# Answer\n\n3", 1))], "3",
         "give_up"),
    # the labeler gave up at once: nothing to store
    line("What is 9 - 9?", [], "0", "give_up"),
    # a chosen step rated -1 ends the path
    line("What is 6 / 2?", [step(c("6 / 2 = 4.", -1)), step(c("# Answer\n\n4", 1))], "3", "found_error"),
]


def test_prm800k_follows_the_chosen_path_and_keeps_neutral_verdicts(empty_workspace, tmp_path):
    res = import_file(empty_workspace, write_jsonl(tmp_path / "prm800k.jsonl", PRM))
    assert (res.kind, res.shape, res.rows, res.responses, res.step_labels, res.unlabeled, res.folded) == \
        ("steps", "PRM800K", 6, 5, 9, 1, 3)
    assert res.summary().startswith("Imported 5 of 6 PRM800K rows from prm800k.jsonl: 5 responses with 9 step labels")
    assert "1 row without a labeled step" in res.summary()
    assert stored(empty_workspace) == [
        ("What is 2 + 2?", ["2 + 2 = 4.", "Let me check.", "# Answer\n4"], [1, 0, 1]),
        ("What is 3 + 5?", ["3 + 5 is a sum.", "So 3 + 5 = 9."], [1, -1]),  # the pre-generated wrong step
        ("What is 1 + 1?", ["1 + 1 = 2.", "# Answer\n2"], [1, 1]),
        ("What is 5 - 2?", ["5 - 2 = 3.", "Hmm.", "# Answer\n3"], [1]),
        ("What is 6 / 2?", ["6 / 2 = 4."], [-1])]
    # the ground-truth answer is the prompt's `answer` (the answer-key reward reads it); nothing per labeler is kept
    assert [e["prompt_extra"] for e in S.labeled_responses(empty_workspace, "all")] == \
        [{"answer": a} for a in ("4", "8", "2", "3", "3")]
    assert snapshot(empty_workspace)["prompts"] == 5  # the row without a labeled step stored nothing


BAD_PB = [
    ("range.jsonl", [{"problem": "p", "steps": ["a", "b", "c"], "label": 3}], 1,
     "range.jsonl line 2, field 'label': 3 is not a step of this row, which has 3 steps (indexes 0 to 2; -1 when "
     "every step is right)"),
    ("bool.jsonl", [{"problem": "p", "steps": ["a"], "label": True}], 0,
     "bool.jsonl line 1, field 'label': expected the index of the first wrong step (an integer; -1 when every step "
     "is right), got True"),
    ("no_steps.jsonl", [{"problem": "p", "steps": [], "label": -1}], 2,
     "no_steps.jsonl line 3, field 'steps': no steps; a ProcessBench row needs at least one"),
    ("empty_step.jsonl", [{"problem": "p", "steps": ["a", " "], "label": -1}], 1,
     "empty_step.jsonl line 2, field 'steps[1]': empty text"),
    ("no_label.jsonl", [{"problem": "p", "steps": ["a"]}], 1, "no_label.jsonl line 2: missing field 'label'"),
    ("no_problem.jsonl", [{"problem": None, "steps": ["a"], "label": 0}], 3,
     "no_problem.jsonl line 4, field 'problem': missing value"),
]


@pytest.mark.parametrize("name, bad_rows, after, message", BAD_PB, ids=[b[0] for b in BAD_PB])
def test_a_bad_processbench_row_is_refused_with_its_line_and_nothing_is_stored(workspace, tmp_path, name, bad_rows,
                                                                              after, message):
    path = write_jsonl(tmp_path / name, PB[:after] + bad_rows + PB[after:])  # the bad row at line after + 1
    before = snapshot(workspace)
    with pytest.raises(DataError) as e:
        import_file(workspace, path)
    assert str(e.value).startswith(message), str(e.value)
    assert snapshot(workspace) == before


def _broken(k: int, change) -> dict:
    row = json.loads(json.dumps(PRM[k]))
    change(row)
    return row


BAD_PRM = [
    ("rating.jsonl", 1, lambda r: r["label"]["steps"][0]["completions"][0].update(rating=2),
     "rating.jsonl line 2, field 'label.steps[0].completions[0].rating': expected -1, 0, 1 or null, got 2"),
    ("chosen.jsonl", 0, lambda r: r["label"]["steps"][1].update(chosen_completion=3),
     "chosen.jsonl line 1, field 'label.steps[1].chosen_completion': 3 is not one of the step's 1 completions"),
    ("problem.jsonl", 3, lambda r: r["question"].pop("problem"),
     "problem.jsonl line 4, field 'question.problem': missing value"),
    ("label.jsonl", 2, lambda r: r.update(label="found_error"),
     "label.jsonl line 3, field 'label': expected an object, got str"),
    ("steps.jsonl", 5, lambda r: r["label"].pop("steps"), "steps.jsonl line 6: missing field 'label.steps'"),
    ("text.jsonl", 0, lambda r: r["label"]["steps"][2]["completions"][0].update(text="</think>4"),
     "text.jsonl line 1, field 'label.steps[2].completions[0].text': a step holds a <think> or </think> tag"),
    ("human.jsonl", 2, lambda r: r["label"]["steps"][0].update(human_completion={"text": ""}),
     "human.jsonl line 3, field 'label.steps[0].human_completion': empty text"),
]


@pytest.mark.parametrize("name, k, change, message", BAD_PRM, ids=[b[0] for b in BAD_PRM])
def test_a_bad_prm800k_line_is_refused_with_its_line_and_nothing_is_stored(workspace, tmp_path, name, k, change,
                                                                          message):
    rows = list(PRM)
    rows[k] = _broken(k, change)
    before = snapshot(workspace)
    with pytest.raises(DataError) as e:
        import_file(workspace, write_jsonl(tmp_path / name, rows))
    assert str(e.value).startswith(message), str(e.value)
    assert snapshot(workspace) == before


def test_the_cli_import_says_which_shape_it_read(empty_workspace, tmp_path, capsys):
    from rloo_studio.cli import main

    assert main(["import", str(write_jsonl(tmp_path / "pb.jsonl", PB)), "--workspace", str(empty_workspace.root)]) == 0
    assert "Imported 3 ProcessBench rows from pb.jsonl" in capsys.readouterr().out


def test_a_big_prm800k_file_checked_in_parts_stores_what_one_process_stores(tmp_path, monkeypatch):
    """The parts' processes read the new shapes as the one-process read does (check_parts.py), errors included."""
    import os

    from rloo_studio.core.workspace import Workspace
    from rloo_studio.label import check_parts

    rows = [_broken(i % len(PRM), lambda r, i=i: r["question"].update(problem=f"{r['question']['problem']} #{i}"))
            for i in range(60)]
    bad = rows[:40] + [_broken(0, lambda r: r["label"]["steps"][0].update(chosen_completion=-1))] + rows[40:]
    got = []
    for way, threshold in (("parts", 1), ("one", 1 << 60)):
        monkeypatch.setattr(check_parts, "PARALLEL_BYTES", threshold)
        monkeypatch.setattr(check_parts, "MAX_PARTS", 3)
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2})
        ws = Workspace(tmp_path / way)
        with pytest.raises(DataError) as e:
            import_file(ws, write_jsonl(tmp_path / "bad.jsonl", bad))
        res = import_file(ws, write_jsonl(tmp_path / "big.jsonl", rows))
        got.append((str(e.value), res.responses, res.unlabeled, stored(ws)))
    assert got[0] == got[1] and got[0][0].startswith("bad.jsonl line 41, field 'label.steps[0].chosen_completion'")
    assert got[0][1:3] == (50, 10)
