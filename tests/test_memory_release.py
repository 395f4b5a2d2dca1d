"""One long-lived process, job after job (reward, RLOO, process reward): a finished job leaves nothing behind. Every
module, the optimizer and the data loader of a job are gone once the runner says it ended, with Python's automatic
collection off and no collection called by the test: the runner gives memory back itself (core/kept.py). A job that
runs out of memory fails in words and the next one runs."""
import gc
import weakref

import pytest
import torch

from rloo_studio.core.model_options import LoraSpec
from rloo_studio.reward.config import RewardJobConfig
from rloo_studio.reward.job import train_reward
from rloo_studio.rloo.config import RlooJobConfig
from rloo_studio.rloo.job import train_rloo
from rloo_studio.runs.callback import StudioCallback
from rloo_studio.runs.runner import JobRunner

REWARD = dict(max_steps=2, eval_fraction=0.1, eval_steps=100, save_steps=100)
RLOO = dict(max_steps=1, per_device_train_batch_size=4, num_generations=2, max_completion_length=24,
            lora=LoraSpec(r=4, alpha=8), save_steps=100, eval_prompts=0)


@pytest.fixture
def watched(monkeypatch):
    """Weak references to what each job's trainer held when training began: every module of its model, its
    optimizer and its data loader."""
    refs: list[list] = []
    begin = StudioCallback.on_train_begin

    def on_train_begin(self, args, state, control, model=None, optimizer=None, train_dataloader=None, **kw):
        things = [*(model.modules() if model is not None else ()), optimizer, train_dataloader]
        refs.append([weakref.ref(x) for x in things if x is not None])
        return begin(self, args, state, control, **kw)

    monkeypatch.setattr(StudioCallback, "on_train_begin", on_train_begin)
    was = gc.isenabled()
    gc.disable()  # only the runner's own release may free what a cycle holds
    yield refs
    if was:
        gc.enable()


def alive(refs: list) -> int:
    return sum(r() is not None for r in refs)


def test_three_reward_and_three_rloo_jobs_leave_nothing_alive(workspace, watched):
    r = JobRunner(workspace)
    for i in range(3):
        for kind, cfg, fn in (("reward", RewardJobConfig(seed=i, **REWARD), train_reward),
                              ("rloo", RlooJobConfig(seed=i, **RLOO), train_rloo)):
            rid = r.submit(kind, cfg, fn)
            assert r.wait(rid, 900) == "completed", r.status(rid)
            assert len(watched[-1]) > 50  # the model's modules, its optimizer and data loader were watched
            assert alive(watched[-1]) == 0, f"{kind} job {i}: {alive(watched[-1])} of its objects still alive"


class OutOfMemory(StudioCallback.__mro__[1]):  # a TrainerCallback
    def on_step_end(self, args, state, control, **kw):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")


def test_a_job_out_of_memory_fails_in_words_and_the_next_one_runs(workspace, watched):
    r = JobRunner(workspace)
    rid = r.submit("reward", RewardJobConfig(**REWARD), lambda c, ctx: train_reward(c, ctx, (OutOfMemory(),)))
    assert r.wait(rid, 900) == "failed"
    assert "out of memory" in r.status(rid)["message"].lower() and "Traceback" not in r.status(rid)["message"]
    assert alive(watched[-1]) == 0  # the failed job's model went too
    rid = r.submit("reward", RewardJobConfig(**REWARD), train_reward)
    assert r.wait(rid, 900) == "completed", r.status(rid)
    assert alive(watched[-1]) == 0


def test_process_reward_jobs_leave_their_model_teacher_and_fresh_layers_gone(workspace, watched, monkeypatch):
    """The process reward model's demo recipe: a teacher labels the tokens, the fresh layers train on the frozen
    base's cached states in a model of their own. Once each job ends, the whole model, the teacher, the fresh
    layers' model, its optimizer and its data loader are gone."""
    from test_prm import TINY, synthetic_labels

    from rloo_studio.core import models
    from rloo_studio.prm import job as prm_job
    from rloo_studio.prm.config import PrmJobConfig

    loaded: list[list] = []  # per job: the whole model (base and fresh layers) and the teacher

    def watch(load):
        def loading(*a, **kw):
            out = load(*a, **kw)
            loaded[-1].extend(weakref.ref(m) for m in out[0].modules())
            return out
        return loading

    monkeypatch.setattr(prm_job, "load_model", watch(prm_job.load_model))
    monkeypatch.setattr(models, "load_causal_lm", watch(models.load_causal_lm))
    synthetic_labels(workspace, 30)
    r = JobRunner(workspace)
    for i in range(2):
        loaded.append([])
        rid = r.submit("prm", PrmJobConfig(seed=i, copies=1, **TINY), prm_job.train_prm)
        assert r.wait(rid, 900) == "completed", r.status(rid)
        assert len(loaded[-1]) > 60 and len(watched[-1]) > 20  # the whole model and the teacher; the fresh layers
        assert alive(loaded[-1]) == 0, f"job {i}: {alive(loaded[-1])} modules of the model or teacher still alive"
        assert alive(watched[-1]) == 0, f"job {i}: {alive(watched[-1])} of the fresh layers' objects still alive"
