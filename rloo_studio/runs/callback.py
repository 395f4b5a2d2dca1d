"""The bridge between a TRL trainer and the job runner: metrics, progress, stop, NaN guard."""
from __future__ import annotations

import math

from transformers import TrainerCallback

from rloo_studio.core.errors import DivergedError
from rloo_studio.runs.runner import RunContext


class StudioCallback(TrainerCallback):
    def __init__(self, ctx: RunContext):
        self.ctx = ctx

    def on_train_begin(self, args, state, control, **kw):
        self.ctx.set_progress(state.global_step, state.max_steps)

    def on_log(self, args, state, control, logs=None, **kw):
        logs = dict(logs or {})
        self.ctx.metric({"step": state.global_step, "epoch": state.epoch, **logs})
        loss = logs.get("loss")
        if isinstance(loss, float) and not math.isfinite(loss):
            raise DivergedError(
                f"The loss became {loss} at step {state.global_step}. Lower the learning rate "
                "(for example by 10x), or check the data for empty or broken rows."
            )

    def on_step_end(self, args, state, control, **kw):
        self.ctx.set_progress(state.global_step, state.max_steps)
        if self.ctx.should_stop():
            control.should_training_stop = True
            control.should_save = True  # a checkpoint to resume from
