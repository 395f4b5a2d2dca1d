"""Process-reward-model job: step labels -> a token classifier (transformers Trainer; LoRA TOKEN_CLS or a full
fine-tune) that reads, at each <think> step, whether the step is right.

TRL removed its PRMTrainer in 2026; this is the same recipe on transformers + PEFT: the step's label on its read
position (inspect/process.py), -100 elsewhere, cross-entropy over two labels. The run folder gets, besides what the
runner writes: steps.jsonl (the exact train / held-out rows, so a resumed run trains on the same data), left_out.json
(what did not fit), checkpoints/ and adapter/ (the LoRA adapter with the head, or the whole model, and the tokenizer).
Held-out figures at each evaluation: step accuracy, right steps called right, wrong steps called wrong, and, as in
ProcessBench, how often the earliest wrong step is found (F1 over erroneous and correct responses).
"""
from __future__ import annotations

import json
import math

from rloo_studio.core import bootstrap  # noqa: F401  (unsloth before transformers)

# isort: split
from rloo_studio.core.errors import DataError  # noqa: E402
from rloo_studio.prm import data  # noqa: E402
from rloo_studio.prm.config import PrmJobConfig, trainer_args  # noqa: E402
from rloo_studio.runs.plan import memory_line  # noqa: E402
from rloo_studio.runs.runner import RunContext, resume_point  # noqa: E402


def figures(p_right, held: list[dict], step_score: str) -> dict:
    """The held-out figures from the Trainer's evaluation: p(right) at every position (padded), and the held-out
    examples in the same order, each step read as the scorer reads it (inspect/process.py read_steps)."""
    from rloo_studio.inspect.process import read_steps, step_figures

    truth, probs = [], []
    for ps, e in zip(p_right, held):
        got = read_steps(ps, e["starts"], e["positions"], step_score)
        at = [(int(e["labels"][pos]), p) for pos, p in zip(e["positions"], got) if e["labels"][pos] != data.IGNORE]
        first = next((k for k, (lab, _) in enumerate(at) if lab == 0), None)
        at = at if first is None else at[:first + 1]  # judged up to the first wrong step, as ProcessBench does
        truth.append([lab for lab, _ in at])
        probs.append([p for _, p in at])
    out = step_figures(truth, probs)
    judged = [(t, min(max(p, 1e-6), 1 - 1e-6)) for ts, ps in zip(truth, probs) for t, p in zip(ts, ps)]
    if judged:  # the cross-entropy of each judged step as the scorer reads it (eval_loss is over positions alone)
        out["step_loss"] = -sum(math.log(p if t else 1 - p) for t, p in judged) / len(judged)
    return {k: v for k, v in out.items() if v is not None}


def _p_right(logits, labels):
    return logits.float().softmax(-1)[..., 1]  # keep one number per position, not the logits


def load_model(cfg: PrmJobConfig, ctx: RunContext):
    """(model, tokenizer): the base with a fresh two-label head, a LoRA adapter on it (finetune=lora) or every
    weight trainable (full)."""
    from transformers import set_seed

    from rloo_studio.core.model_options import check_remote_code
    from rloo_studio.core.models import load_token_cls, lora_config, resolve

    check_remote_code(resolve(cfg.model), cfg.trust_remote_code)
    set_seed(cfg.seed)  # the fresh head is drawn at load time: seed it, or runs are not repeatable
    model, tok = load_token_cls(cfg.model, cfg.load_in_4bit and cfg.finetune == "lora", cfg.trust_remote_code,
                                cfg.extra_layers)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
        model.config.pad_token_id = tok.pad_token_id
    if cfg.finetune == "lora":
        from peft import get_peft_model

        model = get_peft_model(model, lora_config(cfg.lora, "TOKEN_CLS"))  # TOKEN_CLS: the head trains and saves too
    elif cfg.finetune == "frozen":
        freeze_base(model, model.config.num_hidden_layers - cfg.extra_layers)
    ctx.log(f"{cfg.finetune} fine-tune of {cfg.model}: "
            f"{sum(p.numel() for p in model.parameters() if p.requires_grad):,} trainable parameters")
    return model, tok


def freeze_base(model, n_base: int) -> None:
    """Only the layers above the base's `n_base`, the final norm and the head learn."""
    import re

    for name, p in model.named_parameters():
        layer = re.match(r"model\.layers\.(\d+)\.", name)
        p.requires_grad_(bool(layer and int(layer.group(1)) >= n_base) or name.startswith(("score.", "model.norm.")))


def train_prm(cfg: PrmJobConfig, ctx: RunContext, callbacks: tuple = ()) -> str:
    """Train a process reward model on the workspace's step labels. `callbacks`: extra TrainerCallbacks."""
    cfg.validate()
    preparing = [what for what, on in (("the teacher's labels", cfg.token_labels == "teacher"),
                                       ("the base's states", cfg.finetune == "frozen")) if on]
    if preparing:  # minutes on a large set, again at each resume: the status line and Resume say so
        ctx.preparing(" and ".join(preparing))
    train_rows, held_rows = data.run_rows(ctx.ws, ctx.dir, cfg)
    ctx.log(memory_line("prm", cfg, ctx.ws))
    ctx.log(f"loading {cfg.model}")
    model, tok = load_model(cfg, ctx)
    train, left = data.examples(tok, train_rows, cfg)
    held, left_held = data.examples(tok, held_rows, cfg)
    _record_left_out(ctx, left, left_held, len(train), len(held))
    if not train:
        raise DataError(f"Every step-labeled response is longer than max_length={cfg.max_length} tokens or has "
                        "steps the tokenizer merges; raise max_length.")
    if cfg.token_labels == "teacher":
        from rloo_studio.prm.teacher import teacher_examples

        train = teacher_examples(cfg, tok, train, ctx.log)
    _record_examples(ctx, train, held)
    resume = resume_point(ctx)
    if cfg.finetune == "frozen":
        trainer = _train_top(cfg, ctx, model, tok, train, held, resume, callbacks)
    else:
        trainer = _trainer(cfg, ctx, model, tok, _token_rows(train), _token_rows(held), held, resume, callbacks,
                           lengths=_lengths(train))
        trainer.train(resume_from_checkpoint=resume)
    return _after_training(ctx, trainer, model, tok, bool(held))


def _lengths(part: list[dict]) -> list[int]:
    return [len(e["input_ids"]) for e in part]


def _token_rows(part: list[dict]):
    from datasets import Dataset

    return Dataset.from_list([{"input_ids": e["input_ids"], "labels": e["labels"]} for e in part])


def _train_top(cfg: PrmJobConfig, ctx: RunContext, model, tok, train: list, held: list, resume, callbacks: tuple):
    """Train only the fresh layers, on the frozen base's states computed once (prm/cached.py); they go back into
    `model`. Returns the Trainer."""
    import psutil

    from rloo_studio.prm import cached

    n_base = model.config.num_hidden_layers - cfg.extra_layers
    cached.check_fits(model, train + held, psutil.virtual_memory().available)
    ctx.log(f"the base's states of {len(train) + len(held):,} examples, once (it is frozen): "
            f"{cached.states_bytes(model, train + held) / 2**30:.2f} GiB kept in memory")
    top = cached.top_model(model, n_base)
    train_rows, held_rows = (cached.rows(cached.base_states(model, n_base, part), part) for part in (train, held))
    trainer = _trainer(cfg, ctx, top, tok, train_rows, held_rows, held, resume, callbacks, _lengths(train),
                       cached.collate)
    trainer.train(resume_from_checkpoint=resume)
    cached.put_back(model, top, n_base)
    return trainer


def _record_left_out(ctx: RunContext, left: dict, left_held: dict, n_train: int, n_held: int) -> None:
    summary = {"train": n_train, "held_out": n_held, "left_out": {k: left[k] + left_held[k] for k in left}}
    (ctx.dir / "left_out.json").write_text(json.dumps(summary, indent=1))
    dropped = sum(summary["left_out"].values())
    ctx.log(f"{n_train} training responses, {n_held} held out" +
            (f"; left out {dropped} ({summary['left_out']['too_long']} longer than max_length, "
             f"{summary['left_out']['steps_differ']} whose steps the tokenizer merges)" if dropped else ""))


def _record_examples(ctx: RunContext, train: list, held: list) -> None:
    """examples.jsonl: the exact token ids and labels, which reproduce.py trains on (written once per run)."""
    path = ctx.dir / "examples.jsonl"
    if ctx.main and not path.exists():
        tmp = path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            for name, part in (("train", train), ("held_out", held)):
                f.writelines(json.dumps({"split": name, **e}) + "\n" for e in part)
        tmp.replace(path)


def _trainer(cfg: PrmJobConfig, ctx: RunContext, model, tok, train_rows, held_rows, held: list, resume,
             callbacks: tuple, lengths: list[int], collate=None):
    """The Trainer over `train_rows` / `held_rows` (token ids, or the base's states with `collate`), `lengths` the
    training rows' (the order of prm/batches.py with length_batches); `held`: the held-out examples the figures
    read."""
    import torch
    from transformers import DataCollatorForTokenClassification, Trainer, TrainingArguments

    from rloo_studio.prm.batches import length_batch_trainer
    from rloo_studio.runs.callback import StudioCallback
    from rloo_studio.runs.reproduce_script import record_trainer_args

    cuda = torch.cuda.is_available()
    kw = trainer_args(cfg, held_out=len(held))
    record_trainer_args(ctx.dir, kw)  # reproduce.py gives TrainingArguments the same arguments
    args = TrainingArguments(**kw, output_dir=str(ctx.dir / "checkpoints"), use_cpu=not cuda,
                             bf16=cuda and torch.cuda.is_bf16_supported(), report_to=["tensorboard"],
                             eval_on_start=bool(held) and resume is None)  # step 0: the untrained head
    trainer_cls = length_batch_trainer(Trainer, lengths) if cfg.length_batches else Trainer
    return trainer_cls(model=model, args=args, train_dataset=train_rows, eval_dataset=held_rows if held else None,
                       processing_class=tok,
                       data_collator=collate or DataCollatorForTokenClassification(tok, label_pad_token_id=data.IGNORE),
                       compute_metrics=(lambda pred: figures(pred.predictions, held, cfg.step_score)) if held else None,
                       preprocess_logits_for_metrics=_p_right if held else None,
                       callbacks=[StudioCallback(ctx), *callbacks])


EVAL_AT_STOP_S = 30.0  # a stopped run measures its held-out figures at the stop step when an evaluation took this long
FIGURES = (("step accuracy", "eval_step_accuracy"), ("first wrong step found", "eval_first_wrong_found"),
           ("right steps called right", "eval_right_called_right"))


def _after_training(ctx: RunContext, trainer, model, tok, held: bool) -> str:
    """The held-out evaluation at the last step (unless it was just logged; after a stop, only when an evaluation is
    cheap: EVAL_AT_STOP_S), `model` saved; the run's closing message, its figures naming the step they were
    measured at."""
    step = trainer.state.global_step
    evals = [m for m in ctx.feed if "eval_loss" in m]  # every held-out evaluation logs it
    cheap = bool(evals) and (evals[-1].get("eval_runtime") or 0) <= EVAL_AT_STOP_S
    if held and (not ctx.should_stop() or cheap) and not any(m.get("step") == step for m in evals):
        ctx.metric({"step": step, **trainer.evaluate()})
    model.save_pretrained(str(ctx.dir / "adapter"))
    tok.save_pretrained(str(ctx.dir / "adapter"))
    return f"{'stopped' if ctx.should_stop() else 'finished'} at step {step}{figures_said(ctx.feed, step)}; model saved"


def figures_said(records: list[dict], step: int) -> str:
    """'; held-out figures at step 17: step accuracy 80.1%, …' from the last evaluation, which names its step when it
    is not `step` ('at step 0 (before training)', 'at step 10, the last evaluation'); '' without one."""
    last = next((m for m in reversed(records) if "eval_first_wrong_found" in m or "eval_step_accuracy" in m), {})
    said = [f"{name} {last[key]:.1%}" for name, key in FIGURES if key in last]
    if not said:
        return ""
    at = last.get("step", 0)
    where = f"at step {at}" + ("" if at == step else " (before training)" if at == 0 else ", the last evaluation")
    return f"; held-out figures {where}: {', '.join(said)}"
