"""Reward-model scoring: one-pass per-step scores equal naive prefix re-scoring; padding, batching, views."""
import json
import math

import pytest

from rloo_studio.core.errors import DataError
from rloo_studio.core.paths import DEMO_MODEL
from rloo_studio.inspect.dataset import PairScore, summarize
from rloo_studio.inspect.scoring import (
    format_text,
    load_scorer,
    naive_step_scores,
    score_json,
    score_responses,
    score_texts,
)
from rloo_studio.label.demo_data import open_workspace
from rloo_studio.reward.config import RewardJobConfig
from rloo_studio.reward.job import train_reward
from rloo_studio.runs.runner import JobRunner

PROMPT = "Add 820 and 634."
RESPONSES = {
    "both tags": "<think>\n4+0+0=4\n\n2+3+0=5\n\n8+6+0=14\n</think>\n\nThe answer is 1454.",
    "only close": "4+0+0=4\n\n2+3+0=5\n\n8+6+0=14\n</think>\n\nThe answer is 1454.",
    "no tags": "The answer is 1454.",
    "unclosed": "<think>\n4+0+0=4\n\n2+3+0=5\n\n8+6+0=1",
}


@pytest.fixture(scope="session")
def trained_ws(tmp_path_factory):
    """A seeded workspace with a reward run trained for 3 steps (its head is no longer the fresh one)."""
    ws = open_workspace(tmp_path_factory.mktemp("scoring") / "ws", demo=True)
    r = JobRunner(ws)
    rid = r.submit("reward", RewardJobConfig(max_steps=3, eval_fraction=0.0, per_device_train_batch_size=8),
                   train_reward)
    assert r.wait(rid, 900) == "completed", r.status(rid)
    ws.trained_run = rid
    return ws


@pytest.fixture(scope="session", params=["trained", "untrained"])
def scorer(request):
    if request.param == "untrained":
        return load_scorer(reward_model=str(DEMO_MODEL))
    ws = request.getfixturevalue("trained_ws")
    return load_scorer(ws, reward_run=ws.trained_run)


@pytest.mark.parametrize("shape", list(RESPONSES))
def test_one_pass_equals_naive_prefix_rescoring(scorer, shape):
    resp = RESPONSES[shape]
    fast = score_responses(scorer, [(PROMPT, resp)])[0]
    ref = naive_step_scores(scorer, PROMPT, resp)
    assert len(fast.steps) == len(ref["steps"]) == (0 if shape == "no tags" else 3)
    for s, r in zip(fast.steps, ref["steps"]):
        assert abs(s.score - r) < 1e-4
        assert resp[s.start : s.end] == s.text
    assert abs(fast.total - ref["total"]) < 1e-4
    # Deltas chain: each step's delta is its score minus the previous step's.
    for a, b in zip(fast.steps, fast.steps[1:]):
        assert b.delta == pytest.approx(b.score - a.score)
    assert fast.closed == (shape in ("both tags", "only close"))
    assert fast.truncated == (shape == "unclosed")
    assert (fast.thinking is None) == (shape == "no tags")
    # The per-token curve ends at EOS, whose score is the total.
    assert fast.token_scores[-1] == fast.total and len(fast.tokens) == len(fast.token_scores)


@pytest.mark.parametrize("split", ["line", "sentence"])
def test_one_pass_equals_naive_for_every_split(scorer, split):
    resp = "<think>\nFirst the units. 4+0=4.\nThen the tens: 2+3=5! Last 8+6=14.\n</think>\nSo 1454."
    fast = score_responses(scorer, [(PROMPT, resp)], split)[0]
    ref = naive_step_scores(scorer, PROMPT, resp, split)
    assert len(fast.steps) == len(ref["steps"]) == (2 if split == "line" else 4)
    assert max(abs(s.score - r) for s, r in zip(fast.steps, ref["steps"])) < 1e-4


def test_trained_head_is_the_adapters(trained_ws):
    """The one-pass path applies the trained score head, not the base model's fresh one."""
    trained = load_scorer(trained_ws, reward_run=trained_ws.trained_run)
    fresh = load_scorer(reward_model=str(DEMO_MODEL))
    assert trained.trained and not fresh.trained and "untrained" in fresh.label
    a = score_responses(trained, [(PROMPT, RESPONSES["both tags"])])[0]
    b = score_responses(fresh, [(PROMPT, RESPONSES["both tags"])])[0]
    assert abs(a.total - b.total) > 1e-3
    # ... and agrees with the PEFT model's own forward (which pools at the last token).
    assert abs(a.total - naive_step_scores(trained, PROMPT, RESPONSES["both tags"])["total"]) < 1e-4


def test_left_and_right_padding_agree(scorer):
    items = [(PROMPT, r) for r in RESPONSES.values()]
    left = score_responses(scorer, items, padding_side="left")
    right = score_responses(scorer, items, padding_side="right")
    for a, b in zip(left, right):
        assert len(a.token_scores) == len(b.token_scores)
        assert max(abs(x - y) for x, y in zip(a.token_scores, b.token_scores)) < 1e-4
        assert (a.answer is None) == (b.answer is None) and (a.answer is None or abs(a.answer - b.answer) < 1e-4)


def test_truncated_response_has_no_answer_alone(scorer):
    """Cut before </think>, a response has no answer: nothing is scored as its answer alone."""
    cut, done = score_responses(scorer, [(PROMPT, "<think>\n3+4=7\n\n5+"), (PROMPT, "<think>\n3+4=7\n</think>\n\n7")])
    assert cut.truncated and cut.answer is None and cut.steps
    assert done.answer is not None


def test_batched_equals_unbatched(scorer):
    items = [(PROMPT, r) for r in RESPONSES.values()] + [("Add 5 and 7.", "<think>\n5+7=12\n</think>\n\n12")]
    batched = score_responses(scorer, items, batch_size=8)
    single = [score_responses(scorer, [it], batch_size=1)[0] for it in items]
    for a, b in zip(batched, single):
        assert abs(a.total - b.total) < 1e-4
        assert [round(s.score, 4) for s in a.steps] == [round(s.score, 4) for s in b.steps]
    totals = score_texts(scorer, [p for p, _ in items], [r for _, r in items], batch_size=3)
    assert all(abs(t - a.total) < 1e-4 for t, a in zip(totals, batched))


def test_text_format_matches_training(scorer):
    """Chat prompt + response + EOS, as TRL's RewardTrainer builds it from reward.job.pair_rows."""
    from rloo_studio.reward.job import pair_rows

    row = pair_rows(scorer.tok, [{"prompt": PROMPT, "chosen": "x", "rejected": "y"}])[0]
    assert format_text(scorer.tok, PROMPT, "x") == row["prompt"] + "x" + scorer.tok.eos_token


def test_answer_alone_and_thinking_scores(scorer):
    s = score_responses(scorer, [(PROMPT, RESPONSES["both tags"]), (PROMPT, "The answer is 1454.")])
    # The answer alone of the response with thinking is the no-tag response's text.
    assert abs(s[0].answer - s[1].total) < 1e-4
    assert s[0].thinking is not None and s[1].thinking is None


def test_score_json_shape(trained_ws):
    out = score_json(trained_ws, reward_run=trained_ws.trained_run, prompt=PROMPT,
                     response=RESPONSES["both tags"], split="blank")
    json.dumps(out)  # serialisable as is
    assert out["trained"] is True and set(out) >= {"total", "answer", "thinking", "steps"}
    assert [set(s) for s in out["steps"]] == [{"text", "start", "end", "score", "delta"}] * 3
    assert out["steps"][0]["text"] == "4+0+0=4"
    line = score_json(reward_model=str(DEMO_MODEL), prompt=PROMPT, response=RESPONSES["both tags"], split="line")
    assert line["trained"] is False and len(line["steps"]) == 3


def test_score_json_bad_choices_say_what_to_do(trained_ws):
    with pytest.raises(DataError, match="Choose one"):
        score_json(trained_ws, prompt=PROMPT, response="x")
    with pytest.raises(DataError, match="No run"):
        score_json(trained_ws, reward_run="reward-nope", prompt=PROMPT, response="x")


def test_summarize_hand_checked():
    pairs = [
        PairScore(1, "p", "aaaa", "bb", 2.0, 1.0),  # margin +1
        PairScore(2, "p", "<think>x</think>aaa", "b", 0.5, 1.5),  # margin -1
        PairScore(3, "p", "<think>xyz</think>a", "bbbbbb", 3.0, 0.0),  # margin +3
        PairScore(4, "p", "a", "b", 0.0, 2.0),  # margin -2
    ]
    v = summarize(pairs, bins=5, top=10)
    assert v.accuracy == 0.5
    assert v.mean_margin == pytest.approx(0.25)
    assert [p.pair_id for p in v.disagreements] == [4, 2]
    # margins -2, -1, +1, +3 over [-2, 3] in 5 bins of width 1
    assert [c for _, _, c in v.histogram] == [1, 1, 0, 1, 1]
    assert v.histogram[0][0] == -2.0 and v.histogram[-1][1] == 3.0
    # score vs response length (chars): x = 4,2,19,1,19,6,1,1 and y = 2,1,.5,1.5,3,0,0,2
    x, y = [4, 2, 19, 1, 19, 6, 1, 1], [2, 1, .5, 1.5, 3, 0, 0, 2]
    mx, my = sum(x) / 8, sum(y) / 8
    r = sum((a - mx) * (b - my) for a, b in zip(x, y)) / math.sqrt(
        sum((a - mx) ** 2 for a in x) * sum((b - my) ** 2 for b in y))
    assert v.length_r == pytest.approx(r)
    # thinking lengths 0,0,1,0,3,0,0,0 correlate with score
    assert v.thinking_r is not None and v.thinking_r > 0
    strong = summarize([PairScore(k, "p", "a" * (10 * k + 10), "a", float(k), -float(k)) for k in range(5)])
    assert strong.warnings and "response length" in strong.warnings[0]


def test_dataset_view_groups_accuracy_by_kind_and_source():
    """Right on every format pair, at chance on the pairs where both sides reason: the groups show it."""
    T = "<think>\n{}\n</think>\n\n{}"
    pairs = [PairScore(1, "p", T.format("1+1=2", "2"), "2", 1.0, 0.0, "demo"),  # only chosen reasons: right
             PairScore(2, "p", T.format("1+2=3", "3"), "3", 1.0, 0.0, "demo"),
             PairScore(3, "p", T.format("2+2=4", "4"), T.format("2+2=5", "5"), 1.0, 0.0, "mine.jsonl"),  # right
             PairScore(4, "p", T.format("2+3=5", "5"), T.format("2+3=6", "6"), 0.0, 1.0, "mine.jsonl")]  # wrong
    g = {(x["by"], x["name"]): (x["pairs"], x["accuracy"]) for x in summarize(pairs).groups}
    assert g == {("kind", "only chosen reasons"): (2, 1.0), ("kind", "both reason"): (2, 0.5),
                 ("source", "demo"): (2, 1.0), ("source", "mine.jsonl"): (2, 0.5)}


def test_dataset_view_on_the_demo_pairs(trained_ws):
    from rloo_studio.inspect.dataset import dataset_view
    from rloo_studio.label.store import preference_pairs

    sc = load_scorer(trained_ws, reward_run=trained_ws.trained_run)
    v = dataset_view(sc, trained_ws, top=5)
    assert len(v.pairs) == len(preference_pairs(trained_ws))
    assert 0 <= v.accuracy <= 1 and sum(c for _, _, c in v.histogram) == len(v.pairs)
    assert v.accuracy == pytest.approx(sum(p.margin > 0 for p in v.pairs) / len(v.pairs))
    assert all(p.margin < 0 for p in v.disagreements) and len(v.disagreements) <= 5
    first = v.pairs[0]
    assert abs(first.chosen_score - score_texts(sc, [first.prompt], [first.chosen])[0]) < 1e-4


def test_the_dataset_view_scores_each_pair_as_the_pair_view_does_and_a_second_look_is_kept(trained_ws):
    """The labeled set scored in token-budget batches, last token only, equals each pair scored on
    its own (the Pair view's path); the scores are kept in the run's folder, a second look scores nothing, a
    stopped scoring keeps what it did and the next one goes on from there, and a new adapter empties the cache."""
    import os

    from rloo_studio.inspect.dataset import Stopped, dataset_view, run_cache, score_labeled
    from rloo_studio.label.store import preference_pairs

    ws, rid = trained_ws, trained_ws.trained_run
    sc = load_scorer(ws, reward_run=rid)
    (ws.run_dir(rid) / "scores.sqlite").unlink(missing_ok=True)
    seen = []
    cache = run_cache(ws, rid, sc)
    view = dataset_view(sc, ws, top=5, cache=cache, progress=seen.append)
    rows = preference_pairs(ws)
    assert [p.pair_id for p in view.pairs] == [r["pair_id"] for r in rows]
    texts = {(r["prompt"], t) for r in rows for t in (r["chosen"], r["rejected"])}
    assert len(cache) == len(texts) and seen[-1].done == seen[-1].total == len(texts) and seen[-1].kept == 0
    for p in view.pairs[:: max(1, len(view.pairs) // 12)]:  # a dozen pairs across the set, each scored alone
        alone = score_responses(sc, [(p.prompt, p.chosen), (p.prompt, p.rejected)], answer_alone=False)
        assert p.chosen_score == pytest.approx(alone[0].total, abs=1e-5)
        assert p.rejected_score == pytest.approx(alone[1].total, abs=1e-5)

    again = []
    second = dataset_view(sc, ws, top=5, cache=cache, progress=again.append)
    assert again == []  # every score read from the cache, nothing scored
    assert [(p.chosen_score, p.rejected_score) for p in second.pairs] == \
           [(p.chosen_score, p.rejected_score) for p in view.pairs]
    cache.close()

    (ws.run_dir(rid) / "scores.sqlite").unlink()
    cache = run_cache(ws, rid, sc)

    def stop_at_the_third_batch(p):
        seen.append(p)
        if len(seen) == 3:
            raise Stopped("stopped")

    seen.clear()
    with pytest.raises(Stopped):
        score_labeled(sc, rows, cache, stop_at_the_third_batch, batch_tokens=1024)
    kept = len(cache)
    assert 0 < kept == seen[-1].done < len(texts)  # the batches scored before the stop, kept
    seen.clear()
    scores = score_labeled(sc, rows, cache, seen.append, batch_tokens=1024)
    assert seen[0].kept == kept and seen[-1].done == len(texts) - kept  # went on from there
    assert [s for pair in scores for s in pair] == \
           pytest.approx([s for p in view.pairs for s in (p.chosen_score, p.rejected_score)], abs=1e-5)
    cache.close()

    adapter = ws.run_dir(rid) / "adapter" / "adapter_model.safetensors"
    st = adapter.stat()
    old = run_cache(ws, rid, sc)  # a scoring under the adapter as it was, still writing after it changed
    os.utime(adapter, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # the run saved its adapter again
    cache = run_cache(ws, rid, sc)
    assert len(cache) == 0
    old.put([(b"k" * 16, 1.0)])
    assert len(cache) == 0 and cache.get([b"k" * 16]) == {}  # the old model's score is never read as the new one's
    cache.close()
    old.close()


def test_the_dataset_views_stop_keeps_what_was_scored_and_the_next_look_goes_on(trained_ws):
    """The Inspect tab's Dataset callback: its progress says how far it is and how long is left; Stop ends it
    after the batch in hand with a plain message; the next look reads the kept scores and scores the rest."""
    from rloo_studio.ui import inspect_tab

    ws, rid = trained_ws, trained_ws.trained_run
    (ws.run_dir(rid) / "scores.sqlite").unlink(missing_ok=True)
    _, token = inspect_tab.start_scoring()  # what the Score button does first (Stop enabled)
    form = inspect_tab.InspectInputs(reward_model=rid, scoring=token)
    said = []

    def stop_at_once(fraction, desc="", unit=""):
        said.append((fraction, desc))
        inspect_tab.stop_dataset(token)  # as the Stop button does, while the first batch is reported

    other = inspect_tab.start_scoring()[1]
    inspect_tab.stop_dataset(other)  # another page's Stop does not end this scoring (it ends at its own)
    summary, hist, rows = inspect_tab.do_dataset(ws, form, progress=stop_at_once)
    assert "Stopped after" in summary and "Their scores are kept" in summary and rows == [], summary
    (done, total), desc = said[0]
    assert 0 < done < total and desc.startswith(f"Scoring {done:,} of {total:,} responses · about ")
    said.clear()
    form = inspect_tab.InspectInputs(reward_model=rid, scoring=inspect_tab.start_scoring()[1])
    summary, hist, rows = inspect_tab.do_dataset(ws, form, progress=lambda f, desc="", unit="": said.append(desc))
    assert "accuracy" in summary.lower() and "<svg" in hist, summary
    assert f"({done:,} kept from an earlier look)" in said[0] and said[-1].startswith(f"Scoring {total - done:,} of")
