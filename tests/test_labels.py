import random

import pytest

from rloo_studio.label import agreement as A
from rloo_studio.label import store as L


def _fresh_pair_ids(ws, n=None):
    return [r[0] for r in ws.query("SELECT id FROM pairs WHERE source='demo-candidates' ORDER BY id")][:n]


def test_label_a_b_tie_skip_and_randomization_record(workspace):
    rng = random.Random(0)
    sides, lefts = ["left", "right", "tie", "skip"], []
    for side in sides:
        s = L.next_pair(workspace, "ann", "s1", rng=rng)
        lefts.append(s.a_shown_left)
        L.save_label(workspace, s, "ann", "s1", side, comment=f"c-{side}")
    rows = workspace.query(
        "SELECT l.choice, l.a_shown_left, l.comment FROM labels l JOIN annotators a ON a.id=l.annotator_id "
        "WHERE a.name='ann' ORDER BY l.id")
    assert [r["comment"] for r in rows] == [f"c-{s}" for s in sides]
    assert [bool(r["a_shown_left"]) for r in rows] == lefts
    # 'left' means response_a exactly when A was shown on the left.
    assert rows[0]["choice"] == ("a" if lefts[0] else "b")
    assert rows[1]["choice"] == ("b" if lefts[1] else "a")
    assert [r["choice"] for r in rows[2:]] == ["tie", "skip"]


def test_choice_maps_displayed_side_to_stored_response(workspace):
    s = L.next_pair(workspace, "ann", "s1")
    a_text = workspace.query("SELECT r.text FROM pairs p JOIN responses r ON r.id=p.response_a WHERE p.id=?",
                             (s.pair_id,))[0][0]
    assert (s.left if s.a_shown_left else s.right) == a_text


def test_unlabeled_queue_skips_imported_and_own_labels(workspace):
    first = L.next_pair(workspace, "ann", "s1")
    assert first.source == "demo-candidates"  # pairs nobody labeled come before imported ones
    L.release(workspace, "s1")
    seen = set()
    while (s := L.next_pair(workspace, "ann", "s1")) is not None:
        assert s.pair_id not in seen
        seen.add(s.pair_id)
        L.save_label(workspace, s, "ann", "s1", "left")
    # Imported demo pairs are already labeled by 'import' but still wait for a human label.
    assert len(seen) == L.progress(workspace)["total"]
    assert L.progress(workspace, "ann")["mine"] == len(seen)


def test_two_sessions_never_get_the_same_pair(workspace):
    a = L.next_pair(workspace, "ann", "tab1")
    b = L.next_pair(workspace, "ann", "tab2")
    c = L.next_pair(workspace, "bob", "tab3")
    assert len({a.pair_id, b.pair_id, c.pair_id}) == 3
    # Reloading the same session shows the same claimed pair again.
    assert L.next_pair(workspace, "ann", "tab1").pair_id == a.pair_id


def test_overlap_two_gives_each_pair_to_two_annotators(workspace):
    L.set_overlap(workspace, 2)
    a = L.next_pair(workspace, "ann", "s1")
    b = L.next_pair(workspace, "bob", "s2")
    assert a.pair_id == b.pair_id
    c = L.next_pair(workspace, "cat", "s3")
    assert c.pair_id != a.pair_id  # two already hold it
    L.save_label(workspace, a, "ann", "s1", "left")
    L.save_label(workspace, b, "bob", "s2", "right")
    assert L.next_pair(workspace, "cat", "s3").pair_id == c.pair_id
    with pytest.raises(ValueError):
        L.set_overlap(workspace, 0)


def test_undo_withdraws_and_relabel_supersedes(workspace):
    s1 = L.next_pair(workspace, "ann", "s")
    L.save_label(workspace, s1, "ann", "s", "left")
    s2 = L.next_pair(workspace, "ann", "s")
    L.save_label(workspace, s2, "ann", "s", "tie")
    before = L.progress(workspace, "ann")["mine"]
    back = L.undo(workspace, "ann", "s")
    assert back.pair_id == s2.pair_id and back.a_shown_left == s2.a_shown_left
    assert L.progress(workspace, "ann")["mine"] == before - 1
    # The undone pair is what this session sees next; label it differently.
    again = L.next_pair(workspace, "ann", "s")
    assert again.pair_id == s2.pair_id
    L.save_label(workspace, again, "ann", "s", "right")
    current = workspace.query("SELECT choice FROM labels l JOIN annotators a ON a.id=l.annotator_id "
                              "WHERE pair_id=? AND superseded=0 AND a.name='ann'", (s2.pair_id,))
    assert [r[0] for r in current] == [again.choice_for("right")]
    history = workspace.query("SELECT COUNT(*) FROM labels l JOIN annotators a ON a.id=l.annotator_id "
                              "WHERE pair_id=? AND a.name='ann'", (s2.pair_id,))[0][0]
    assert history == 2  # nothing is deleted
    assert L.undo(workspace, "nobody", "x") is None


def test_human_label_overrides_import(workspace):
    pid = L.preference_pairs(workspace)[0]["pair_id"]
    before = {p["pair_id"]: p for p in L.preference_pairs(workspace)}[pid]
    s = L.Shown(pid, "", "", "", True, "demo-pairs", None, None)
    L.save_label(workspace, s, "ann", "s", "right")  # response_b better, against the import
    after = {p["pair_id"]: p for p in L.preference_pairs(workspace)}[pid]
    assert after["chosen"] == before["rejected"] and after["rejected"] == before["chosen"]


def test_filters_and_flags(workspace):
    s = L.next_pair(workspace, "ann", "s")
    L.save_label(workspace, s, "ann", "s", "skip")
    t = L.next_pair(workspace, "ann", "s")
    L.save_label(workspace, t, "ann", "s", "tie")
    L.release(workspace, "s")
    assert L.next_pair(workspace, "bob", "b", filter="skipped").pair_id == s.pair_id
    L.release(workspace, "b")
    assert L.next_pair(workspace, "bob", "b", filter="ties").pair_id == t.pair_id
    L.release(workspace, "b")
    flagged = L.preference_pairs(workspace)[5]["pair_id"]
    L.flag_for_relabel(workspace, flagged, "reward model disagrees")
    shown = L.next_pair(workspace, "bob", "b", filter="flagged")
    assert shown.pair_id == flagged and shown.flag == "reward model disagrees"
    L.release(workspace, "b")
    assert L.next_pair(workspace, "bob", "b").pair_id == flagged  # flagged pairs come first
    assert L.next_pair(workspace, "cy", "c", source="nope") is None
    with pytest.raises(ValueError, match="unknown filter"):
        L.next_pair(workspace, "cy", "c", filter="odd")
    with pytest.raises(KeyError):
        L.flag_for_relabel(workspace, 10**9, "x")


def test_annotator_name_required_and_import_reserved(workspace):
    with pytest.raises(ValueError, match="enter your name"):
        L.next_pair(workspace, "  ", "s")
    with pytest.raises(ValueError, match="reserved"):
        L.next_pair(workspace, "import", "s")


def test_kappa_and_agreement(workspace):
    assert A.cohen_kappa(list("aabb"), list("aabb")) == 1.0
    assert A.cohen_kappa(list("abab"), list("baba")) == -1.0
    # Hand-computed: po = 3/4, pe = (2*3 + 2*1)/16 = 0.5 -> kappa = 0.5
    assert A.cohen_kappa(list("aabb"), list("aaab")) == pytest.approx(0.5)
    L.set_overlap(workspace, 3)
    choices = {"ann": ["left", "left", "right", "tie"], "bob": ["left", "right", "right", "tie"]}
    for i in range(4):
        shown = {n: L.next_pair(workspace, n, n) for n in choices}
        assert len({s.pair_id for s in shown.values()}) == 1
        for n, s in shown.items():
            side = choices[n][i]
            # Give both annotators the same underlying choice when their displayed sides agree.
            stored_side = side if side == "tie" or s.a_shown_left else {"left": "right", "right": "left"}[side]
            L.save_label(workspace, s, n, n, stored_side)
    ag = A.agreement(workspace)
    assert ag["annotators"] == ["ann", "bob"] and ag["shared_pairs"] == 4
    assert ag["raw"] == pytest.approx(0.75)
    expected = A.cohen_kappa(["a", "a", "b", "tie"], ["a", "b", "b", "tie"])
    assert ag["kappa"] == pytest.approx(expected)
    # A third annotator: raw agreement over all annotator pairs, no single kappa.
    s = L.next_pair(workspace, "cat", "cat")
    L.save_label(workspace, s, "cat", "cat", "left" if s.a_shown_left else "right")
    ag3 = A.agreement(workspace)
    assert ag3["kappa"] is None and len(ag3["pairs"]) == 3


def test_prefer_order_for_active_labeling(workspace):
    ids = _fresh_pair_ids(workspace)
    order = [ids[5], ids[2], ids[9]]
    got = []
    for _ in range(4):
        s = L.next_pair(workspace, "ann", "s", prefer=order)
        got.append(s.pair_id)
        L.save_label(workspace, s, "ann", "s", "skip")
    assert got[:3] == order and got[3] not in order  # then the usual order


def test_progress_counts_people_apart_from_imports_and_skips_are_not_labels(workspace):
    p0 = L.progress(workspace, "ann")
    imported = workspace.query("SELECT COUNT(DISTINCT pair_id) FROM labels")[0][0]
    assert (p0["human_labeled"], p0["imported_only"], p0["labeled"], p0["skipped"]) == (0, imported, imported, 0)
    s = L.next_pair(workspace, "ann", "s")
    L.save_label(workspace, s, "ann", "s", "skip")
    t = L.next_pair(workspace, "ann", "s")
    L.save_label(workspace, t, "ann", "s", "left")
    p = L.progress(workspace, "ann")
    assert (p["human_labeled"], p["skipped"], p["labeled"], p["mine"], p["my_skips"]) == (1, 1, imported + 1, 1, 1)
    # A person's label on an imported pair moves it from 'imported only' to 'labeled by people'.
    pid = L.preference_pairs(workspace)[0]["pair_id"]
    L.save_label(workspace, L.Shown(pid, "", "", "", True, "demo-pairs", None, None), "bob", "b", "tie")
    q = L.progress(workspace)
    assert (q["human_labeled"], q["imported_only"], q["labeled"]) == (2, imported - 1, imported + 1)
    assert A.annotator_stats(workspace) == [{"name": "ann", "labels": 1, "skips": 1},
                                            {"name": "bob", "labels": 1, "skips": 0}]


def test_ab_order_is_drawn_once_per_pair_and_annotator(workspace):
    first = L.next_pair(workspace, "ann", "s0", rng=random.Random(1))
    for seed in range(30):  # other sessions, other random draws: the same order every time
        L.release(workspace, f"s{seed}")
        again = L.next_pair(workspace, "ann", f"s{seed + 1}", rng=random.Random(seed))
        assert again.pair_id == first.pair_id and again.a_shown_left == first.a_shown_left
        assert again.left == first.left
    # Skipped, then come back to it under the 'skipped' filter: still the same order.
    L.save_label(workspace, again, "ann", f"s{seed + 1}", "skip")
    back = L.next_pair(workspace, "ann", "other", filter="skipped", rng=random.Random(99))
    assert back.pair_id == first.pair_id and back.a_shown_left == first.a_shown_left
    # Annotators draw their own orders: over 40 pairs both orders occur for bob.
    orders = []
    for _ in range(40):
        s = L.next_pair(workspace, "bob", "b")
        orders.append(s.a_shown_left)
        L.save_label(workspace, s, "bob", "b", "skip")
    assert 5 < sum(orders) < 35


def test_a_label_only_for_the_pair_on_screen(workspace):
    s = L.next_pair(workspace, "ann", "s")
    n = workspace.query("SELECT COUNT(*) FROM labels")[0][0]
    for screen in ("", None, str(s.pair_id + 1), "#"):
        assert L.save_on_screen(workspace, s, screen, "ann", "s", "left") is None
    assert L.save_on_screen(workspace, None, str(s.pair_id), "ann", "s", "left") is None
    assert workspace.query("SELECT COUNT(*) FROM labels")[0][0] == n  # nothing saved
    lid = L.save_on_screen(workspace, s, str(s.pair_id), "ann", "s", "left")
    assert workspace.query("SELECT pair_id FROM labels WHERE id=?", (lid,))[0][0] == s.pair_id


def test_flag_sends_a_pair_back_and_moves_on(workspace):
    s = L.next_pair(workspace, "ann", "s")
    L.flag_pair(workspace, s, "ann", "s", "both answers wrong")
    row = workspace.query("SELECT flag FROM pairs WHERE id=?", (s.pair_id,))[0]
    assert row["flag"] == "both answers wrong"
    (lab,) = workspace.query("SELECT l.choice, l.comment FROM labels l JOIN annotators a ON a.id = l.annotator_id "
                             "WHERE a.name='ann' AND l.pair_id=? AND l.superseded=0", (s.pair_id,))
    assert (lab["choice"], lab["comment"]) == ("skip", "both answers wrong")
    assert L.next_pair(workspace, "ann", "s").pair_id != s.pair_id  # the flagger moves on
    b = L.next_pair(workspace, "bob", "b")
    assert b.pair_id == s.pair_id and b.flag == "both answers wrong"  # first in everyone else's queue
    L.save_label(workspace, b, "bob", "b", "left")
    assert workspace.query("SELECT flag FROM pairs WHERE id=?", (s.pair_id,))[0][0] is None
    t = L.next_pair(workspace, "cy", "c")
    L.flag_pair(workspace, t, "cy", "c")
    assert workspace.query("SELECT flag FROM pairs WHERE id=?", (t.pair_id,))[0][0] == "flagged by cy"


RECOUNT = """SELECT p.id, p.n_human, p.n_import, p.n_skip, p.n_tie,
  (SELECT COUNT(*) FROM labels l JOIN annotators a ON a.id = l.annotator_id WHERE l.pair_id = p.id
     AND l.superseded = 0 AND l.choice != 'skip' AND a.name != 'import') AS human,
  (SELECT COUNT(*) FROM labels l JOIN annotators a ON a.id = l.annotator_id WHERE l.pair_id = p.id
     AND l.superseded = 0 AND l.choice != 'skip' AND a.name = 'import') AS import_,
  (SELECT COUNT(*) FROM labels l WHERE l.pair_id = p.id AND l.superseded = 0 AND l.choice = 'skip') AS skip,
  (SELECT COUNT(*) FROM labels l WHERE l.pair_id = p.id AND l.superseded = 0 AND l.choice = 'tie') AS tie,
  p.n_a, (SELECT COUNT(*) FROM labels l WHERE l.pair_id = p.id AND l.superseded = 0 AND l.choice = 'a') AS a,
  p.n_b, (SELECT COUNT(*) FROM labels l WHERE l.pair_id = p.id AND l.superseded = 0 AND l.choice = 'b') AS b
  FROM pairs p"""


def test_per_pair_label_counts_follow_every_write(workspace):
    rng = random.Random(3)
    L.set_overlap(workspace, 3)
    for k in range(60):
        name = rng.choice(["ann", "bob", "cy"])
        s = L.next_pair(workspace, name, name, filter=rng.choice(["unlabeled", "unlabeled", "labeled", "all"]))
        if s is None:
            continue
        op = rng.random()
        if op < 0.15:
            L.flag_pair(workspace, s, name, name, "check")
        else:
            L.save_label(workspace, s, name, name, rng.choice(["left", "right", "tie", "skip"]))
        if op > 0.85:
            L.undo(workspace, name, name)
        L.release(workspace, name)
    rows = workspace.query(RECOUNT)
    assert all((r["n_human"], r["n_import"], r["n_skip"], r["n_tie"], r["n_a"], r["n_b"]) ==
               (r["human"], r["import_"], r["skip"], r["tie"], r["a"], r["b"]) for r in rows)
    assert sum(r["n_a"] for r in rows) > 237 and sum(r["n_b"] for r in rows) > 0
    assert sum(r["n_human"] for r in rows) > 10 and sum(r["n_import"] for r in rows) == 237


def test_overlap_finishes_started_pairs_before_new_ones(workspace):
    L.set_overlap(workspace, 2)
    first = L.next_pair(workspace, "ann", "s1")
    second = L.next_pair(workspace, "ann", "s2")
    L.save_label(workspace, second, "ann", "s2", "left")
    L.release(workspace, "s1")
    assert L.next_pair(workspace, "bob", "b").pair_id == second.pair_id != first.pair_id
