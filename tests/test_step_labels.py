"""Step labels: a person's verdicts on the <think> steps of a response, the queue of responses to label, undo,
the rollouts' automatic labels, the readers for training, and agreement between a person and the rollouts."""
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rloo_studio.core.errors import DataError
from rloo_studio.core.thinking import parse
from rloo_studio.core.workspace import SCHEMA, Workspace, statements
from rloo_studio.label import steps as S
from rloo_studio.label.demo_data import open_workspace

ROOT = Path(__file__).resolve().parent.parent
GOOD, NEUTRAL, BAD = S.VERDICTS["good"], S.VERDICTS["neutral"], S.VERDICTS["bad"]


def current(ws, name):
    """{(response, step): verdict} of the annotator's current step labels."""
    return {(r[0], r[1]): r[2] for r in ws.query(
        "SELECT sl.response_id, sl.step, sl.verdict FROM step_labels sl JOIN annotators a ON a.id = sl.annotator_id "
        "WHERE a.name=? AND sl.superseded=0", (name,))}


def count(ws):
    return {t: ws.query(f"SELECT COUNT(*) FROM {t}")[0][0] for t in ("step_labels", "responses", "annotators")}


def test_response_steps_are_the_parsers_steps_for_every_shape():
    for text in ("<think>a\n\nb</think>answer", "a\n\nb</think>answer", "no tags at all", "<think>a\n\nb",
                 "<think>a</think>x<think>b\n\nc</think>y"):
        assert S.response_steps(text) == [s.text for s in parse(text, "blank").steps]
    assert S.response_steps("<think>a\n\nb\n \nc</think>x") == ["a", "b", "c"]


def test_labeling_a_demo_response_to_its_first_bad_step_finishes_it(workspace):
    first = S.next_response(workspace, "ann", order="stored")
    assert first["total_steps"] == len(first["steps"]) >= 3 and first["step"] == 0 and first["done"] == 0
    assert first["answer_text"].startswith("The answer is") and first["labels"] == [None] * (first["total_steps"] + 1)
    assert first["answer_step"] == first["total_steps"]  # the final answer: one more thing to judge, after the steps
    rid = first["response_id"]
    S.label_step(workspace, rid, 0, GOOD, "ann")
    again = S.next_response(workspace, "ann")  # started and not finished: the same response, at its next step
    assert (again["response_id"], again["step"], again["labels"][:2]) == (rid, 1, [GOOD, None])
    S.label_step(workspace, rid, 1, BAD, "ann")  # the first wrong step ends it
    nxt = S.next_response(workspace, "ann")
    assert nxt["response_id"] != rid and nxt["step"] == 0 and nxt["total_steps"] >= 1
    p = S.progress(workspace, "ann")
    assert (p["finished"], p["finished_today"], p["started"], p["steps"], p["steps_today"]) == (1, 1, 0, 2, 2)
    assert p["responses"] == workspace.query("SELECT COUNT(*) FROM response_steps")[0][0] > 300
    [mine] = S.labeled_responses(workspace, "ann")
    assert (mine["response_id"], mine["labels"], mine["soft"], mine["annotator"]) == (rid, [GOOD, BAD], [None, None],
                                                                                      "ann")
    assert mine["prompt_extra"]["answer"] and mine["steps"] == first["steps"]
    assert mine["accepted"] == [False, False] and mine["answer_label"] is None
    # Another person starts at the beginning, with no labels of their own.
    other = S.next_response(workspace, "bea", order="stored")
    assert other["response_id"] == rid and other["labels"] == [None] * (other["total_steps"] + 1)


def test_responses_without_steps_are_never_offered(workspace):
    seen = set()
    for _ in range(6):
        r = S.next_response(workspace, "walker")
        assert r["steps"] and r["response_id"] not in seen
        seen.add(r["response_id"])
        S.label_step(workspace, r["response_id"], 0, BAD, "walker")
    no_steps = {x[0] for x in workspace.query("SELECT id FROM responses WHERE text LIKE '%<think>' || char(10) || "
                                               "char(10) || '</think>%'")}
    assert no_steps and not seen & no_steps


def test_relabel_bad_cut_and_undo_restore_exactly(workspace):
    r = S.next_response(workspace, "u1")
    rid, n = r["response_id"], r["total_steps"]
    S.label_step(workspace, rid, 0, GOOD, "u1")
    S.label_step(workspace, rid, 1, NEUTRAL, "u1")
    S.label_step(workspace, rid, 2, GOOD, "u1")
    S.label_step(workspace, rid, 1, GOOD, "u1")  # a change of mind
    assert current(workspace, "u1") == {(rid, 0): GOOD, (rid, 1): GOOD, (rid, 2): GOOD}
    S.label_step(workspace, rid, 0, BAD, "u1")  # bad: the later steps are no longer credited
    assert current(workspace, "u1") == {(rid, 0): BAD}
    with pytest.raises(DataError, match="after step 1, which you marked bad"):
        S.label_step(workspace, rid, 2, GOOD, "u1")
    assert S.undo_step(workspace, "u1") == (rid, 0)  # the bad verdict taken back: what it replaced and cut returns
    assert current(workspace, "u1") == {(rid, 0): GOOD, (rid, 1): GOOD, (rid, 2): GOOD}
    assert S.undo_step(workspace, "u1") == (rid, 1)  # the change of mind taken back: the neutral returns
    assert current(workspace, "u1") == {(rid, 0): GOOD, (rid, 1): NEUTRAL, (rid, 2): GOOD}
    assert S.undo_step(workspace, "u1") == (rid, 2)
    assert S.undo_step(workspace, "u1") == (rid, 1) and S.undo_step(workspace, "u1") == (rid, 0)
    assert current(workspace, "u1") == {} and S.undo_step(workspace, "u1") is None
    assert S.undo_step(workspace, "nobody-yet") is None
    assert n >= 3


@pytest.mark.parametrize("step, verdict, who, message", [
    (99, 1, "p", "Step index 99 is out of range: response #1 has 3 steps (indexes 0 to 2) and its final answer "
                 "(index 3)"),
    (4, 1, "p", "Step index 4 is out of range"),
    (-1, 1, "p", "Step index -1 is out of range"),
    (0, 2, "p", "verdict is 1 (good), 0 (neutral) or -1 (bad), not 2"),
    (0, True, "p", "not True"),
    (0, 1, "  ", "Enter your name first"),
    (0, 1, S.ROLLOUTS, "kept for the labels the rollouts compute"),
    (0, 1, "import", "kept for imported labels"),
])
def test_bad_labels_are_refused_in_words_and_change_nothing(workspace, step, verdict, who, message):
    before = count(workspace)
    with pytest.raises(DataError, match=re.escape(message)):
        S.label_step(workspace, 1, step, verdict, who)
    assert count(workspace) == before


def test_a_response_that_is_not_there_is_refused(workspace):
    with pytest.raises(DataError, match="Response #999999 is not in this workspace"):
        S.label_step(workspace, 999999, 0, GOOD, "p")
    with pytest.raises(DataError, match="kept for the labels the rollouts compute"):
        S.next_response(workspace, S.ROLLOUTS)


def test_new_responses_join_the_queue_as_they_come(empty_workspace):
    ws = empty_workspace
    assert S.next_response(ws, "p") is None and S.progress(ws, "p")["responses"] == 0
    rid = S.write_rollout_labels(ws, "Add 1 and 2.", {"answer": "3"}, "<think>1+2=3\n\nso 3</think>The answer is 3.",
                                 [GOOD], [0.9], "rollouts-set", "rollouts:test")
    r = S.next_response(ws, "p")
    assert (r["response_id"], r["steps"], r["answer_text"], r["labels"]) == (rid, ["1+2=3", "so 3"],
                                                                            "The answer is 3.", [None, None, None])
    assert S.progress(ws, "p")["responses"] == 1


def test_rollout_labels_are_stored_once_and_kept_apart_from_peoples(empty_workspace):
    ws = empty_workspace
    assert S.agreement(ws) == {"steps": 0, "share": None, "people": []}
    text = "<think>3+4=7\n\n7+1=9\n\n9*2=18</think>The answer is 18."
    rid = S.write_rollout_labels(ws, "Compute (3+4+1)*2.", {"answer": "16"}, text, [GOOD, BAD, GOOD], [1.0, 0.0, 0.0],
                                 "rollouts-demo", "rollouts:run-1")
    assert S.write_rollout_labels(ws, "Compute (3+4+1)*2.", {"answer": "16"}, text, [GOOD, BAD, GOOD],
                                  [1.0, 0.0, 0.0], "rollouts-demo", "rollouts:run-1") == rid  # again: no second copy
    assert count(ws)["responses"] == 1 and count(ws)["step_labels"] == 2  # stops at the first bad step
    [auto] = S.labeled_responses(ws, "rollouts")
    assert (auto["labels"], auto["soft"], auto["annotator"], auto["prompt_extra"]) == (
        [GOOD, BAD], [1.0, 0.0], S.ROLLOUTS, {"answer": "16"})
    # New verdicts for the same response replace the rollouts' labels.
    assert S.write_rollout_labels(ws, "Compute (3+4+1)*2.", {"answer": "16"}, text, [GOOD, GOOD], [1.0, 0.5],
                                  "rollouts-demo", "rollouts:run-2") == rid
    assert S.labeled_responses(ws, "rollouts")[0]["labels"] == [GOOD, GOOD]
    # A person labels the same response: their labels are theirs, never mixed with the rollouts'.
    S.label_step(ws, rid, 0, GOOD, "carla")
    S.label_step(ws, rid, 1, BAD, "carla")
    assert [e["annotator"] for e in S.labeled_responses(ws, "people")] == ["carla"]
    assert {e["annotator"] for e in S.labeled_responses(ws, "all")} == {"carla", S.ROLLOUTS}
    assert S.labeled_responses(ws, "carla")[0]["labels"] == [GOOD, BAD]
    ag = S.agreement(ws)
    assert (ag["steps"], ag["share"]) == (2, 0.5) and ag["people"] == [{"name": "carla", "steps": 2, "share": 0.5}]


@pytest.mark.parametrize("verdicts, soft, message", [
    ([GOOD, GOOD, GOOD, GOOD], [1, 1, 1, 1], "has 3 steps, got 4 verdicts"),
    ([GOOD], [1, 1], "got 1 verdicts and 2 soft values"),
    ([2], [1], "not 2"),
    ([GOOD], [1.5], "between 0 and 1"),
])
def test_bad_rollout_labels_are_refused_and_write_nothing(empty_workspace, verdicts, soft, message):
    with pytest.raises(DataError, match=re.escape(message)):
        S.write_rollout_labels(empty_workspace, "q", {}, "<think>a\n\nb\n\nc</think>x", verdicts, soft, "s", "src")
    assert count(empty_workspace) == {"step_labels": 0, "responses": 0, "annotators": 0}


def test_labeled_responses_give_the_labeled_prefix_only(empty_workspace):
    ws = empty_workspace
    rid = S.write_rollout_labels(ws, "q", {}, "<think>a\n\nb\n\nc\n\nd</think>x", [GOOD], [None], "s", "src")
    S.label_step(ws, rid, 0, GOOD, "dan")
    S.label_step(ws, rid, 1, NEUTRAL, "dan")
    S.label_step(ws, rid, 3, GOOD, "dan")  # a gap at step 2: the prefix ends before it
    assert S.labeled_responses(ws, "dan")[0]["labels"] == [GOOD, NEUTRAL]
    S.label_step(ws, rid, 1, GOOD, "eve")  # no label of the first step: nothing to train on
    assert S.labeled_responses(ws, "eve") == []


def test_a_workspace_of_the_previous_schema_gains_step_labels(tmp_path):
    import sqlite3

    con = sqlite3.connect(tmp_path / "studio.db")
    for i, script in enumerate(SCHEMA[:8]):
        for stmt in statements(script):
            con.execute(stmt)
        con.execute(f"PRAGMA user_version={i + 1}")
    con.commit()
    con.close()
    ws = Workspace(tmp_path)
    assert ws.schema_version() == len(SCHEMA) == 10
    rid = S.write_rollout_labels(ws, "q", {}, "<think>a</think>x", [GOOD], [None], "s", "src")
    S.label_step(ws, rid, 0, BAD, "fay")
    assert current(ws, "fay") == {(rid, 0): BAD}


def test_labels_of_schema_9_stay_a_persons_own_in_schema_10(tmp_path):
    """Schema 10 adds accepted / model_p / model_run: a label stored before it reads as the person's own, with no
    model beside it."""
    import sqlite3

    con = sqlite3.connect(tmp_path / "studio.db")
    for i, script in enumerate(SCHEMA[:9]):
        for stmt in statements(script):
            con.execute(stmt)
        con.execute(f"PRAGMA user_version={i + 1}")
    con.executescript("""INSERT INTO prompt_sets VALUES (1, 's', 's', 0);
        INSERT INTO prompts VALUES (1, 1, 'q', '{}');
        INSERT INTO responses VALUES (1, 1, '<think>a' || char(10) || char(10) || 'b</think>x', 's', 0);
        INSERT INTO annotators VALUES (1, 'old', 0);
        INSERT INTO step_labels (response_id, step, verdict, annotator_id, created) VALUES (1, 0, 1, 1, 0);""")
    con.commit()
    con.close()
    ws = Workspace(tmp_path)
    assert ws.schema_version() == 10
    assert [tuple(r) for r in ws.query("SELECT accepted, model_p, model_run FROM step_labels")] == [(0, None, None)]
    [e] = S.labeled_responses(ws, "old", accepted=False)
    assert e["labels"] == [GOOD] and e["accepted"] == [False]


LABELER = """
import sys
sys.path.insert(0, {root!r})
from rloo_studio.label import steps as S
from rloo_studio.core.workspace import Workspace
ws = Workspace({ws!r})
name = sys.argv[1]
while True:
    r = S.next_response(ws, name)
    S.label_step(ws, r["response_id"], r["step"], 1, name)
    print("SAVED", r["response_id"], r["step"], flush=True)  # only after the commit returned
"""


def test_step_labels_survive_sigkill(tmp_path):
    ws_dir = tmp_path / "ws"
    open_workspace(ws_dir, demo=True)
    script = tmp_path / "labeler.py"
    script.write_text(LABELER.format(root=str(ROOT), ws=str(ws_dir)))
    acknowledged = set()
    for i in range(6):
        p = subprocess.Popen([sys.executable, str(script), "killed"], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "RLOO_STUDIO_NO_UNSLOTH": "1"})
        assert p.stdout.readline().startswith("SAVED")
        time.sleep(0.05 * i)
        p.send_signal(signal.SIGKILL)
        out, _ = p.communicate()
        acknowledged |= {(int(a), int(b)) for a, b in re.findall(r"^SAVED (\d+) (\d+)\n", out, re.M)}
        stored = set(current(Workspace(ws_dir), "killed"))
        assert acknowledged <= stored, sorted(acknowledged - stored)[:5]
    assert len(acknowledged) >= 6
