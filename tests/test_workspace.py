import sqlite3
from pathlib import Path

import pytest

from rloo_studio.core.workspace import SCHEMA, Workspace
from rloo_studio.label.demo_data import open_workspace
from rloo_studio.label.prompts import add_prompt_set, load_prompt_set, prompt_sets
from rloo_studio.label.store import counts, preference_pairs


def test_new_workspace_layout_wal_and_schema(empty_workspace):
    ws = empty_workspace
    for d in ("runs", "exports", "uploads"):
        assert (ws.root / d).is_dir()
    assert ws.connect().execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert ws.schema_version() == len(SCHEMA)


def test_reopen_keeps_data_and_does_not_reseed(tmp_path):
    ws = open_workspace(tmp_path / "w", demo=True)
    n = counts(ws)["pairs"]
    assert n > 200
    ws2 = open_workspace(tmp_path / "w", demo=True)
    assert counts(ws2)["pairs"] == n


def test_only_a_new_workspace_gets_the_demo(tmp_path):
    from rloo_studio.label.demo_data import has_demo, open_workspace

    assert Workspace(tmp_path / "mine").created and not Workspace(tmp_path / "mine").created
    assert not has_demo(open_workspace(tmp_path / "mine", demo=True))  # already there: a user's data stays the user's
    assert has_demo(open_workspace(tmp_path / "new", demo=True)) and not has_demo(open_workspace(tmp_path / "plain"))


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


def test_only_the_default_workspace_or_demo_flag_gets_the_demo(tmp_path):
    from rloo_studio.core.paths import DEFAULT_WORKSPACE
    from rloo_studio.label.demo_data import wants_demo

    assert wants_demo(None) and wants_demo(DEFAULT_WORKSPACE) and wants_demo(str(DEFAULT_WORKSPACE) + "/")
    assert not wants_demo(tmp_path / "mine") and wants_demo(tmp_path / "mine", demo=True)
    ws = Workspace(tmp_path / "mine")
    assert counts(ws) == {"pairs": 0, "labeled": 0} and prompt_sets(ws) == []


def test_loading_the_demo_twice_adds_it_once(empty_workspace):
    from rloo_studio.label.demo_data import has_demo, seed_demo

    assert not has_demo(empty_workspace)
    added = seed_demo(empty_workspace)
    assert added["labeled_pairs"] == 237 and added["candidate_pairs"] == 80
    tables = ("pairs", "labels", "prompts", "responses", "prompt_sets")
    before = {t: empty_workspace.query(f"SELECT COUNT(*) FROM {t}")[0][0] for t in tables}
    assert seed_demo(empty_workspace) is None and has_demo(empty_workspace)
    assert {t: empty_workspace.query(f"SELECT COUNT(*) FROM {t}")[0][0] for t in tables} == before
    assert before["pairs"] == 317


def test_cli_import_into_a_new_workspace_exports_only_the_users_rows(tmp_path):
    import json
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    src = tmp_path / "my.jsonl"
    src.write_text("".join(json.dumps({"prompt": f"q{i}", "chosen": f"good {i}", "rejected": f"bad {i}"}) + "\n"
                           for i in range(75)))
    env = {**os.environ, "RLOO_STUDIO_NO_UNSLOTH": "1"}

    def cli(*args):
        r = subprocess.run([sys.executable, "-m", "rloo_studio", *args], cwd=root, capture_output=True, text=True,
                           timeout=300, env=env)
        assert r.returncode == 0, r.stderr
        return r

    out = tmp_path / "out.jsonl"
    cli("import", str(src), "--workspace", str(tmp_path / "new"))
    cli("export", "--workspace", str(tmp_path / "new"), "--out", str(out))
    assert len(out.read_text().splitlines()) == 75
    cli("import", str(src), "--workspace", str(tmp_path / "demo"), "--demo")  # asked for: the demo comes too
    assert counts(Workspace(tmp_path / "demo"))["pairs"] == 317 + 75


def test_an_older_workspace_gets_its_label_counts_and_orders_on_upgrade(tmp_path, demo_data, monkeypatch):
    from rloo_studio.core.workspace import statements
    from rloo_studio.label.demo_data import seed_demo

    root = tmp_path / "old"
    root.mkdir()
    con = sqlite3.connect(root / "studio.db")
    for script in SCHEMA[:1]:  # a workspace from before pair_order and the per-pair counts
        for stmt in statements(script):
            con.execute(stmt)
    con.execute("PRAGMA user_version=1")
    con.execute("INSERT INTO annotators (id, name, created) VALUES (9, 'ann', 0)")
    con.commit()
    con.close()
    with monkeypatch.context() as m:
        m.setattr(Workspace, "migrate", lambda self: None)  # open it without upgrading, to write old data
        old = Workspace(root)
        seed_demo(old, demo_data)
        with old.transaction() as c:
            c.execute("INSERT INTO labels (pair_id, annotator_id, choice, a_shown_left, created) "
                      "VALUES (300, 9, 'b', 0, 1)")
            c.execute("INSERT INTO labels (pair_id, annotator_id, choice, a_shown_left, created) "
                      "VALUES (301, 9, 'skip', 1, 1)")
        old.connect().close()
    ws = Workspace(root)
    assert ws.schema_version() == len(SCHEMA)
    got = {r[0]: tuple(r[1:]) for r in ws.query(
        "SELECT id, n_human, n_import, n_skip, n_a, n_b FROM pairs WHERE id IN (1, 300, 301)")}
    assert got == {1: (0, 1, 0, 1, 0), 300: (1, 0, 0, 0, 1), 301: (0, 0, 1, 0, 0)}
    assert [tuple(r) for r in ws.query("SELECT pair_id, a_shown_left FROM pair_order ORDER BY pair_id")] == \
        [(300, 0), (301, 1)]


def test_processes_opening_a_new_workspace_at_once_all_get_it(tmp_path):
    """Several processes (the ranks of one `accelerate launch`) create and open one new workspace at the same
    moment: none fails with 'database is locked', and each one's write is kept."""
    import subprocess
    import sys
    from pathlib import Path

    from rloo_studio.core.workspace import Workspace

    root = tmp_path / "new-ws"
    code = ("import sys, time; from rloo_studio.core.workspace import Workspace\n"
            "t = float(sys.argv[2]); time.sleep(max(0, t - time.time()))\n"
            "ws = Workspace(sys.argv[1]); ws.set_setting('opened-by-' + sys.argv[3], 1)\n")
    import time

    at = time.time() + 1.5  # all start together, well after the interpreters are up
    procs = [subprocess.Popen([sys.executable, "-c", code, str(root), str(at), str(i)],
                              cwd=Path(__file__).resolve().parent.parent, stderr=subprocess.PIPE, text=True)
             for i in range(4)]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, errors
    ws = Workspace(root)
    assert [ws.setting(f"opened-by-{i}", "") for i in range(4)] == ["1"] * 4


def test_the_demos_step_labels_load_once_under_the_rollouts_and_change_nothing_else(workspace):
    import json

    from rloo_studio.core.demo_task import step_labels
    from rloo_studio.core.paths import DEMO_DATA
    from rloo_studio.label.demo_data import STEP_LABELS, seed_demo_steps
    from rloo_studio.label.steps import ROLLOUTS, labeled_responses

    bundled = [json.loads(x) for x in (DEMO_DATA / STEP_LABELS).read_text().splitlines()]
    tables = ("pairs", "labels", "prompt_sets")
    before = {t: workspace.query(f"SELECT COUNT(*) FROM {t}")[0][0] for t in tables}
    assert seed_demo_steps(workspace) == len(bundled) >= 500
    stored = labeled_responses(workspace, "rollouts")
    assert len(stored) == len(bundled) and {r["annotator"] for r in stored} == {ROLLOUTS}
    assert labeled_responses(workspace, "people") == []  # never a person's
    by_text = {r["response"]: r for r in stored}
    for row in bundled:
        got = by_text[row["response"]]
        assert got["labels"] == row["verdicts"] and got["prompt_extra"]["answer"] == row["answer"]
        assert -1 not in got["labels"][:-1]  # labeling a response stops at its first bad step
    # the slipping policy slips: a good share of its responses has a wrong step, by the rollouts and by the truth
    bad = sum(-1 in r["verdicts"] for r in bundled)
    truly = sum(False in step_labels(r["prompt"], r["response"]) for r in bundled)
    assert 0.25 <= bad / len(bundled) <= 0.75 and 0.25 <= truly / len(bundled) <= 0.75, (bad, truly)
    assert seed_demo_steps(workspace) is None and len(labeled_responses(workspace, "rollouts")) == len(bundled)
    after = {t: workspace.query(f"SELECT COUNT(*) FROM {t}")[0][0] for t in tables}
    assert after == {**before, "prompt_sets": before["prompt_sets"] + 1}  # demo-steps; no pair or pair label added
