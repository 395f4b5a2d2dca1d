"""A big JSONL file is checked by one process per core (label/check_parts.py): what it stores and every error it
gives are those of a check in one process. PARALLEL_BYTES is lowered so that small files are cut into parts."""
import json
import os

import pytest

from rloo_studio.core.errors import DataError
from rloo_studio.core.workspace import Workspace
from rloo_studio.label import check_parts, importing

TABLES = {"prompts": "id, set_id, text, extra", "responses": "id, prompt_id, text",
          "pairs": "id, prompt_id, response_a, response_b, dedup_key, n_import, n_a, n_b, n_human",
          "labels": "id, pair_id, annotator_id, choice"}


def stored(ws) -> dict:
    return {t: [tuple(r) for r in ws.query(f"SELECT {c} FROM {t} ORDER BY id")] for t, c in TABLES.items()}


def import_both_ways(tmp_path, monkeypatch, lines: list[str], name="f.jsonl", parts=3):
    """Import the lines in parts and in one process, each into a new workspace: (result or error, stored) each."""
    src = tmp_path / name
    src.write_text("".join(line + "\n" for line in lines))
    out = []
    for way, threshold in (("parts", 1), ("one", 1 << 60)):
        monkeypatch.setattr(check_parts, "PARALLEL_BYTES", threshold)
        monkeypatch.setattr(check_parts, "MAX_PARTS", parts)
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(parts)))
        ws = Workspace(tmp_path / way)
        said = []
        try:
            res = importing.import_file(ws, src, progress=lambda f, text: said.append(text))
        except DataError as e:
            res = str(e)
        assert not list(ws.root.glob("import-*")), "a spool was left in the workspace"
        out.append((res, stored(ws), said))
    assert check_parts.parts_for(src) == 1  # (the threshold is back: the file is small)
    return out


def row(i: int, **k) -> str:
    return json.dumps({"prompt": f"q{i % 40}", "chosen": f"right {i}", "rejected": f"wrong {i}", "answer": str(i), **k})


@pytest.mark.parametrize("kind", ["preference", "candidates"])
def test_a_file_checked_in_parts_stores_what_one_process_stores(tmp_path, monkeypatch, kind):
    if kind == "preference":
        lines = [row(i) for i in range(300)] + [""] + [row(i) for i in range(250)]  # repeats, a blank line
    else:
        lines = [json.dumps({"prompt": f"q{i % 50}", "responses": [f"r{i}", f"s{i}", f"t{i % 7}"]}) for i in range(400)]
    (parts, in_parts, said), (one, in_one, _) = import_both_ways(tmp_path, monkeypatch, lines)
    assert parts == one and in_parts == in_one and in_parts["pairs"]
    assert any("in 3 parts" in s for s in said), said  # the progress says it, and it was cut in 3


def test_the_first_bad_line_of_the_file_is_the_error_and_nothing_is_written(tmp_path, monkeypatch):
    lines = [row(i) for i in range(600)]
    lines[450] = '{"prompt": "q", "chosen": "x"'  # cut off, in the last part
    lines[420] = json.dumps({"prompt": "q", "chosen": "x"})  # no 'rejected', earlier in the same part
    lines[500] = json.dumps({"prompt": "q", "chosen": "x", "rejected": 5})
    (parts, in_parts, _), (one, in_one, _) = import_both_ways(tmp_path, monkeypatch, lines)
    assert parts == one == "f.jsonl line 421: missing field 'rejected'"
    assert in_parts == in_one and not in_parts["pairs"] and not in_parts["prompts"]
    lines[100] = "[1, 2]"  # in the first part: it comes first
    (tmp_path / "again").mkdir()
    (parts, _, _), (one, _, _) = import_both_ways(tmp_path / "again", monkeypatch, lines)
    assert parts == one == "f.jsonl line 101: expected a JSON object with named fields, got list"


def test_a_file_of_more_rows_than_allowed_is_refused_in_parts_too(tmp_path, monkeypatch):
    from rloo_studio.label import reading

    monkeypatch.setattr(check_parts, "MAX_ROWS", 200)
    monkeypatch.setattr(reading, "MAX_ROWS", 200)
    (parts, in_parts, _), (one, _, _) = import_both_ways(tmp_path, monkeypatch, [row(i) for i in range(201)])
    assert parts == one == "f.jsonl: more than 200 rows; split the file" and not in_parts["pairs"]
