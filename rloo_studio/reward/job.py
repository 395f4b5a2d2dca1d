"""Reward-model job: labeled pairs -> TRL RewardTrainer with a LoRA SEQ_CLS adapter (score head included).

The run folder gets, besides what the runner writes: preflight.json (what went in and what was
left out), pairs.jsonl (the exact train / held-out rows, so a resumed run trains on the same
data), checkpoints/ and adapter/.
"""
from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import numpy as np

from rloo_studio.core import bootstrap  # noqa: F401  (unsloth before trl)

# isort: split
from rloo_studio.core.errors import DataError
from rloo_studio.core.reward_input import reward_ids
from rloo_studio.core.thinking import pair_kind
from rloo_studio.reward import blind
from rloo_studio.reward.config import MIN_PAIRS, RewardJobConfig, trl_args
from rloo_studio.runs.plan import memory_line
from rloo_studio.runs.runner import RunContext, resume_point


def pair_rows(tok, pairs: list[dict], enable_thinking: bool = True) -> list[dict]:
    """Explicit-prompt rows in the exact text format used for scoring: chat prompt + response (+ EOS by TRL).

    Each response is rendered as it follows the generation prompt: when the template opened <think>
    there (Qwen3-Thinking), a leading <think> of the response is dropped, so the tag appears once. The
    prompt is rendered alone, so a template that drops the reasoning of earlier assistant turns never
    touches the response's own reasoning."""
    from rloo_studio.core.thinking import chat_prompt, continuation, template_info

    tpl = template_info(tok, enable_thinking)
    return [{"prompt": chat_prompt(tok, p["prompt"], enable_thinking), "chosen": continuation(tpl, p["chosen"]),
             "rejected": continuation(tpl, p["rejected"]), "pair_id": p.get("pair_id")} for p in pairs]


# -- pre-flight ------------------------------------------------------------------------------

def token_length(tok, prompt: str, response: str) -> int:
    """Tokens TRL counts for one side of a row: prompt + response + EOS, tokenized as one text (as TRL does)."""
    return len(reward_ids(tok, prompt, response))


def truncate_thinking(tok, prompt: str, response: str, max_length: int, start: str = "answer") -> str:
    """Drop <think> steps from the end (the answer stays) until the text fits; unchanged if it cannot.
    `start`: where the prompt leaves the response (thinking.Template.start)."""
    from rloo_studio.core.thinking import parse

    if token_length(tok, prompt, response) <= max_length:
        return response
    steps = parse(response, start=start).steps
    if not steps:
        return response
    tail = response[steps[-1].end:]  # "\n</think>\n\nThe answer is ..." after the last step
    for k in range(len(steps) - 1, -1, -1):
        cut = (response[:steps[k - 1].end] if k else response[:steps[0].start].rstrip("\n") + "\n") + tail
        if token_length(tok, prompt, cut) <= max_length:
            return cut
    return response


PREFLIGHT_SAMPLE = 20_000  # pairs the page's pre-flight tokenizes; above it, the lengths come from a random sample


def _breakdown(whys: Counter) -> dict:
    return {"labeled": sum(whys.values()), "ties": whys["tie"], "skips": whys["skip"], "split_votes": whys["split"]}


def labeled_sample(ws, k: int | None = None, seed: int = 0) -> tuple[dict, int, list[dict]]:
    """One streaming pass over the labeled pairs, resolved as training resolves them (label.store.decided_pairs:
    people's labels override imported ones): (pairs with no majority preference by why, the number of preference
    pairs, the preference pairs: all of them, or `k` drawn at random by a seeded reservoir when there are more)."""
    from rloo_studio.label.store import decided_pairs, preference_row

    whys, rng, kept, n = Counter(), random.Random(seed), [], 0
    for d in decided_pairs(ws):
        whys[d["why"]] += 1
        row = preference_row(d)
        if row is None:
            continue
        n += 1
        if k is None or len(kept) < k:
            kept.append(row)
        elif (j := rng.randrange(n)) < k:
            kept[j] = row
    return _breakdown(whys), n, kept


def _percentiles(values: list[int]) -> dict:
    """{p50, p90, p99, max} of token counts, each one of the counts (numpy's nearest-rank percentile)."""
    if not values:
        return {}
    p50, p90, p99 = (int(x) for x in np.percentile(values, [50, 90, 99], method="nearest"))
    return {"p50": p50, "p90": p90, "p99": p99, "max": int(max(values))}


def preflight(ws, cfg: RewardJobConfig, tok=None, pairs: list[dict] | None = None, sample: int | None = None) -> dict:
    """What a run with `cfg` would train on, computed before loading the model (tokenizer only).

    over_length counts the pairs TRL's RewardTrainer would silently drop at cfg.max_length
    (either side longer than max_length, EOS included). `after` applies cfg.over_length.
    `sample` (the page): tokenize at most that many pairs, drawn at random; the lengths are then the sample's,
    over_length and after are scaled to all pairs, and `sampled` says how many were read.
    """
    from rloo_studio.core.models import load_tokenizer, resolve

    tok = tok or load_tokenizer(resolve(cfg.model), cfg.trust_remote_code)
    if pairs is None:
        labels, n, pairs = labeled_sample(ws, sample)
    else:  # the job: every pair it trains on
        labels, n = labeled_sample(ws, 0)[0], len(pairs)
    rows = pair_rows(tok, pairs, cfg.enable_thinking)
    lens = [_pair_length(tok, r) for r in rows]
    over = [r["pair_id"] for r, length in zip(rows, lens) if length > cfg.max_length]
    fit = -(-max(lens, default=0) // 64) * 64  # the longest pair, rounded up to a multiple of 64
    after = len(rows) - len(over)
    if cfg.over_length == "fit":
        after = len(rows)
    elif cfg.over_length == "truncate_thinking" and over:
        after = len(_fitting(tok, _truncate_rows(tok, rows, cfg.max_length, _start(tok, cfg)), cfg.max_length))
    scale = n / len(rows) if rows else 1  # 1 unless sampled
    n_eval = int(n * cfg.eval_fraction)  # the job splits first, then handles lengths
    return {
        **labels, "pairs": n, "lengths": _percentiles(lens), "max_length": cfg.max_length,
        "over_length": round(len(over) * scale), "over_length_ids": over, "fit_max_length": max(fit, 64),
        "policy": cfg.over_length, "after": round(after * scale), "train": n - n_eval, "held_out": n_eval,
        "memory": memory_line("reward", cfg, ws), "trust_remote_code": cfg.trust_remote_code,
        "sampled": len(rows) if len(rows) < n else None,
    }


def _pair_length(tok, r: dict) -> int:
    return max(token_length(tok, r["prompt"], r["chosen"]), token_length(tok, r["prompt"], r["rejected"]))


def _fitting(tok, rows: list[dict], max_length: int) -> list[dict]:
    return [r for r in rows if _pair_length(tok, r) <= max_length]


def _truncate_rows(tok, rows: list[dict], max_length: int, start: str = "answer") -> list[dict]:
    return [{**r, "chosen": truncate_thinking(tok, r["prompt"], r["chosen"], max_length, start),
             "rejected": truncate_thinking(tok, r["prompt"], r["rejected"], max_length, start)} for r in rows]


def _start(tok, cfg: RewardJobConfig) -> str:
    from rloo_studio.core.thinking import template_info

    return template_info(tok, cfg.enable_thinking).start


def format_preflight(pf: dict) -> str:
    """The pre-flight summary as Markdown (for the page and the log)."""
    L = pf.get("lengths") or {}
    sampled = pf.get("sampled")
    lines = [
        f"**{pf['pairs']}** labeled pairs with a preference; left out: **{pf['ties']}** ties, "
        f"**{pf['skips']}** skips, **{pf['split_votes']}** split votes.",
        f"Tokens per pair (longer side){f' in a random sample of {sampled:,} pairs' if sampled else ''}: "
        f"p50 {L.get('p50', '–')}, p90 {L.get('p90', '–')}, p99 {L.get('p99', '–')}, max {L.get('max', '–')}"
        + (" (the training run measures every pair)." if sampled else "."),
    ]
    if pf["over_length"]:
        what = {"drop": "TRL's RewardTrainer will **drop** them",
                "truncate_thinking": "their `<think>` steps will be cut from the end until they fit",
                "fit": f"max_length will be raised to {max(pf['max_length'], L.get('max', 0))}"}[pf["policy"]]
        lines.append(f"⚠ {'about ' if sampled else ''}**{pf['over_length']}** pairs are longer than "
                     f"max_length={pf['max_length']}: {what}. "
                     f"(Raise max_length to {pf['fit_max_length']} to keep them all.)")
    else:
        lines.append(f"{'Every sampled pair fits' if sampled else 'All pairs fit'} in max_length={pf['max_length']}.")
    lines.append(f"Training on **{pf['train']}** pairs, **{pf['held_out']}** held out for accuracy.")
    if pf.get("memory"):
        lines.append(pf["memory"])
    if pf.get("trust_remote_code"):
        from rloo_studio.core.model_options import TRUST_WARNING

        lines.append("⚠ " + TRUST_WARNING)
    return "\n\n".join(lines)


# -- the job ---------------------------------------------------------------------------------

def _load_model(cfg: RewardJobConfig, ctx: RunContext):
    import torch

    from rloo_studio.core.models import load_seq_cls, resolve

    if cfg.use_unsloth and bootstrap.UNSLOTH_VERSION and torch.cuda.is_available():
        from unsloth import FastModel

        from rloo_studio.core.model_options import check_remote_code
        from rloo_studio.core.models import default_dtype, load_locked

        path = resolve(cfg.model)
        check_remote_code(path, cfg.trust_remote_code)
        model, tok = load_locked(FastModel.from_pretrained, path, num_labels=1, max_seq_length=cfg.max_length,
                           dtype=default_dtype(), load_in_4bit=cfg.load_in_4bit, full_finetuning=False,
                           trust_remote_code=cfg.trust_remote_code)
        tok = getattr(tok, "tokenizer", tok)
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        model.config.pad_token_id = tok.pad_token_id
        return model, tok
    if cfg.use_unsloth:
        ctx.log("Unsloth loads sequence classifiers only on a GPU; loading with transformers")
    return load_seq_cls(cfg.model, cfg.load_in_4bit, cfg.trust_remote_code)


def _split(ctx: RunContext, tok, pairs: list[dict], cfg: RewardJobConfig) -> tuple[list[dict], list[dict]]:
    """Train / held-out rows; a resumed run reuses the rows it started with (pairs.jsonl)."""
    saved = ctx.dir / "pairs.jsonl"
    if saved.exists():
        rows = [json.loads(x) for x in saved.read_text().splitlines() if x.strip()]
        return [r for r in rows if r["split"] == "train"], [r for r in rows if r["split"] == "held_out"]
    rows = pair_rows(tok, pairs, cfg.enable_thinking)
    held, train = split_rows(rows, cfg.eval_fraction, cfg.seed, cfg.split_by_kind, _start(tok, cfg))
    with open(saved, "w") as f:
        for split, part in (("held_out", held), ("train", train)):
            for r in part:
                f.write(json.dumps({**r, "split": split}) + "\n")
    return train, held


def step_rows(rows: list[dict], start: str = "answer") -> list[dict]:
    """Process-supervision pairs: for each row whose two responses reason and differ first inside a
    <think> step, the pair of responses cut just after that step (the preferred side stays preferred)."""
    from rloo_studio.core.thinking import parse

    out = []
    for r in rows:
        c, j = parse(r["chosen"], start=start), parse(r["rejected"], start=start)
        if not (c.has_thinking and j.has_thinking):
            continue
        k = next((i for i, (a, b) in enumerate(zip(c.steps, j.steps)) if a.text != b.text), None)
        if k is not None:
            out.append({**r, "chosen": r["chosen"][:c.steps[k].end], "rejected": r["rejected"][:j.steps[k].end]})
    return out


def split_rows(rows: list[dict], fraction: float, seed: int, by_kind: bool = True,
               start: str = "answer") -> tuple[list[dict], list[dict]]:
    """(held_out, train): int(len(rows) * fraction) rows held out at random (seeded).

    by_kind: the same share of each kind of pair (core.thinking.pair_kind: both reason, only chosen reasons, …)
    is held out, so the held-out accuracy does not depend on how many hard pairs a seed happens to
    draw; the rounding is settled by the largest remainders. `start`: where the chat template leaves a
    response (thinking.Template.start), so that the kinds read each response as the model sees it."""
    rng = random.Random(seed)
    n_eval = int(len(rows) * fraction)
    if not by_kind:
        rows = list(rows)
        rng.shuffle(rows)
        return rows[:n_eval], rows[n_eval:]
    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(pair_kind(r["chosen"], r["rejected"], start), []).append(r)
    kinds = sorted(groups)
    quota = {k: int(len(groups[k]) * fraction) for k in kinds}
    by_remainder = sorted(kinds, key=lambda k: (-(len(groups[k]) * fraction - quota[k]), k))
    for k in by_remainder[: n_eval - sum(quota.values())]:
        quota[k] += 1
    held, train = [], []
    for k in kinds:
        part = list(groups[k])
        rng.shuffle(part)
        held += part[: quota[k]]
        train += part[quota[k]:]
    rng.shuffle(held)
    rng.shuffle(train)
    return held, train


def train_reward(cfg: RewardJobConfig, ctx: RunContext, callbacks: tuple = ()) -> str:
    """Train a LoRA reward model on the workspace's labeled pairs. `callbacks`: extra TrainerCallbacks."""
    from transformers import set_seed

    from rloo_studio.label.store import preference_pairs

    cfg.validate()
    pairs = preference_pairs(ctx.ws)
    if len(pairs) < MIN_PAIRS and not (ctx.dir / "pairs.jsonl").exists():
        raise DataError(f"Only {len(pairs)} labeled pairs with a preference; label at least {MIN_PAIRS} "
                        "(better: 100+).")
    ctx.log(f"loading {cfg.model}")
    set_seed(cfg.seed)  # the fresh score head is drawn at load time: seed it, or runs are not repeatable
    model, tok = _load_model(cfg, ctx)
    pf = preflight(ctx.ws, cfg, tok, pairs)
    ctx.log("pre-flight: " + format_preflight(pf).replace("**", "").replace("\n\n", " "))
    train, held, max_length = _training_rows(ctx, tok, pairs, cfg)
    resume = resume_point(ctx)
    trainer = _trainer(cfg, ctx, model, tok, train, held, max_length, resume, callbacks)
    _record_kept(ctx, pf, trainer, train, held, max_length)
    if resume:  # TRL counts num_tokens in memory only: carry the checkpoint's count on
        trainer._total_train_tokens = _tokens_seen(resume)
    trainer.train(resume_from_checkpoint=resume)
    return _after_training(ctx, trainer, tok, held, max_length, _start(tok, cfg))


def _training_rows(ctx: RunContext, tok, pairs: list[dict], cfg: RewardJobConfig) -> tuple[list, list, int]:
    """(train rows, held-out rows, max_length) after cfg.over_length and cfg.step_pairs."""
    train, held = _split(ctx, tok, pairs, cfg)
    max_length = cfg.max_length
    if cfg.over_length == "fit":
        max_length = max(max_length, max(_pair_length(tok, r) for r in train + held))
    elif cfg.over_length == "truncate_thinking":  # pairs that still do not fit are dropped by TRL (and counted)
        start = _start(tok, cfg)
        train, held = _truncate_rows(tok, train, max_length, start), _truncate_rows(tok, held, max_length, start)
    if cfg.step_pairs:
        extra = step_rows(train, _start(tok, cfg))
        ctx.log(f"step_pairs: {len(extra)} pairs cut after the first <think> step where the two sides differ")
        train = train + extra
    ctx.log(f"{len(train)} training pairs, {len(held)} held out, max_length {max_length}")
    return train, held, max_length


def _trainer(cfg: RewardJobConfig, ctx: RunContext, model, tok, train: list[dict], held: list[dict],
             max_length: int, resume: str | None, callbacks: tuple):
    """TRL's RewardTrainer on the rows, with the LoRA SEQ_CLS adapter and the studio's callback."""
    import torch
    from datasets import Dataset
    from trl import RewardConfig, RewardTrainer

    from rloo_studio.runs.callback import StudioCallback
    from rloo_studio.runs.reproduce_script import record_trainer_args

    cuda = torch.cuda.is_available()
    kw = trl_args(cfg, held_out=len(held), max_length=max_length)
    record_trainer_args(ctx.dir, kw)  # reproduce.py gives TRL the same arguments
    args = RewardConfig(
        **kw, output_dir=str(ctx.dir / "checkpoints"), use_cpu=not cuda, bf16=cuda and torch.cuda.is_bf16_supported(),
        report_to=["tensorboard"],  # event files under checkpoints/runs/, beside metrics.jsonl
        eval_on_start=bool(held) and resume is None,  # the untrained baseline: step 0 of the held-out curves
    )
    strip = lambda rows: [{k: r[k] for k in ("prompt", "chosen", "rejected")} for r in rows]  # noqa: E731
    return RewardTrainer(
        model=model, args=args, processing_class=tok, train_dataset=Dataset.from_list(strip(train)),
        eval_dataset=Dataset.from_list(strip(held)) if held else None, peft_config=_peft_config(cfg),
        callbacks=[StudioCallback(ctx), *callbacks],
    )


def _record_kept(ctx: RunContext, pf: dict, trainer, train: list[dict], held: list[dict], max_length: int) -> None:
    """preflight.json with what TRL kept (it drops pairs longer than max_length); refuse a run left with none."""
    kept = len(trainer.train_dataset) + (len(trainer.eval_dataset) if held else 0)
    pf["dropped_by_trl"] = len(train) + len(held) - kept
    pf["trained_on"] = {"train": len(trainer.train_dataset), "held_out": len(trainer.eval_dataset) if held else 0}
    (ctx.dir / "preflight.json").write_text(json.dumps(pf, indent=1))
    if pf["dropped_by_trl"]:
        ctx.log(f"TRL dropped {pf['dropped_by_trl']} pairs longer than max_length={max_length}")
    if len(trainer.train_dataset) == 0:
        raise DataError(f"Every pair is longer than max_length={max_length}; raise max_length to "
                        f"{pf['fit_max_length']} or choose over_length=truncate_thinking.")


def _after_training(ctx: RunContext, trainer, tok, held: list[dict], max_length: int, start: str) -> str:
    """The last held-out evaluation (unless TRL just logged it), the held-out breakdown by kind and source,
    the adapter saved; returns the run's closing message."""
    from rloo_studio.reward import breakdown as reward_breakdown

    step = trainer.state.global_step
    evaluated = any(m.get("step") == step and "eval_accuracy" in m for m in ctx.feed)
    if held and not ctx.should_stop() and not evaluated:
        ctx.metric({"step": step, **trainer.evaluate()})
    if held and not ctx.should_stop():  # held-out accuracy per kind of pair and per source (blind.py)
        b = reward_breakdown.held_out_breakdown(ctx.ws, trainer.model, tok, held, max_length, start=start)
        reward_breakdown.write(ctx.dir, b)
        ctx.metric({"step": step, **blind.metric_record(b)})
    trainer.save_model(str(ctx.dir / "adapter"))
    tok.save_pretrained(str(ctx.dir / "adapter"))
    acc = next((m["eval_accuracy"] for m in reversed(ctx.feed) if "eval_accuracy" in m), None)
    tail = f"; held-out accuracy {acc:.1%}" if acc is not None else ""
    return f"{'stopped' if ctx.should_stop() else 'finished'} at step {step}{tail}; adapter saved"


def _peft_config(cfg: RewardJobConfig):
    from rloo_studio.core.models import lora_config

    pc = lora_config(cfg.lora, "SEQ_CLS")  # SEQ_CLS: PEFT trains and saves the score head
    if cfg.modules_to_save:
        pc.modules_to_save = list(cfg.modules_to_save)
    return pc


def _tokens_seen(checkpoint: str) -> int:
    history = json.loads((Path(checkpoint) / "trainer_state.json").read_text()).get("log_history", [])
    return int(next((h["num_tokens"] for h in reversed(history) if "num_tokens" in h), 0))


def held_out_rows(run_dir: Path) -> list[dict]:
    """The held-out rows a run measured its accuracy on (from its pairs.jsonl)."""
    p = Path(run_dir) / "pairs.jsonl"
    rows = [json.loads(x) for x in p.read_text().splitlines() if x.strip()] if p.exists() else []
    return [r for r in rows if r["split"] == "held_out"]
