"""Stepwise supervision files in and out: {prompt, completions (steps), labels (true / false)} as JSONL, Parquet and
`datasets` folders, through the one import path (recognised without a flag) and export_steps."""
import json

import pandas as pd
import pytest

from rloo_studio.core.errors import DataError
from rloo_studio.core.thinking import parse
from rloo_studio.core.workspace import Workspace
from rloo_studio.label import steps as S
from rloo_studio.label.exporting import export_steps
from rloo_studio.label.importing import import_file

ROWS = [
    {"prompt": "What is 12 + 30?", "completions": ["2+0=2", "1+3=4", "So 42."], "labels": [True, True, True],
     "answer": "42"},
    {"prompt": "What is 19 + 5?", "completions": ["9+5=14, write 4 carry 1", "1+0=1", "So 14."],
     "labels": [True, False, False], "answer": "24"},
    {"prompt": "Name an even prime.", "completions": ["Primes: 2, 3, 5.\n\nThe even one is 2."], "labels": [True],
     "answer": "2"},
]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def snapshot(ws):
    return {t: ws.query(f"SELECT COUNT(*) FROM {t}")[0][0] for t in
            ("prompts", "responses", "pairs", "labels", "step_labels", "prompt_sets")}


def imported(ws):
    """(prompt, the labeled steps, their verdicts, prompt columns) of every labeled response, in order."""
    return [(e["prompt"], e["steps"][:len(e["labels"])], e["labels"], e["prompt_extra"])
            for e in S.labeled_responses(ws, "all")]


def test_rows_become_a_response_of_steps_with_imported_labels(empty_workspace, tmp_path):
    res = import_file(empty_workspace, write_jsonl(tmp_path / "prm.jsonl", ROWS))
    assert (res.kind, res.rows, res.responses, res.step_labels, res.prompts, res.folded) == ("steps", 3, 3, 6, 3, 1)
    assert "held a blank line" in res.summary() and "3 responses with 6 step labels" in res.summary()
    got = S.labeled_responses(empty_workspace, "all")
    assert [e["annotator"] for e in got] == [S.IMPORTED] * 3
    # The steps come back from the parser exactly; labels stop at the first False; the answer column is kept.
    assert [parse(e["response"], "blank").steps and [s.text for s in parse(e["response"], "blank").steps]
            for e in got] == [ROWS[0]["completions"], ROWS[1]["completions"], ["Primes: 2, 3, 5.\nThe even one is 2."]]
    assert [e["labels"] for e in got] == [[1, 1, 1], [1, -1], [1]]
    assert [e["prompt_extra"] for e in got] == [{"answer": "42"}, {"answer": "24"}, {"answer": "2"}]
    assert got[0]["response"] == "<think>\n2+0=2\n\n1+3=4\n\nSo 42.\n</think>"
    # A person labeling steps is offered those responses too, with no labels of their own yet.
    assert S.next_response(empty_workspace, "gus")["steps"] == ROWS[0]["completions"]


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet", ""])
def test_round_trip_gives_the_same_steps_and_labels(workspace, tmp_path, suffix):
    import_file(workspace, write_jsonl(tmp_path / "prm.jsonl", ROWS))
    r = S.next_response(workspace, "hal")  # a person's labels, neutral among them, go out too
    S.label_step(workspace, r["response_id"], 0, 0, "hal")
    S.label_step(workspace, r["response_id"], 1, -1, "hal")
    out = tmp_path / f"steps{suffix or '_ds'}"
    res = export_steps(workspace, out)
    assert (res.rows, res.steps) == (4, 8) and out.name in res.summary()
    ws2 = Workspace(tmp_path / "ws2")
    back = import_file(ws2, out)
    assert (back.kind, back.rows, back.skipped) == ("steps", 4, 0)
    # Neutral counts as right: it comes back as good (+1).
    want = [(p, steps, [1 if v >= 0 else -1 for v in labels], extra) for p, steps, labels, extra in imported(workspace)]
    assert sorted(imported(ws2), key=str) == sorted(want, key=str)
    if suffix == ".jsonl":
        rows = [json.loads(x) for x in out.read_text().splitlines()]
        assert all(set(r) == {"prompt", "completions", "labels", "answer"} for r in rows)
        assert all(isinstance(v, bool) for r in rows for v in r["labels"])


def test_export_by_whom(workspace, tmp_path):
    import_file(workspace, write_jsonl(tmp_path / "prm.jsonl", ROWS))
    with pytest.raises(DataError, match="No step labels to export yet by people"):
        export_steps(workspace, tmp_path / "people.jsonl", who="people")
    assert not (tmp_path / "people.jsonl").exists()
    r = S.next_response(workspace, "ida")
    S.label_step(workspace, r["response_id"], 0, 1, "ida")
    assert export_steps(workspace, tmp_path / "people.jsonl", who="people").rows == 1
    assert export_steps(workspace, tmp_path / "ida.jsonl", who="ida").rows == 1
    assert export_steps(workspace, tmp_path / "all.jsonl").rows == 4


def test_the_shape_is_recognised_in_parquet_and_datasets_folders(empty_workspace, tmp_path):
    pd.DataFrame(ROWS).to_parquet(tmp_path / "prm.parquet")
    assert import_file(empty_workspace, tmp_path / "prm.parquet").kind == "steps"
    from datasets import Dataset

    Dataset.from_list([{**r, "prompt": r["prompt"] + " (ds)"} for r in ROWS]).save_to_disk(str(tmp_path / "prm_ds"))
    res = import_file(empty_workspace, tmp_path / "prm_ds")
    assert (res.kind, res.responses) == ("steps", 3)
    assert len(S.labeled_responses(empty_workspace)) == 6


def test_importing_again_skips_the_rows_already_there(empty_workspace, tmp_path):
    path = write_jsonl(tmp_path / "prm.jsonl", ROWS + [ROWS[0]])
    first = import_file(empty_workspace, path)
    assert (first.responses, first.skipped, first.repeated) == (3, 1, 1)
    before = snapshot(empty_workspace)
    again = import_file(empty_workspace, path)
    assert (again.responses, again.skipped, again.step_labels) == (0, 4, 0)
    assert "skipped 4 rows already in the workspace" in again.summary()
    assert "skipped 1 repeated in the file" in first.summary()
    assert snapshot(empty_workspace) == {**before, "prompt_sets": before["prompt_sets"]}
    # Other labels for a response already there: the stored ones are kept, and the summary says so.
    changed = [{**ROWS[0], "labels": [True, False, True]}]
    res = import_file(empty_workspace, write_jsonl(tmp_path / "other.jsonl", changed))
    assert (res.skipped, res.differ) == (1, 1) and "with other labels than the stored ones" in res.summary()
    kept = import_file(empty_workspace, path, keep_duplicates=True)
    assert kept.responses == 4 and len(S.labeled_responses(empty_workspace)) == 7


def test_a_rollouts_response_gets_the_imported_labels_beside_its_own(empty_workspace, tmp_path):
    row = ROWS[0]
    response = "<think>\n" + "\n\n".join(row["completions"]) + "\n</think>"
    rid = S.write_rollout_labels(empty_workspace, row["prompt"], {}, response, [1, 1], [1.0, 0.75], "r", "rollouts:x")
    res = import_file(empty_workspace, write_jsonl(tmp_path / "prm.jsonl", [row]))
    assert (res.responses, res.labeled) == (0, 1) and "already here without imported step labels" in res.summary()
    assert {(e["response_id"], e["annotator"]) for e in S.labeled_responses(empty_workspace)} == {
        (rid, S.ROLLOUTS), (rid, S.IMPORTED)}


BAD = [
    ("lengths.jsonl", [{"prompt": "p", "completions": ["a", "b"], "labels": [True]}], 1,
     "lengths.jsonl line 2: 2 completions (steps) but 1 labels; give one label per step"),
    ("ints.jsonl", [{"prompt": "p", "completions": ["a", "b"], "labels": [1, 0]}], 0,
     "ints.jsonl line 1, field 'labels[0]': expected true or false, got 1 (0 and 1 are numbers: write true or false)"),
    ("text_label.jsonl", [{"prompt": "p", "completions": ["a"], "labels": ["yes"]}], 1,
     "text_label.jsonl line 2, field 'labels[0]': expected true or false, got 'yes'"),
    ("empty_step.jsonl", [{"prompt": "p", "completions": ["a", "  "], "labels": [True, True]}], 1,
     "empty_step.jsonl line 2, field 'completions[1]': empty text"),
    ("no_steps.jsonl", [{"prompt": "p", "completions": [], "labels": []}], 1,
     "no_steps.jsonl line 2, field 'completions': no steps; a stepwise row needs at least one"),
    ("tag.jsonl", [{"prompt": "p", "completions": ["a</think>b"], "labels": [True]}], 1,
     "tag.jsonl line 2, field 'completions[0]': a step holds a <think> or </think> tag"),
    ("not_list.jsonl", [{"prompt": "p", "completions": "one step", "labels": [True]}], 1,
     "not_list.jsonl line 2, field 'completions': expected a list of step texts, got str"),
    ("no_labels_field.jsonl", [{"prompt": "p", "completions": ["a"]}], 1,
     "no_labels_field.jsonl line 2: missing field 'labels'"),
]


@pytest.mark.parametrize("name, bad_rows, after, message", BAD, ids=[b[0] for b in BAD])
def test_malformed_files_are_refused_with_the_line_and_nothing_changes(workspace, tmp_path, name, bad_rows, after,
                                                                      message):
    rows = ROWS[:after] + bad_rows + ROWS[after:]  # the bad row at line after + 1
    path = write_jsonl(tmp_path / name, rows)
    before = snapshot(workspace)
    with pytest.raises(DataError) as e:
        import_file(workspace, path)
    assert str(e.value).startswith(message), str(e.value)
    assert snapshot(workspace) == before


def test_a_malformed_parquet_file_names_its_row(empty_workspace, tmp_path):
    pd.DataFrame(ROWS + [{"prompt": "p", "completions": ["a", "b"], "labels": [True], "answer": "x"}]).to_parquet(
        tmp_path / "bad.parquet")
    with pytest.raises(DataError, match=r"^bad.parquet row 4: 2 completions \(steps\) but 1 labels"):
        import_file(empty_workspace, tmp_path / "bad.parquet")
    assert snapshot(empty_workspace)["responses"] == 0


def test_a_big_file_imports(empty_workspace, tmp_path):
    rows = [{"prompt": f"What is {i} + {i}?", "completions": [f"{i}+{i}={2 * i}", f"So {2 * i}."],
             "labels": [True, i % 3 != 0], "answer": str(2 * i)} for i in range(12_000)]
    path = write_jsonl(tmp_path / "big.jsonl", rows)
    seen = []
    res = import_file(empty_workspace, path, progress=lambda f, what: seen.append(f))
    assert (res.kind, res.rows, res.responses, res.step_labels) == ("steps", 12_000, 12_000, 24_000)
    assert seen == sorted(seen) and seen[-1] <= 1.0
    assert snapshot(empty_workspace)["step_labels"] == 24_000
    again = import_file(empty_workspace, path)
    assert (again.responses, again.skipped) == (0, 12_000)


def test_the_cli_import_recognises_the_shape(empty_workspace, tmp_path, capsys):
    from rloo_studio.cli import main

    path = write_jsonl(tmp_path / "prm.jsonl", ROWS)
    main(["import", str(path), "--workspace", str(empty_workspace.root)])
    assert "Imported 3 stepwise rows from prm.jsonl" in capsys.readouterr().out
    assert len(S.labeled_responses(Workspace(empty_workspace.root))) == 3


def test_a_big_file_checked_in_parts_stores_what_one_process_stores(tmp_path, monkeypatch):
    import os

    from rloo_studio.label import check_parts

    rows = [{**ROWS[i % 3], "prompt": f"{ROWS[i % 3]['prompt']} #{i}"} for i in range(300)]
    bad = rows[:200] + [{"prompt": "p", "completions": ["a"], "labels": [0]}] + rows[200:]
    got = []
    for way, threshold in (("parts", 1), ("one", 1 << 60)):
        monkeypatch.setattr(check_parts, "PARALLEL_BYTES", threshold)
        monkeypatch.setattr(check_parts, "MAX_PARTS", 3)
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2})
        ws = Workspace(tmp_path / way)
        with pytest.raises(DataError) as e:
            import_file(ws, write_jsonl(tmp_path / "bad.jsonl", bad))
        res = import_file(ws, write_jsonl(tmp_path / "big.jsonl", rows))
        got.append((str(e.value), res.responses, res.folded, imported(ws)))
    assert got[0] == got[1] and got[0][0].startswith("bad.jsonl line 201, field 'labels[0]'")
    assert got[0][1:3] == (300, 100)
