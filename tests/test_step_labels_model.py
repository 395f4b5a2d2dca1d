"""Step labeling with a process reward model beside it, and the final answer as one more thing to judge: the model's
verdicts accepted with one key are the person's labels marked accepted (one undo takes them back, agreement figures
leave them out); the answer's label is kept apart from the steps' (training and export read the steps only); the
queue takes sources in turn, or the model's least certain first."""
import pytest

from rloo_studio.core.errors import DataError
from rloo_studio.label import agreement
from rloo_studio.label import steps as S
from rloo_studio.label.demo_data import seed_demo_steps

GOOD, NEUTRAL, BAD = 1, 0, -1


def current(ws, name):
    return {(r[0], r[1]): (r[2], r[3]) for r in ws.query(
        "SELECT sl.response_id, sl.step, sl.verdict, sl.accepted FROM step_labels sl JOIN annotators a "
        "ON a.id = sl.annotator_id WHERE a.name=? AND sl.superseded=0", (name,))}


def test_the_final_answer_is_judged_after_the_last_step_and_training_reads_the_steps_only(workspace, tmp_path):
    from rloo_studio.label.exporting import export_steps
    from rloo_studio.prm.data import step_targets

    r = S.next_response(workspace, "ans", order="stored")
    rid, n = r["response_id"], r["total_steps"]
    for k in range(n):
        S.label_step(workspace, rid, k, GOOD, "ans")
    r = S.next_response(workspace, "ans")  # every step right, the answer not judged yet: the same response, at it
    assert (r["response_id"], r["step"], r["answer_step"]) == (rid, n, n)
    assert S.progress(workspace, "ans")["started"] == 1
    S.label_step(workspace, rid, n, BAD, "ans")  # right steps, wrong answer
    assert S.progress(workspace, "ans")["finished"] == 1 and S.next_response(workspace, "ans")["response_id"] != rid
    [e] = S.labeled_responses(workspace, "ans")
    assert e["labels"] == [GOOD] * n and e["answer_label"] == BAD  # the answer apart from the steps
    assert step_targets(len(e["steps"]), e["labels"], "wrong") == [1] * n  # training: the steps' labels only
    assert export_steps(workspace, tmp_path / "ans.jsonl", who="ans").steps == n
    # After one's own bad step, the answer is not labeled either.
    r2 = S.next_response(workspace, "ans")
    S.label_step(workspace, r2["response_id"], 0, BAD, "ans")
    with pytest.raises(DataError, match="after step 1, which you marked bad"):
        S.label_step(workspace, r2["response_id"], r2["total_steps"], GOOD, "ans")


def test_accepted_verdicts_are_the_persons_labels_marked_and_one_undo_takes_them_all_back(workspace):
    r = S.next_response(workspace, "acc", order="stored")
    rid = r["response_id"]
    S.label_step(workspace, rid, 0, GOOD, "acc", model_p=0.9, model_run="prm-x")  # their own, the model beside
    S.accept_steps(workspace, rid, "acc", [(1, GOOD, 0.8), (2, BAD, 0.1)], "prm-x")
    assert current(workspace, "acc") == {(rid, 0): (GOOD, 0), (rid, 1): (GOOD, 1), (rid, 2): (BAD, 1)}
    assert S.progress(workspace, "acc")["finished"] == 1  # the model's first doubted step, accepted: finished
    assert [tuple(x) for x in workspace.query("SELECT step, model_p, model_run FROM step_labels WHERE response_id=? "
                                              "ORDER BY step", (rid,))] == [(0, .9, "prm-x"), (1, .8, "prm-x"),
                                                                           (2, .1, "prm-x")]
    [e] = S.labeled_responses(workspace, "acc")
    assert e["labels"] == [GOOD, GOOD, BAD] and e["accepted"] == [False, True, True]
    assert S.labeled_responses(workspace, "acc", accepted=False)[0]["labels"] == [GOOD]  # the model's left out
    assert S.undo_step(workspace, "acc") == (rid, 1)  # the whole acceptance, in one undo
    assert current(workspace, "acc") == {(rid, 0): (GOOD, 0)}
    S.accept_steps(workspace, rid, "acc", [(1, GOOD, 0.8), (2, GOOD, 0.7)], "prm-x")
    assert S.response_view(workspace, "acc", rid)["step"] == 3  # the model trusted the rest: the answer is theirs


@pytest.mark.parametrize("proposal, message", [
    ([], "nothing to accept"),
    ([(0, GOOD, .9), (2, GOOD, .9)], "consecutive steps"),
    ([(0, BAD, .1), (1, GOOD, .9)], "ending at the first bad one"),
    ([(3, GOOD, .9)], "Step index 3 is out of range"),  # the model does not judge the answer
    ([(0, 2, .9)], "not 2"),
])
def test_bad_acceptances_are_refused_in_words_and_store_nothing(workspace, proposal, message):
    rid = S.next_response(workspace, "refused", order="stored")["response_id"]
    with pytest.raises(DataError, match=message):
        S.accept_steps(workspace, rid, "refused", proposal, "prm-x")
    assert current(workspace, "refused") == {}


def test_agreement_figures_leave_accepted_verdicts_out(empty_workspace):
    ws = empty_workspace
    text = "<think>1+2=3\n\n3+4=7\n\n7+1=9</think>The answer is 9."
    rid = S.write_rollout_labels(ws, "q1", {}, text, [GOOD, GOOD, GOOD], [1.0, 1.0, 1.0], "s", "rollouts:t")
    rid2 = S.write_rollout_labels(ws, "q2", {}, text, [GOOD, BAD], [1.0, 0.0], "s", "rollouts:t")
    S.label_step(ws, rid, 0, GOOD, "pia", model_p=0.9, model_run="m")
    S.label_step(ws, rid, 1, BAD, "pia", model_p=0.2, model_run="m")  # own, and the model doubted it too
    S.accept_steps(ws, rid2, "pia", [(0, GOOD, 0.9), (1, GOOD, 0.8), (2, GOOD, 0.7)], "m")
    S.label_step(ws, rid2, 3, GOOD, "pia")  # the answer, their own
    ag = S.agreement(ws)  # person vs rollouts: pia's own two labels only (the accepted ones are the model's)
    assert (ag["steps"], ag["share"]) == (2, 0.5)
    assert agreement.step_stats(ws) == [{"name": "pia", "steps": 2, "answers": 1, "accepted": 3, "responses": 2}]
    assert agreement.model_agreement(ws) == [{"name": "pia", "steps": 2, "agree": 1.0, "responses": 1,
                                              "first_agree": 1.0}]
    S.label_step(ws, rid, 1, GOOD, "pia", model_p=0.2, model_run="m")  # a change of mind: now against the model
    got = agreement.model_agreement(ws)[0]
    assert (got["steps"], got["agree"], got["responses"]) == (2, 0.5, 0)  # steps 1-2 of 3: no whole response


def test_the_queue_takes_sources_in_turn_and_the_started_response_first(workspace):
    seed_demo_steps(workspace)  # 681 responses of the slipping policy, stored after 327 of the demo's
    seen = []
    for _ in range(6):
        r = S.next_response(workspace, "turns")
        seen.append(r["source"])
        S.label_step(workspace, r["response_id"], 0, BAD, "turns")
    assert set(seen[:3]) == {"import:pairs.jsonl", "model:demo", "rollouts:bundled"} and seen[3:] == seen[:3]
    stored = S.next_response(workspace, "stored-one", order="stored")
    assert stored["response_id"] == workspace.query("SELECT MIN(response_id) FROM response_steps")[0][0]
    ids = S.unlabeled(workspace, "fresh", order="sources", limit=6)
    assert len(set(ids)) == 6 and ids == sorted(ids, key=ids.index)
    # `prefer` (the model's order) comes first, but a response the person started stays first.
    last = workspace.query("SELECT MAX(response_id) FROM response_steps")[0][0]
    assert S.next_response(workspace, "pref", prefer=[last])["response_id"] == last
    S.label_step(workspace, last, 0, GOOD, "pref")
    assert S.next_response(workspace, "pref", prefer=[ids[0]])["response_id"] == last


def test_the_models_proposal_runs_to_its_first_doubt_and_never_covers_the_answer():
    from rloo_studio.inspect.step_assist import proposal, uncertainty

    view = {"step": 1, "total_steps": 4}
    assert proposal(view, [0.9, 0.8, 0.3, 0.2]) == [(1, GOOD, 0.8), (2, BAD, 0.3)]
    assert proposal(view, [0.9, 0.8, 0.7, 0.9]) == [(1, GOOD, 0.8), (2, GOOD, 0.7), (3, GOOD, 0.9)]
    assert proposal({"step": 4, "total_steps": 4}, [0.9] * 4) == []  # the answer is the person's
    assert proposal(view, None) == [] and proposal({"step": None, "total_steps": 4}, [0.9] * 4) == []
    # Least certain: the step nearest 0.5 among those a person labels (to the first doubted one).
    assert uncertainty([0.9, 0.55, 0.1]) == pytest.approx(0.05)
    assert uncertainty([0.9, 0.1, 0.52]) == pytest.approx(0.4)  # 0.52 comes after the first doubt: not labeled
    assert uncertainty(None) == 1.0


@pytest.mark.train
def test_a_process_model_scores_each_step_once_and_orders_the_queue(workspace):
    from prm_run_fixture import doubting_prm_run

    from rloo_studio.inspect import step_assist

    r = S.next_response(workspace, "model", order="stored")
    rid_run = doubting_prm_run(workspace, r["prompt"], r["response"], doubt=2)
    assert step_assist.newest(workspace) == rid_run and step_assist.check_run(workspace, "none") is None
    with pytest.raises(DataError, match="not in this workspace"):
        step_assist.check_run(workspace, "prm-gone")
    probs = step_assist.scores(workspace, rid_run, [r["response_id"]])[r["response_id"]]
    assert len(probs) == r["total_steps"] and probs[0] > 0.5 > probs[1]
    assert step_assist.proposal(r, probs) == [(0, GOOD, probs[0]), (1, BAD, probs[1])]
    order = step_assist.least_certain(workspace, rid_run, "model")
    got = step_assist.scores(workspace, rid_run, order)
    assert len(order) == step_assist.POOL
    assert [step_assist.uncertainty(got[i]) for i in order] == sorted(step_assist.uncertainty(got[i]) for i in order)
