"""What the Reward, Inspect, RLOO and Runs tabs do with typed text, checked on the core functions their
callbacks call: a plain message for every bad value, no path built from a typed run id, nothing saved."""
import pytest

from rloo_studio.core.errors import DataError, StudioError
from rloo_studio.core.models import resolve
from rloo_studio.inspect import scoring
from rloo_studio.reward import launch_form as reward_launch_form
from rloo_studio.reward import runs_list as reward_runs_list
from rloo_studio.reward.config import RewardJobConfig
from rloo_studio.rloo import launch_form as rloo_launch_form
from rloo_studio.runs import catalog as runs
from rloo_studio.runs.jobs import KINDS
from rloo_studio.runs.runner import JobRunner

BAD_RUN_IDS = ["../../../etc", "..", "/etc/passwd", "rloo-1/../../x", "a" * 5000, " ", "", "run id with spaces",
               "rloo-20261201-000000"]


@pytest.mark.parametrize("rid", BAD_RUN_IDS)
def test_a_bad_run_id_gets_a_plain_message_and_no_path(empty_workspace, rid):
    with pytest.raises(DataError) as e:
        runs.find_run(empty_workspace, rid, "rloo")
    msg = str(e.value)
    assert "pick" in msg and "Traceback" not in msg and len(msg) < 200
    assert not (empty_workspace.root / "etc").exists()


def test_find_run_checks_the_kind(empty_workspace):
    r = JobRunner(empty_workspace)
    rid = r.submit("generate", {}, lambda cfg, ctx: "done")
    r.wait(rid, 30)
    assert runs.find_run(empty_workspace, rid)["id"] == rid
    assert runs.find_run(empty_workspace, f"  {rid} ", "generate")["id"] == rid
    with pytest.raises(DataError, match=f"There is no RLOO run {rid}"):
        runs.find_run(empty_workspace, rid, "rloo")


def test_a_failed_run_shows_its_message_first_and_the_traceback_apart(empty_workspace):
    def boom(cfg, ctx):
        ctx.log("loading")
        raise DataError("Only 2 labeled pairs with a preference; label at least 4.")

    r = JobRunner(empty_workspace)
    rid = r.submit("reward", {}, boom)
    assert r.wait(rid, 30) == "failed"
    message, tb = runs.failure(empty_workspace, rid)
    assert message.startswith("Only 2 labeled pairs")
    assert tb.startswith("Traceback (most recent call last)") and "DataError" in tb
    tail = reward_runs_list.log_tail(empty_workspace, rid)
    assert "loading" in tail and "Only 2 labeled pairs" in tail and "Traceback" not in tail


def test_split_failure_reads_the_last_failure_only():
    lines = ["10:00:00 reward run x started", "10:00:01 FAILED: first", "Traceback (most recent call last):",
             '  File "a.py", line 1', "ValueError: first", "10:00:02 failed: first",
             "10:01:00 FAILED: second one", "Traceback (most recent call last):", "KeyError: 'b'"]
    assert runs.split_failure(lines) == ("second one", "Traceback (most recent call last):\nKeyError: 'b'")
    assert runs.split_failure(["10:00:00 all fine"]) == ("", "")
    assert runs.without_traceback(lines) == ["10:00:00 reward run x started", "10:00:01 FAILED: first",
                                             "10:00:02 failed: first", "10:01:00 FAILED: second one"]


def test_ticking_a_reward_gives_it_a_weight_and_unticking_removes_it():
    tick = rloo_launch_form.weights_after_tick
    assert tick(["correctness"], ["correctness", "think_format"], "1.0") == "1.0, 1.0"
    assert tick(["correctness", "think_format"], ["think_format"], "2.0, 0.5") == "0.5"
    assert tick(["a", "b"], ["a", "b", "c"], "0.3, 0.7") == "0.3, 0.7, 1.0"
    assert tick(["a", "b"], ["b", "a"], "0.3, 0.7") == "0.7, 0.3"  # each reward keeps its own weight
    assert tick([], ["a"], "") == "1.0"
    assert tick(["a", "b"], [], "1, 2") == ""
    # the weights the tab then sends are valid: one per reward
    fields = rloo_launch_form.form_fields()
    vals = rloo_launch_form.form_values(KINDS["rloo"].preset_config("demo-cpu"))
    keys = [f.key for f in fields]
    vals[keys.index("rewards")] = ["correctness", "think_format"]
    vals[keys.index("reward_weights")] = tick(["correctness"], ["correctness", "think_format"], "1.0")
    assert rloo_launch_form.config_from_form(vals).reward_weights == [1.0, 1.0]


@pytest.mark.parametrize("value, message", [
    (None, "Type a pair id first"), (-1, "whole numbers from 1"), (0, "whole numbers from 1"),
    (2.5, "whole numbers from 1"), (float("nan"), "whole numbers"), ("abc", "whole numbers"),
])
def test_pair_ids_are_checked(value, message):
    with pytest.raises(DataError, match=message):
        scoring.parse_pair_id(value)


def test_pair_texts_says_whether_a_pair_is_missing_or_unlabeled(workspace):
    assert scoring.parse_pair_id(3.0) == 3
    with pytest.raises(DataError, match="There is no pair 99999 in this workspace"):
        scoring.pair_texts(workspace, 99999)
    with pytest.raises(DataError, match="There is no pair"):
        scoring.pair_texts(workspace, 10 ** 30)
    unlabeled = workspace.query("SELECT id FROM pairs WHERE id NOT IN (SELECT pair_id FROM labels) LIMIT 1")
    if unlabeled:
        with pytest.raises(DataError, match="has no preference label yet"):
            scoring.pair_texts(workspace, unlabeled[0]["id"])


def test_typed_texts_are_checked():
    with pytest.raises(DataError, match="The chosen response is empty"):
        scoring.check_text("  ", "chosen response")
    with pytest.raises(DataError, match="200,000 characters"):
        scoring.check_text("x" * 200_000, "response")
    assert scoring.check_text("", "prompt", required=False) == ""


@pytest.mark.parametrize("name", ["a" * 300, "/" + "b" * 5000, "x/" + "c" * 300])
def test_a_model_name_too_long_for_a_path_is_a_plain_message(name):
    with pytest.raises(StudioError, match="too long to be a folder or a hub id"):
        resolve(name)


def test_train_is_refused_before_a_run_exists(workspace, tmp_path):
    from rloo_studio.core.workspace import Workspace

    empty = Workspace(tmp_path / "empty")
    with pytest.raises(StudioError, match="No model at"):
        reward_launch_form.launch_check(workspace, RewardJobConfig(model=str(tmp_path / "nothing")))
    with pytest.raises(DataError, match="Only 0 labeled pairs"):
        reward_launch_form.launch_check(empty, RewardJobConfig())
    with pytest.raises(DataError, match="seed must be a whole number from 0"):
        reward_launch_form.launch_check(workspace, RewardJobConfig(seed=-1))
    with pytest.raises(DataError, match="Every pair is longer than max_length=8"):
        reward_launch_form.launch_check(workspace, RewardJobConfig(max_length=8))
    assert reward_launch_form.launch_check(workspace, RewardJobConfig())["pairs"] >= reward_launch_form.MIN_PAIRS
    assert workspace.runs() == [] and empty.runs() == []


def test_launch_counts_are_whole_numbers():
    from rloo_studio.ui.launch_panel import counts

    assert counts(2, 1) == (2, 1)
    for n, m in ((0, 1), (2, None), (1.5, 1), (10 ** 9, 1), (1, -3)):
        with pytest.raises(ValueError, match="whole number"):
            counts(n, m)


@pytest.mark.parametrize("key, value, message", [
    ("lora.target_modules", "", "target_modules must name at least one layer"),
    ("optim", "nonsense", "is not an optimizer"),
    ("eval_prompt_set", "../../x", "eval_prompt_set: no prompt set named"),
    ("prompt_set", "../../../etc", "no prompt set named"),
    ("reward_weights", "abc", "expected a number"),
    ("seed", 10 ** 30, "seed must be a whole number from 0"),
])
def test_rloo_launch_check_catches_what_the_job_would_fail_on(workspace, key, value, message):
    keys = [f.key for f in rloo_launch_form.form_fields()]
    vals = rloo_launch_form.form_values(KINDS["rloo"].preset_config("demo-cpu"))
    rloo_launch_form.launch_check(workspace, rloo_launch_form.config_from_form(vals))  # the preset itself passes
    vals[keys.index(key)] = value
    with pytest.raises(StudioError, match=message):
        rloo_launch_form.launch_check(workspace, rloo_launch_form.config_from_form(vals))
    assert workspace.runs() == []
