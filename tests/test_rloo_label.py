"""RLOO completions into labeling: a group of a real run's completions becomes an unlabeled pair in the Label
queue under the source rloo:<run-id>, once; bad picks get plain messages and write nothing."""
import shutil

import pytest
from rloo_run_fixture import shared_root, trained_run

from rloo_studio.core.errors import DataError
from rloo_studio.core.workspace import Workspace
from rloo_studio.label import store as labels
from rloo_studio.rloo.to_label import group, groups, pick_pairs, send_group


@pytest.fixture
def run(tmp_path_factory, tmp_path):
    ws_dir, rid = trained_run(shared_root(tmp_path_factory) / "shared-rloo-run")
    shutil.copytree(ws_dir, tmp_path / "ws")
    return Workspace(tmp_path / "ws"), rid


def _pairs(ws, source):
    return [dict(r) for r in ws.query(
        "SELECT p.id, pr.text AS prompt, ra.text AS a, rb.text AS b, p.source, ra.source AS a_source FROM pairs p "
        "JOIN prompts pr ON pr.id = p.prompt_id JOIN responses ra ON ra.id = p.response_a "
        "JOIN responses rb ON rb.id = p.response_b WHERE p.source = ? ORDER BY p.id", (source,))]


def test_a_group_sent_to_labeling_becomes_a_pair_with_its_source_once(run):
    ws, rid = run
    before = labels.progress(ws)["total"]
    gs = groups(ws, rid)
    assert {g["step"] for g in gs} == {1, 2} and all(g["n"] == 4 for g in gs)
    g = next(g for g in gs if g["spread"])
    res = send_group(ws, rid, g["step"], g["prompt"], "extremes")
    assert (res.added, res.skipped, res.source) == (1, 0, f"rloo:{rid}")
    [p] = _pairs(ws, f"rloo:{rid}")
    rows = group(ws, rid, g["step"], g["prompt"])
    best = max(rows, key=lambda r: r["total"])
    worst = min(rows, key=lambda r: r["total"])
    assert p["prompt"] == g["prompt"] and p["a_source"] == f"rloo:{rid}"
    assert (p["a"], p["b"]) == (best.get("response") or best["completion"],
                                worst.get("response") or worst["completion"])
    assert f"rloo:{rid}" in labels.sources(ws) and labels.progress(ws)["total"] == before + 1
    # it goes through the labeling queue like any pair, unlabeled until a person labels it
    shown = labels.next_pair(ws, "ann", "s1", source=f"rloo:{rid}")
    assert shown.pair_id == p["id"] and shown.source == f"rloo:{rid}" and {shown.left, shown.right} == {p["a"], p["b"]}
    labels.save_label(ws, shown, "ann", "s1", "left")
    assert any(d["pair_id"] == p["id"] for d in labels.preference_pairs(ws))
    # the same group again: nothing new
    again = send_group(ws, rid, g["step"], g["prompt"], "extremes")
    assert (again.added, again.skipped) == (0, 1) and "already in the Label queue" in again.summary()
    assert len(_pairs(ws, f"rloo:{rid}")) == 1


def test_bad_picks_say_so_and_write_nothing(run):
    ws, rid = run
    before = labels.progress(ws)["total"]
    with pytest.raises(DataError, match="There is no RLOO run nope"):
        send_group(ws, "nope", 1, "x")
    with pytest.raises(DataError, match="no completions for that prompt at step 1"):
        send_group(ws, rid, 1, "not a prompt of the run")
    with pytest.raises(DataError, match="not rewarded by a reward model and rule rewards together"):
        send_group(ws, rid, 1, groups(ws, rid)[-1]["prompt"], "disagreement")
    flat = [g for g in groups(ws, rid) if g["spread"] == 0]
    if flat:  # a group whose completions all got the same reward
        with pytest.raises(DataError, match="same reward"):
            send_group(ws, rid, flat[0]["step"], flat[0]["prompt"])
    assert labels.progress(ws)["total"] == before


def _row(text, rm, correct):
    return {"response": text, "rewards": {"correctness": correct, "reward_model": rm}, "total": correct + 0.1 * rm}


def test_disagreement_picks_the_pair_the_reward_model_ranks_against_the_rules():
    rows = [_row("right, liked", 1.0, 1.0), _row("right, disliked", -2.0, 1.0), _row("wrong, liked most", 2.5, 0.0),
            _row("wrong, disliked", -1.0, 0.0)]
    [(first, second)] = pick_pairs(rows, "disagreement", ["correctness", "reward_model"], [1.0, 0.1])
    assert (first["response"], second["response"]) == ("right, disliked", "wrong, liked most")
    agree = [_row("a", 1.0, 1.0), _row("b", -1.0, 0.0)]
    with pytest.raises(DataError, match="agree on every pair"):
        pick_pairs(agree, "disagreement", ["correctness", "reward_model"], [1.0, 0.1])
