"""RLOO job: a typed config -> TRL RLOOTrainer on a prompt set -> LoRA adapter in the run folder.

The run folder gets, besides the runner's files: samples.jsonl (every completion with each
reward, the weighted total, the leave-one-out advantage, length and a truncated flag),
eval.json (before/after on held-out prompts when eval_prompts > 0), checkpoints/, adapter/.
"""
from __future__ import annotations

import json

from rloo_studio.core import bootstrap  # noqa: F401  (unsloth before trl)

# isort: split
from rloo_studio.core.errors import ConfigError  # noqa: E402
from rloo_studio.core.model_options import check_remote_code
from rloo_studio.core.models import add_lora, load_causal_lm, load_reward_adapter, resolve, run_trusts_code
from rloo_studio.core.rule_rewards import RULES
from rloo_studio.label.prompts import load_prompts
from rloo_studio.rloo import rewards
from rloo_studio.rloo.compare import evaluate_into
from rloo_studio.rloo.config import (
    CUSTOM_PREFIX,
    PROCESS_REWARD,
    REWARD_MODEL,
    SOLUTION_REWARDS,
    TRL_REWARDS,
    RlooJobConfig,
    trl_args,
)
from rloo_studio.rloo.rewards import custom_reward_path
from rloo_studio.rloo.samples import SamplesCallback, TokensCallback, WarningsCallback
from rloo_studio.runs.callback import StudioCallback
from rloo_studio.runs.catalog import adapter_dir, saved_model
from rloo_studio.runs.plan import memory_line
from rloo_studio.runs.reproduce_script import record_trainer_args
from rloo_studio.runs.runner import RunContext, resume_point


def preflight(cfg: RlooJobConfig, ws) -> list[dict]:
    """Everything that can be checked before loading the model; returns the prompt rows."""
    cfg.validate()
    # a model that is not there, or that needs its own code, is said before launch, not after a failed run
    check_remote_code(resolve(cfg.model), cfg.trust_remote_code)
    rows = load_prompts(ws, cfg.prompt_set)
    if "correctness" in cfg.rewards and "answer" not in rows[0]:
        raise ConfigError(f"prompt set {cfg.prompt_set!r} has no answer column; drop the correctness reward")
    needs_solution = [r for r in cfg.rewards if r in SOLUTION_REWARDS]
    if needs_solution and "solution" not in rows[0]:
        raise ConfigError(f"prompt set {cfg.prompt_set!r} has no solution column; the {needs_solution[0]} reward "
                          "compares the answer with it (import prompts with a solution column, or drop it)")
    if needs_solution:
        import importlib.util

        if importlib.util.find_spec("math_verify") is None:
            raise ConfigError(f"the {needs_solution[0]} reward needs the math-verify package: "
                              "pip install -r requirements.txt")
    if REWARD_MODEL in cfg.rewards:
        try:
            ok = (adapter_dir(ws, cfg.reward_model_run) / "adapter_config.json").exists()
        except ValueError:
            ok = False
        if not ok:
            raise ConfigError(f"reward_model_run {cfg.reward_model_run!r} is not a reward run with a saved adapter; "
                              "train one on the Reward model tab first")
    if PROCESS_REWARD in cfg.rewards:
        _check_process_run(ws, cfg)
        for key in ("process_reward_correct_only", "process_reward_filter"):
            if getattr(cfg, key) and "answer" not in rows[0]:
                raise ConfigError(f"{key} needs an answer column, which prompt set {cfg.prompt_set!r} does not have; "
                                  "untick it")
    for r in cfg.rewards:
        if r.startswith(CUSTOM_PREFIX):
            custom_reward_path(ws.root, r[len(CUSTOM_PREFIX):])
    return rows


def _check_process_run(ws, cfg: RlooJobConfig) -> None:
    from rloo_studio.core.errors import StudioError
    from rloo_studio.runs.catalog import scorer_run

    try:
        rid = scorer_run(ws, cfg.process_reward_run, ("process",))["id"]
    except StudioError as exc:
        raise ConfigError(f"process_reward_run: {exc}") from None
    if not saved_model(ws, rid):
        raise ConfigError(f"process_reward_run {rid} saved no model yet; train one on the Process reward tab first")


def _process_reward(cfg: RlooJobConfig, ws, tok, device):
    from rloo_studio.core.models import load_token_cls_adapter
    from rloo_studio.inspect.process import of_run
    from rloo_studio.rloo.process_reward import make_process_reward

    ad = adapter_dir(ws, cfg.process_reward_run)
    model, prm_tok = load_token_cls_adapter(ad, trust_remote_code=run_trusts_code(ad))
    if device is not None:
        model.to(device)
    scorer = of_run(ad, model, prm_tok, f"process reward run {cfg.process_reward_run}")
    return make_process_reward(scorer, tok, cfg.process_reward_aggregate, cfg.process_reward_correct_only,
                               cfg.answer_format, cfg.enable_thinking, cfg.reward_model_batch_size,
                               pay_unfinished=cfg.process_reward_unfinished)


def build_rewards(cfg: RlooJobConfig, ws, tok, device=None) -> list:
    """The reward functions, in cfg.rewards order, named as TRL will log them."""
    out = []
    think = cfg.enable_thinking
    for r in cfg.rewards:
        if r in RULES:
            out.append(rewards.rule_reward(r, tok, cfg.answer_format, think))
        elif r in TRL_REWARDS:
            out.append(rewards.trl_reward(r, tok, think, max_completion_length=cfg.max_completion_length,
                                    overlong_cache=cfg.overlong_cache, ngram=cfg.repetition_ngram))
        elif r == REWARD_MODEL:
            ad = adapter_dir(ws, cfg.reward_model_run)
            rm, rm_tok = load_reward_adapter(ad, trust_remote_code=run_trusts_code(ad))
            if device is not None:
                rm.to(device)
            fn = rewards.make_reward_model_reward(rm, rm_tok, tok, cfg.reward_model_batch_size, enable_thinking=think)
            out.append(rewards.shaped(fn, cfg.reward_model_normalize, cfg.reward_model_clip,
                                      cfg.reward_model_std_floor))
        elif r == PROCESS_REWARD:
            out.append(_process_reward(cfg, ws, tok, device))
        else:
            out.append(rewards.load_custom_reward(ws.root, r[len(CUSTOM_PREFIX):]))
    if cfg.process_reward_filter:  # every reward answers None where outcome and process disagree
        from rloo_studio.rloo.process_reward import filtered

        batch = out[cfg.rewards.index(PROCESS_REWARD)].batch
        out = [filtered(fn, batch, cfg.process_reward_aggregate) for fn in out]
    return out


def recording(fn, tok):
    """Wrap the first reward so that each completion's token length and truncated flag reach TRL's logs."""
    import functools

    eos = {tok.eos_token_id}

    @functools.wraps(fn)
    def wrapper(*args, completion_ids=None, log_extra=None, **kwargs):
        if log_extra is not None:
            log_extra("length", [len(ids) for ids in completion_ids])
            log_extra("truncated", [not ids or ids[-1] not in eos for ids in completion_ids])
        return fn(*args, completion_ids=completion_ids, log_extra=log_extra, **kwargs)

    return wrapper


# -- training ----------------------------------------------------------------------------------

def train_rloo(cfg: RlooJobConfig, ctx: RunContext) -> str:
    import torch
    from datasets import Dataset
    from trl import RLOOConfig, RLOOTrainer


    rows = preflight(cfg, ctx.ws)
    prompts_file = ctx.dir / "prompts.jsonl"  # the prompts as they were, for reproduce.py
    if not prompts_file.exists():
        prompts_file.write_text("".join(json.dumps(r) + "\n" for r in rows))

    ctx.log(memory_line("rloo", cfg, ctx.ws))
    ctx.log(f"loading {cfg.model}")
    model, tok, backend = load_causal_lm(cfg.model, cfg.backend, cfg.load_in_4bit,
                                         max_seq_length=1024 + cfg.max_completion_length,
                                         trust_remote_code=cfg.trust_remote_code)
    model = add_lora(model, cfg.lora, backend, seed=cfg.seed, gradient_checkpointing=cfg.gradient_checkpointing)
    ctx.log(f"backend {backend}; {len(rows)} prompts from {cfg.prompt_set}")
    funcs = build_rewards(cfg, ctx.ws, tok, device=next(model.parameters()).device)
    funcs[0] = recording(funcs[0], tok)
    if cfg.eval_prompts:
        evaluate_into(ctx, cfg, model, tok, "before")  # LoRA B starts at zero: this is the base policy
    data = Dataset.from_list([{**r, "prompt": [{"role": "user", "content": r["prompt"]}]} for r in rows])
    cuda = torch.cuda.is_available()
    kw = trl_args(cfg)
    record_trainer_args(ctx.dir, kw)  # reproduce.py gives TRL the same arguments
    args = RLOOConfig(**kw, output_dir=str(ctx.dir / "checkpoints"), use_cpu=not cuda,
                      bf16=cuda and torch.cuda.is_bf16_supported(),
                      report_to=["tensorboard"])  # event files under checkpoints/runs/, beside metrics.jsonl
    trainer = RLOOTrainer(
        model=model, reward_funcs=funcs, args=args, train_dataset=data,
        processing_class=tok, callbacks=[StudioCallback(ctx)],
    )
    last = resume_point(ctx)
    trainer.add_callback(SamplesCallback(ctx, trainer, cfg))
    trainer.add_callback(WarningsCallback(ctx, cfg.max_completion_length))  # kept with the run
    if TokensCallback.wanted(cfg):  # tokens.jsonl: what each logged step taught, token by token
        trainer.add_callback(TokensCallback(ctx, trainer, cfg))
    if last:
        restore_policy_adapter(trainer.model, last)
    trainer.train(resume_from_checkpoint=last)
    trainer.save_model(str(ctx.dir / "adapter"))
    tok.save_pretrained(str(ctx.dir / "adapter"))
    step = trainer.state.global_step
    msg = f"{'stopped' if ctx.should_stop() else 'finished'} at step {step}/{cfg.max_steps}; adapter saved"
    if cfg.eval_prompts and not ctx.should_stop():
        ev = evaluate_into(ctx, cfg, model, tok, "after")
        msg += "; " + ev["summary"]
    return msg


def restore_policy_adapter(model, checkpoint: str) -> None:
    """Load the policy's trained LoRA weights from a checkpoint before the Trainer resumes.

    RLOOTrainer, given a PEFT model, adds a frozen "ref" adapter (a copy of the starting weights)
    that PEFT saves in checkpoint-N/ref/. The Trainer's resume then loads only adapter subfolders
    when any exist, so the trained "default" adapter at the checkpoint's root would stay at its
    initial weights: the policy would restart from the base while the optimizer state went on.
    The Trainer reloads "ref" itself; optimizer, scheduler and RNG state follow in train()."""
    model.load_adapter(checkpoint, adapter_name="default", is_trainable=True)
    model.set_adapter("default")
