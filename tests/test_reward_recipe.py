"""The demo reward-model recipe that sees the arithmetic (docs/REWARD.md): demo pairs labeled by
the known answer, a held-out split stratified by kind of pair, step-level pairs."""
import json
import random

from rloo_studio.core import demo_task
from rloo_studio.core.paths import DEMO_DATA
from rloo_studio.core.thinking import pair_kind
from rloo_studio.label.demo_data import LABEL_COMMENT, demo_summary
from rloo_studio.reward.job import split_rows, step_rows

RIGHT = "<think>\n7+5+0=12\n\n3+4+1=8\n\n1+1+0=2\n</think>\n\nThe answer is 2812."
SLIP = "<think>\n7+5+0=12\n\n3+4+1=7\n\n1+1+0=2\n</think>\n\nThe answer is 2712."
BARE = "<think>\n\n</think>\n\nThe answer is 2812."
CUT = "<think>\n7+5+0=12\n\n3+4+1=8\n\n1+1+0="


def _pairs():
    return [json.loads(x) for x in (DEMO_DATA / "pairs.jsonl").read_text().splitlines() if x.strip()]


def test_answer_key_pairs_prefer_the_right_reasoned_answer():
    rng = random.Random(0)
    pairs = demo_task.answer_key_pairs("What is 1317 + 1495?", "2812",
                                       [(SLIP, True), (RIGHT, True), (BARE, True), (CUT, False)], rng)
    assert [(p["kind"], p["chosen"], p["rejected"]) for p in pairs] == [("slip", RIGHT, SLIP), ("format", RIGHT, BARE)]
    # No right answer that reasons: nothing can be labeled with confidence.
    assert demo_task.answer_key_pairs("q", "2812", [(SLIP, True), (BARE, True)], rng) == []
    # A cut-off response is never a side, nor one with a tag twice (the parser would read it as reasoning).
    assert demo_task.answer_key_pairs("q", "2812", [(RIGHT, True), (CUT, False)], rng) == []
    twice = "<think></think>\n7+5+0=12\n\n3+4+1=8\n\n1+1+0=2\n</think>\n\nThe answer is 2812."
    assert not demo_task.grade(twice, "2812")["formatted"] and demo_task.grade(RIGHT, "2812")["formatted"]
    assert demo_task.answer_key_pairs("q", "2812", [(twice, True), (BARE, True)], rng) == []


def test_bundled_pairs_follow_the_answer_key():
    """Every bundled demo pair prefers what the known answer prefers: the right answer over a wrong one, else
    the better formed response; and many prompts, not many pairs of a few."""
    pairs = _pairs()
    assert len(pairs) >= 200
    for p in pairs:
        assert demo_task.answer_key_score(p["chosen"], p["answer"]) > demo_task.answer_key_score(p["rejected"],
                                                                                                p["answer"]), p
    assert len({p["prompt"] for p in pairs}) > len(pairs) / 2
    assert all(p[k].count("</think>") == 1 for p in pairs for k in ("chosen", "rejected"))  # each well formed
    assert "not by people" in demo_summary({"labeled_pairs": 3, "candidate_pairs": 1, "prompts": 2})


def test_demo_labels_say_who_labeled_them(workspace):
    rows = workspace.query("SELECT a.name, l.comment, COUNT(*) n FROM labels l JOIN annotators a "
                           "ON a.id = l.annotator_id GROUP BY a.name, l.comment")
    assert [(r["name"], r["comment"], r["n"]) for r in rows] == [("import", LABEL_COMMENT, len(_pairs()))]
    assert demo_task.ANSWER_KEY in LABEL_COMMENT


def test_held_out_split_keeps_the_share_of_each_kind_on_every_seed():
    rows = [{"chosen": RIGHT, "rejected": SLIP if i % 3 else BARE, "i": i} for i in range(101)]
    n_slip = sum(pair_kind(r["chosen"], r["rejected"]) == "both reason" for r in rows)
    seen = set()
    for seed in range(5):
        held, train = split_rows(rows, 0.2, seed)
        assert len(held) == int(101 * 0.2) and len(held) + len(train) == 101
        assert sorted(r["i"] for r in held + train) == list(range(101))
        slips = sum(pair_kind(r["chosen"], r["rejected"]) == "both reason" for r in held)
        assert abs(slips - n_slip * 0.2) < 1, (seed, slips)
        seen.add(tuple(sorted(r["i"] for r in held)))
    assert len(seen) == 5  # each seed draws its own pairs
    assert split_rows(rows, 0.2, 3) == split_rows(rows, 0.2, 3)
    plain, _ = split_rows(rows, 0.2, 0, by_kind=False)
    assert len(plain) == 20


def test_step_pairs_cut_both_sides_after_the_first_step_that_differs():
    rows = [{"prompt": "p", "chosen": RIGHT, "rejected": SLIP, "pair_id": 1},
            {"prompt": "p", "chosen": RIGHT, "rejected": BARE, "pair_id": 2},  # no steps on one side
            {"prompt": "p", "chosen": RIGHT, "rejected": RIGHT.replace("2812", "2813"), "pair_id": 3}]  # same steps
    assert step_rows(rows) == [{"prompt": "p", "chosen": "<think>\n7+5+0=12\n\n3+4+1=8",
                                "rejected": "<think>\n7+5+0=12\n\n3+4+1=7", "pair_id": 1}]
