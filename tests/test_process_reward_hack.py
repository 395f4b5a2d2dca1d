"""Stopping early is no way to earn process reward: a completion that never closed its reasoning, or wrote no answer
after it, earns 0 unless process_reward_unfinished asks otherwise, and the run warns (kept with it) when unfinished
completions are paid more than finished ones or their share grows. The completions are the ones a demo run paid
near-top process reward in 2026-12 (the best of its group, advantage +0.138)."""
import pytest

from rloo_studio.core.paths import DEMO_MODEL
from rloo_studio.rloo.health import warnings
from rloo_studio.rloo.process_reward import finished, make_process_reward

CUT = ["<think>\n6+7+0=", "<think>\n3+9+0=1b", "<think>\n8+6+0=14\n\n7+2+1=10\n\n1+8+1=10\n",
       "<think>\n8+6+0=14\n\n7+2+1=10\n\n1+8+1=10\n</think>\n\n"]  # closed, but no answer after it
DONE = ["<think>\n8+6+0=14\n\n7+2+1=10\n\n1+8+1=10\n</think>\n\nThe answer is 1004."]
PROMPT = "Add 178 and 826."


@pytest.fixture(scope="module")
def scorer():
    """A process reward model over the demo model (its head as loaded): the gate is what is tested, not its
    judgement; every step gets a probability in (0, 1)."""
    from rloo_studio.core.models import load_token_cls, load_tokenizer
    from rloo_studio.inspect.process import ProcessScorer

    model, tok = load_token_cls(str(DEMO_MODEL))
    return ProcessScorer(model.eval(), tok, "test"), load_tokenizer(str(DEMO_MODEL))


def test_what_is_finished():
    assert [finished(c) for c in CUT] == [False] * 4 and finished(DONE[0])


def test_unfinished_completions_earn_no_process_reward_unless_asked(scorer):
    prm, policy_tok = scorer
    logged = {}
    texts = CUT + DONE

    def call(pay):
        fn = make_process_reward(prm, policy_tok, "min", pay_unfinished=pay)
        return fn(prompts=[PROMPT] * len(texts), completions=texts, completion_ids=[[]] * len(texts),
                  log_metric=logged.__setitem__)

    paid, asked = call(False), call(True)
    assert paid[:4] == [0.0] * 4 and paid[4] > 0  # the finished response keeps what the model gives it
    assert all(a > 0 for a in asked[:3]) and asked[4] == paid[4]  # asked: the model's own probabilities
    assert logged["process/unfinished"] == pytest.approx(4 / 5)
    assert logged["process/finished_reward"] == pytest.approx(paid[4])
    assert logged["process/unfinished_reward"] == pytest.approx(sum(asked[:4]) / 4)  # the last call paid them


def _recs(share, cut_paid, done_paid):
    return [{"step": s, "reward": 0.5, "process/unfinished": share(s), "process/unfinished_reward": cut_paid,
             "process/finished_reward": done_paid} for s in range(1, 11)]


def test_the_run_warns_when_stopping_early_pays_or_spreads():
    said = warnings(_recs(lambda s: 0.02, 0.98, 0.61))
    assert any("Unfinished completions (reasoning never closed, or no answer after it) earn more process reward "
               "than finished ones (0.98 against 0.61" in w for w in said), said
    said = warnings(_recs(lambda s: 0.01 * s * s, 0.0, 0.6))
    assert any("Unfinished completions grew from 11% to 66%" in w for w in said), said
    assert not any("nfinished" in w for w in warnings(_recs(lambda s: 0.01, 0.0, 0.6)))  # paid nothing, rare


def test_the_filter_leaves_out_what_outcome_and_process_disagree_on(scorer):
    """PROF's consistency filter: a right answer whose steps the model doubts, or a wrong one whose steps it trusts,
    gets None from every reward (TRL then gives it no advantage); what they agree on keeps its rewards."""
    from rloo_studio.core.rule_rewards import make_correctness_reward
    from rloo_studio.rloo.process_reward import consistent, filtered

    prm, policy_tok = scorer
    fn = make_process_reward(prm, policy_tok, "min")
    texts = DONE + ["<think>\n8+6+0=14\n\n7+2+1=10\n\n1+8+1=10\n</think>\n\nThe answer is 1003.", CUT[0]]
    answers = ["1004"] * len(texts)
    scored, done, right = fn.batch([PROMPT] * 3, texts, answers)
    assert right == [1.0, 0.0, 0.0] and done == [True, True, False]
    keep = consistent(scored, done, right)
    logged = {}
    correctness = make_correctness_reward(policy_tok)
    gated = [filtered(f, fn.batch) for f in (correctness, fn)]
    out = [g(prompts=[PROMPT] * 3, completions=texts, answer=answers, log_metric=logged.__setitem__) for g in gated]
    assert [g.__name__ for g in gated] == ["correctness", "process_reward"]  # as TRL logs them
    for values, plain in zip(out, ([1.0, 0.0, 0.0], fn(prompts=[PROMPT] * 3, completions=texts, answer=answers))):
        assert [v for v, k in zip(values, keep) if k] == [p for p, k in zip(plain, keep) if k]
        assert all(v is None for v, k in zip(values, keep) if not k)
    assert keep[2]  # unfinished, no answer, no process reward: outcome and process agree, it stays
    assert logged["process/filtered"] == pytest.approx(1 - sum(keep) / 3)


@pytest.mark.train
def test_an_rloo_run_with_the_filter_gives_what_it_leaves_out_no_advantage(workspace):
    """Through TRL: the completions the filter leaves out have no reward at all and an advantage of 0 in the run's
    samples, and the share logged as process/filtered is theirs."""
    from prm_run_fixture import doubting_prm_run

    from rloo_studio.core.model_options import LoraSpec
    from rloo_studio.rloo.completions import read_samples
    from rloo_studio.rloo.config import RlooJobConfig
    from rloo_studio.rloo.job import train_rloo
    from rloo_studio.runs.runner import JobRunner, read_metrics

    prm = doubting_prm_run(workspace, PROMPT, DONE[0])
    cfg = RlooJobConfig(max_steps=2, rewards=["correctness", "process_reward"], reward_weights=[1.0, 0.0],
                        process_reward_run=prm, process_reward_filter=True, per_device_train_batch_size=16,
                        num_generations=4, max_completion_length=48, lora=LoraSpec(r=4, alpha=8), save_steps=100)
    r = JobRunner(workspace)
    rid = r.submit("rloo", cfg, train_rloo)
    assert r.wait(rid, 900) == "completed", r.status(rid)
    rows = read_samples(workspace.run_dir(rid))
    out = [s for s in rows if all(v is None for v in s["rewards"].values())]
    assert out and all(s["advantage"] == 0 for s in out)  # (7 of 32 with this model and seed)
    logged = {m["step"]: m["process/filtered"] for m in read_metrics(workspace.run_dir(rid)) if "process/filtered" in m}
    for step, share in logged.items():
        at = [s for s in rows if s["step"] == step]
        assert share == pytest.approx(sum(s in out for s in at) / len(at)), (step, share)
