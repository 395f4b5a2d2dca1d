import sqlite3

import pytest

from rloo_studio.labels import counts, preference_pairs
from rloo_studio.prompts import add_prompt_set, load_prompt_set, prompt_sets
from rloo_studio.workspace import SCHEMA, Workspace


def test_new_workspace_layout_wal_and_schema(empty_workspace):
    ws = empty_workspace
    for d in ("runs", "exports", "uploads"):
        assert (ws.root / d).is_dir()
    assert ws.connect().execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert ws.schema_version() == len(SCHEMA)


def test_reopen_keeps_data_and_does_not_reseed(tmp_path):
    ws = Workspace(tmp_path / "w", seed_demo=True)
    n = counts(ws)["pairs"]
    assert n > 200
    ws2 = Workspace(tmp_path / "w", seed_demo=True)
    assert counts(ws2)["pairs"] == n


def test_newer_schema_is_refused(tmp_path):
    Workspace(tmp_path / "w")
    con = sqlite3.connect(tmp_path / "w" / "studio.db")
    con.execute(f"PRAGMA user_version={len(SCHEMA) + 1}")
    con.commit()
    con.close()
    with pytest.raises(RuntimeError, match="newer than this RLOO Studio"):
        Workspace(tmp_path / "w")


def test_demo_seed(workspace):
    sets = {s["name"]: s["prompts"] for s in prompt_sets(workspace)}
    assert sets["demo-train"] == 500 and sets["demo-heldout"] == 500
    row = load_prompt_set(workspace, "demo-train")[0]
    assert set(row) == {"prompt", "answer"}
    pairs = preference_pairs(workspace)
    assert len(pairs) > 200 and all(p["chosen"] != p["rejected"] for p in pairs)
    c = counts(workspace)
    assert c["pairs"] > c["labeled"]  # unlabeled candidates to label


def test_prompt_set_insert_is_all_or_nothing(empty_workspace):
    with pytest.raises(KeyError):
        add_prompt_set(empty_workspace, "s", [{"prompt": "a"}, {"no_prompt": 1}], "test")
    assert prompt_sets(empty_workspace) == []


def test_run_dir_rejects_paths_outside_runs(empty_workspace):
    with pytest.raises(ValueError):
        empty_workspace.run_dir("../../etc")
    rid = empty_workspace.new_run_id("rloo")
    assert empty_workspace.run_dir(rid).is_dir()
