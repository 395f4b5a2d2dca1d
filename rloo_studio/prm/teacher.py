"""Per-token labels from a teacher model (token_labels=teacher): where in a step the reasoning goes wrong.

A step label says that a step is wrong, not where; a head read once per step learns that slowly (docs/PRM.md).
A teacher is a model that does the task right and shares the base's tokenizer (the demo: the bundled demo model).
Read teacher-forced over a response, a token of the reasoning is locally right when it is the teacher's most likely
token there. Each training response then gets a label on every token of its steps, locally right or not, and its
step labels at the read positions up to its first wrong step. With `corrupt` > 0 each response also gets copies with
that share of the digits in its reasoning changed to other digits (`copies` of them), labeled by the teacher the same
way: slips whose place is known. A scorer reading the minimum over the tokens so far (step_score=min_so_far) turns the
local labels into a verdict on each step.
"""
from __future__ import annotations

import random

from rloo_studio.core import bootstrap  # noqa: F401  (unsloth before transformers)

# isort: split
import torch  # noqa: E402

from rloo_studio.core.errors import ConfigError  # noqa: E402

IGNORE = -100


def digit_ids(tok) -> list[int]:
    """The ids of the tokens '0'..'9' that the tokenizer has as single tokens."""
    out = []
    for d in "0123456789":
        i = tok.convert_tokens_to_ids(d)
        if isinstance(i, int) and i != tok.unk_token_id and tok.decode([i]) == d:
            out.append(i)
    return out


def reasoning(example: dict) -> list[int]:
    """The token positions of every step of an example, each from its first token to its read position."""
    return [t for a, b in zip(example["starts"], example["positions"]) for t in range(a, b + 1)]


def corrupted(example: dict, share: float, digits: list[int], rng: random.Random) -> list[int] | None:
    """The example's ids with about `share` of the digits in its reasoning changed, or None when none changed."""
    ids, changed = list(example["input_ids"]), False
    swap = set(digits)
    for t in reasoning(example):
        if ids[t] in swap and rng.random() < share:
            ids[t] = rng.choice([d for d in digits if d != ids[t]])
            changed = True
    return ids if changed else None


@torch.inference_mode()
def matches(teacher, seqs: list[list[int]], pad: int, batch_size: int = 64) -> list[list[bool]]:
    """For each sequence: whether each token is the teacher's most likely one after the tokens before it."""
    from rloo_studio.inspect.process import padded

    device = next(teacher.parameters()).device
    out: list[list[bool]] = [[] for _ in seqs]
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
    for i in range(0, len(order), batch_size):
        idx = order[i:i + batch_size]
        ids, mask = padded(seqs, idx, pad)
        pred = teacher(input_ids=ids.to(device), attention_mask=mask.to(device)).logits.argmax(-1).cpu()
        for r, j in enumerate(idx):
            s = seqs[j]
            out[j] = [False] + [int(pred[r, k - 1]) == s[k] for k in range(1, len(s))]
    return out


def dense_labels(example: dict, ids: list[int], match: list[bool], keep_step_labels: bool) -> list[int]:
    """Every reasoning token labeled locally right or not; in a response as written (`keep_step_labels`), the step
    labels at the read positions up to the first wrong step (the steps after it keep the teacher's labels: the
    minimum over the tokens so far, step_score=min_so_far, carries a wrong step forward)."""
    y = [IGNORE] * len(ids)
    for t in reasoning(example):
        y[t] = int(match[t])
    if keep_step_labels:
        for t in example["positions"]:
            if example["labels"][t] != IGNORE:
                y[t] = example["labels"][t]
                if y[t] == 0:
                    break
    return y


def check_teacher(cfg, tok) -> None:
    """Raises in words unless cfg.teacher is there, its code allowed, and its tokenizer the base's (`tok`)."""
    from rloo_studio.core.model_options import check_remote_code
    from rloo_studio.core.models import load_tokenizer, resolve

    path = resolve(cfg.teacher)
    check_remote_code(path, cfg.trust_remote_code)
    if load_tokenizer(path, cfg.trust_remote_code).get_vocab() != tok.get_vocab():
        raise ConfigError(f"teacher: {cfg.teacher} has another tokenizer than the base {cfg.model}, so its tokens "
                          "can not be compared with the response's. Use a teacher of the base's family.")


def teacher_examples(cfg, tok, examples: list[dict], log=print) -> list[dict]:
    """The training examples relabeled by cfg.teacher, and their changed copies (cfg.corrupt), seeded by
    cfg.seed: the same list on every call with the same config and examples."""
    from rloo_studio.core.models import load_causal_lm

    check_teacher(cfg, tok)
    teacher, _, _ = load_causal_lm(cfg.teacher, backend="transformers", trust_remote_code=cfg.trust_remote_code)
    teacher.eval()
    rng = random.Random(cfg.seed)
    digits = digit_ids(tok)
    items = [(e, list(e["input_ids"]), True) for e in examples]
    if cfg.corrupt and digits:
        for _ in range(cfg.copies):
            for e in examples:
                ids = corrupted(e, cfg.corrupt, digits, rng)
                if ids is not None:
                    items.append((e, ids, False))
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    found = matches(teacher, [ids for _, ids, _ in items], pad)
    del teacher
    out = [{"input_ids": ids, "labels": dense_labels(e, ids, m, clean), "starts": e["starts"],
            "positions": e["positions"]} for (e, ids, clean), m in zip(items, found)]
    log(f"teacher labels from {cfg.teacher}: {len(examples)} responses and {len(out) - len(examples)} copies with "
        f"digits changed; {share_wrong(out):.0%} of the labeled tokens wrong")
    return out


def share_wrong(examples: list[dict]) -> float:
    labeled = [v for e in examples for v in e["labels"] if v != IGNORE]
    return sum(v == 0 for v in labeled) / max(1, len(labeled))
