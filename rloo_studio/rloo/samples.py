"""samples.jsonl of an RLOO run: every completion of each logged step, with each reward, the
weighted total, the leave-one-out advantage, its length and a truncated flag. `response` is the
completion written out whole (the <think> the chat template opened in the prompt put back), so that
views split reasoning from answer the same under any template."""
from __future__ import annotations

import json

from transformers import TrainerCallback

from rloo_studio.core.thinking import full_response, template_info
from rloo_studio.rloo.completions import read_samples
from rloo_studio.rloo.health import WINDOW, warnings
from rloo_studio.runs import run_warnings, tail
from rloo_studio.runs.runner import RunContext


class SamplesCallback(TrainerCallback):
    """Appends the completions of each logged step to samples.jsonl.

    TRL keeps the last generation batch (prompt, completion, each reward, advantage, and the
    extra columns our recording wrapper adds) in `trainer._logs` for its own completions table;
    we read it when TRL logs the step.
    """

    def __init__(self, ctx: RunContext, trainer, cfg):
        self.path, self.trainer, self.cfg = ctx.dir / "samples.jsonl", trainer, cfg
        self.last_step = max((r["step"] for r in read_samples(ctx.dir)), default=0)  # a resumed run appends

        self.template = template_info(trainer.processing_class, getattr(cfg, "enable_thinking", True))

    def on_log(self, args, state, control, logs=None, **kw):
        if "reward" not in (logs or {}) or state.global_step <= self.last_step:
            return
        self.last_step = state.global_step
        L = self.trainer._logs
        names = list(L["rewards"])
        extra = L["extra"]
        n = len(L["prompt"])
        w = self.cfg.reward_weights
        lo, hi = self.cfg.reward_clip_range or (float("-inf"), float("inf"))
        with open(self.path, "a") as f:
            for i in range(n):
                vals = {k: _num(L["rewards"][k][i]) for k in names}
                total = sum(wt * v for wt, v in zip(w, vals.values()) if v is not None)
                f.write(json.dumps({
                    "step": state.global_step, "prompt": _content(L["prompt"][i]),
                    "completion": _content(L["completion"][i]),
                    "response": full_response(self.template, _content(L["completion"][i])), "rewards": vals,
                    "total": min(max(total, lo), hi), "advantage": _num(L["advantages"][i]),
                    "length": _at(extra.get("length"), i), "truncated": _at(extra.get("truncated"), i),
                }) + "\n")


class WarningsCallback(TrainerCallback):
    """After each logged step, the warnings the tab shows (rloo.health) kept with the run (runs/run_warnings.py),
    so they outlive the steps that raised them and a headless run has them too. Added after SamplesCallback:
    the step's completions are on disk when it looks."""

    def __init__(self, ctx: RunContext, max_completion_length: int | None):
        self.ctx, self.max_len = ctx, max_completion_length

    def on_log(self, args, state, control, logs=None, **kw):
        if not self.ctx.main or "reward" not in (logs or {}):
            return
        samples, _ = tail.records(self.ctx.dir, "samples.jsonl", last_steps=WINDOW)
        run_warnings.record(self.ctx.dir, state.global_step, warnings(self.ctx.feed, self.max_len, samples))


class TokensCallback(TrainerCallback):
    """tokens.jsonl (rloo/tokens.py): for each step that samples.jsonl records, every completion's per-token
    log-probs when sampled, under the reference, and after the update. on_step_end runs after the optimizer
    step (the updated weights) and before on_log, so the step's rows are on disk when its samples are."""

    def __init__(self, ctx: RunContext, trainer, cfg):
        from rloo_studio.rloo import tokens

        self.ctx, self.trainer, self.cfg, self.tokens = ctx, trainer, cfg, tokens
        self.capture = tokens.Capture(trainer)
        self.start = template_info(trainer.processing_class, getattr(cfg, "enable_thinking", True)).start

    @staticmethod
    def wanted(cfg) -> bool:
        """cfg.token_view_max_tokens covers a step: its completions x max_completion_length."""
        size = cfg.per_device_train_batch_size * cfg.gradient_accumulation_steps * cfg.max_completion_length
        return 0 < size <= cfg.token_view_max_tokens

    def on_step_end(self, args, state, control, **kw):
        batch = self.capture.take()
        if batch is None or not control.should_log or not self.ctx.main:
            return
        t = self.tokens
        new = t.updated_logps(self.trainer, batch)
        rows = t.rows(batch, new, self.trainer.processing_class, self.start, state.global_step,
                      self.cfg.num_generations)
        with open(self.ctx.dir / t.FILE, "a") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)


def _num(v):
    v = float(v)
    return None if v != v else round(v, 5)  # NaN (unscorable) -> null


def _at(col, i):
    return col[i] if col is not None and i < len(col) else None


def _content(x) -> str:
    if isinstance(x, list):  # conversational: the last message's text
        return x[-1].get("content", "") if x else ""
    return str(x)


