"""An RLOO run rewarded by a reward model and a rule reward: the Playground shows the reward model's raw score
beside the rule reward, and a group the reward model ranks against the rule is sent to labeling."""
import pytest
from rloo_run_fixture import reward_model_run

from rloo_studio.core.errors import DataError
from rloo_studio.label import store as labels
from rloo_studio.rloo.completions import read_samples
from rloo_studio.rloo.playground import PlaySettings, play
from rloo_studio.rloo.to_label import groups, send_group


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return reward_model_run(tmp_path_factory.mktemp("rm-run"), "correctness", 2)


def test_playground_shows_the_reward_models_raw_score(run):
    ws, rid = run
    *_, last = play(ws, "Compute 529 + 417.", rid, PlaySettings(max_new_tokens=48))
    for side in last.values():
        assert set(side.rewards) == {"correctness", "reward_model"}
        rm = side.rewards["reward_model"]
        assert isinstance(rm, float) and abs(rm) not in (0.0, 1.0)  # raw, not standardized over the two answers
    assert last["base"].rewards["reward_model"] != last["adapter"].rewards["reward_model"]


def test_the_pair_the_reward_model_ranks_against_the_rule_goes_to_labeling(run):
    ws, rid = run
    rows = read_samples(ws.run_dir(rid))

    def against(g):
        rs = [r for r in rows if r["step"] == g["step"] and r["prompt"] == g["prompt"]]
        return any((a["rewards"]["reward_model"] - b["rewards"]["reward_model"])
                   * (a["rewards"]["correctness"] - b["rewards"]["correctness"]) < 0
                   and (a.get("response") or a["completion"]) != (b.get("response") or b["completion"])
                   for a in rs for b in rs)

    gs = groups(ws, rid)
    with_disagreement = [g for g in gs if against(g)]
    assert with_disagreement, "no group where the reward model and correctness disagree"
    g = with_disagreement[0]
    res = send_group(ws, rid, g["step"], g["prompt"], "disagreement")
    assert res.added == 1
    shown = labels.next_pair(ws, "ann", "s", source=f"rloo:{rid}")
    assert shown is not None and shown.prompt == g["prompt"]
    for g in gs:
        if not against(g):
            with pytest.raises(DataError, match="agree on every pair"):
                send_group(ws, rid, g["step"], g["prompt"], "disagreement")
            break
