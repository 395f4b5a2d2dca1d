"""What the model sees, for a completion of a real RLOO run rewarded by a reward model (1 step on the demo):
the policy's view starts with the prompt ids TRL generated from, and the reward model's view is the input
the RLOO reward-model reward scores."""
import pytest
from rloo_run_fixture import reward_model_run

pytestmark = pytest.mark.train


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return reward_model_run(tmp_path_factory.mktemp("view-rm-run"), "think_format", 1)


def test_picked_completion_as_the_policy_and_the_reward_model_read_it(run):
    from rloo_studio.core.paths import DEMO_MODEL
    from rloo_studio.inspect.model_input import tokenizer
    from rloo_studio.rloo import completions, health
    from rloo_studio.rloo.completions import read_samples
    from rloo_studio.rloo.rewards import make_reward_model_reward

    ws, rid = run
    samples = read_samples(ws.run_dir(rid), last_steps=health.WINDOW)
    picks = completions.completion_picks(samples)
    assert len(picks) == len(samples) == 8 and picks[0][0] == "step 1 · group 1 · #1"
    sample = completions.picked_sample(samples, picks[0][1])
    policy, rm = completions.model_views(ws, rid, sample)
    tok = tokenizer(str(DEMO_MODEL))
    trl_prompt = tok.apply_chat_template([[{"role": "user", "content": sample["prompt"]}]], add_generation_prompt=True,
                                         tokenize=True, return_dict=True)["input_ids"][0]
    assert policy.ids[:len(trl_prompt)] == list(trl_prompt) and policy.count("prompt") == len(trl_prompt)
    assert policy.count("end") == (0 if sample["truncated"] else 1)
    assert rm.who == "reward model" and "reward run reward-seeded" in rm.model
    # the reward model shares the policy's tokenizer: RLOO scores the prompt ids + the completion ids + EOS
    completion_ids = tok(sample["completion"], add_special_tokens=False)["input_ids"]
    scored = make_reward_model_reward(None, tok, tok).inputs([sample["prompt"]], None, [completion_ids])[0]
    assert rm.ids == scored
