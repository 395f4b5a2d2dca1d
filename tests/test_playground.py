"""Try the policy: the base model and base + a trained RLOO adapter answer one prompt, streamed, reasoning
apart from the answer, each with the run's rewards; it answers while a training job runs; bad input says so."""
import shutil

import pytest
from rloo_run_fixture import PLAY_PROMPT, TRAIN, shared_root, trained_run

from rloo_studio.core.errors import ConfigError, DataError
from rloo_studio.core.workspace import Workspace
from rloo_studio.rloo.playground import PlaySettings, play, total

PROMPT = PLAY_PROMPT  # its answer, 1215, reaches the correctness reward


@pytest.fixture
def run(tmp_path_factory, tmp_path):
    ws_dir, rid = trained_run(shared_root(tmp_path_factory) / "shared-rloo-run")
    shutil.copytree(ws_dir, tmp_path / "ws")
    return Workspace(tmp_path / "ws"), rid


def test_base_and_adapter_answer_streamed_with_thinking_apart_and_rewards(run):
    ws, rid = run
    states = [{k: (v.text, v.done) for k, v in s.items()}
              for s in play(ws, PROMPT, rid, PlaySettings(max_new_tokens=64))]
    *_, last = play(ws, PROMPT, rid, PlaySettings(max_new_tokens=64))
    base, adapter = last["base"], last["adapter"]
    assert base.done and adapter.done
    # streamed: the base grows token by token before the adapter starts
    base_texts = [s["base"][0] for s in states if not s["base"][1]]
    assert len(base_texts) >= 5 and all(b.startswith(a) for a, b in zip(base_texts, base_texts[1:]))
    assert all(not s["adapter"][0] for s in states if not s["base"][1])
    assert base.text != adapter.text  # the adapter changed the policy
    for side in (base, adapter):
        assert side.text.startswith("<think>") and side.closed and side.thinking and side.answer
        assert "</think>" not in side.answer and "<think>" not in side.thinking
        assert set(side.rewards) == {"correctness", "think_format"} and side.rewards["correctness"] in (0.0, 1.0)
        assert side.rewards["correctness"] == (1.0 if "1215" in side.answer else 0.0)
        assert total(side.rewards, ["correctness", "think_format"], [1.0, 0.2]) == pytest.approx(
            side.rewards["correctness"] + 0.2 * side.rewards["think_format"])
    # greedy: the same answer again; a typed prompt without a known answer: correctness says it needs one
    *_, again = play(ws, PROMPT, rid, PlaySettings(max_new_tokens=64))
    assert again["adapter"].text == adapter.text
    *_, typed = play(ws, "What is 5+7?", rid, PlaySettings(max_new_tokens=32))
    assert typed["adapter"].rewards["correctness"] is None and "needs the expected answer" in typed["adapter"].notes[0]
    *_, told = play(ws, "What is 5+7?", rid, PlaySettings(max_new_tokens=32), answer="12")
    assert told["adapter"].rewards["correctness"] in (0.0, 1.0)


def test_bad_input_is_refused_in_plain_words(run):
    ws, rid = run
    with pytest.raises(DataError, match="Type a prompt first"):
        next(play(ws, "  ", rid))
    with pytest.raises(DataError, match="There is no RLOO run nope"):
        next(play(ws, "hi", "nope"))
    with pytest.raises(ConfigError, match="temperature must be 0"):
        next(play(ws, "hi", rid, PlaySettings(temperature=-1)))
    with pytest.raises(ConfigError, match="max new tokens"):
        next(play(ws, "hi", rid, PlaySettings(max_new_tokens=0)))


def test_answers_while_a_training_job_runs(run):
    from rloo_studio.rloo.config import RlooJobConfig
    from rloo_studio.rloo.job import train_rloo
    from rloo_studio.runs.runner import JobRunner

    ws, rid = run
    r = JobRunner(ws)
    job = r.submit("rloo", RlooJobConfig(**{**TRAIN, "max_steps": 500}), train_rloo)  # stopped below
    import time

    while r.status(job)["status"] != "running":
        time.sleep(0.1)
    # while the job loads its model and trains, the playground loads its own and answers
    *_, last = play(ws, PROMPT, rid, PlaySettings(max_new_tokens=64))
    assert last["adapter"].done and r.status(job)["status"] == "running"  # answered without waiting for the job
    assert last["base"].closed and last["adapter"].closed  # real answers (a model loaded beside the job's is whole)
    r.stop(job)
    assert r.wait(job, 900) in ("stopped", "completed")
