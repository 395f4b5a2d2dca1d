"""PRM, second design: dense per-token "surprise" labels from a teacher LM + heavy token corruption (ELECTRA-style
replaced-token detection), on top of the step labels at the read positions.

    python prm2.py --train data/pol_train.jsonl --corrupt 0.1 --extra-layers 2 --steps 400 --tag NAME [--save DIR]

Data: each training response (policy samples; optionally gold targets) is tokenised as chat prompt + response + EOS;
with --corrupt p each digit token inside <think> steps is replaced by another digit with probability p (several
corruptions per response: many negatives). The teacher (bundled demo LM) is run teacher-forced over the (corrupted)
ids: a token t of the reasoning is 'locally right' iff it is the teacher's argmax at t-1. Labels:
  - every reasoning token t (steps and their separators): prefix-right = all reasoning tokens <= t locally right;
  - the read position of each step (sep: the token after it) is one of these tokens, so it gets the same label.
--labels exact uses the exact step labels at the read positions instead (policy rows, no corruption) and teacher
labels elsewhere.
The model: Qwen3ForTokenClassification, the demo LM's layers + --extra-layers fresh layers, all trainable
(--lr-body for the base, --lr-new for new layers and head).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import time

import torch
from common import DEMO_MODEL, LAB, Timer, chat, demo, exact_labels, load_causal, problem_sets, read_jsonl
from prm import batchify, metrics, score_rows, step_loss
from prm_fast import build

DIGITS = None


def tokenize(tok, row, answer: bool = False):
    head = chat(tok, row["prompt"])
    enc = tok(head + row["response"] + tok.eos_token, add_special_tokens=False, return_offsets_mapping=True)
    ids, offs = enc["input_ids"], enc["offset_mapping"]
    base = len(head)
    think = []  # token indices of the reasoning: from the first step token to the read position of the last step
    reads = []
    for (s0, e0) in row["spans"]:
        s, e = s0 + base, e0 + base
        toks = [k for k, (a, b) in enumerate(offs) if b > a and a < e and b > s]
        reads.append(toks[-1] + 1)
        think += toks + [toks[-1] + 1]
    if answer and think:  # the rest of the response: </think>, the answer line, EOS
        think += list(range(think[-1] + 1, len(ids)))
    return ids, think, reads


@torch.no_grad()
def teacher_match(teacher, tok, seqs: list[list[int]]) -> list[list[bool]]:
    out = []
    for i in range(0, len(seqs), 256):
        chunk = seqs[i:i + 256]
        ids, mask, _ = batchify(tok, [(s, [0.0] * len(s)) for s in chunk])
        pred = teacher(input_ids=ids, attention_mask=mask).logits.argmax(-1)
        for j, s in enumerate(chunk):
            out.append([False] + [pred[j, k - 1].item() == s[k] for k in range(1, len(s))])
    return out


def make_items(tok, teacher, rows, corrupt: float, rng: random.Random, use_exact: bool, local: bool = False,
               answer: bool = False, local_only: bool = False):
    digit_ids = [tok.convert_tokens_to_ids(str(d)) for d in range(10)]
    dset = set(digit_ids)
    seqs, metas = [], []
    for r in rows:
        ids, think, reads = tokenize(tok, r, answer)
        ids = list(ids)
        n_cor = 0
        if corrupt:
            for k in think:
                if ids[k] in dset and rng.random() < corrupt:
                    ids[k] = rng.choice([d for d in digit_ids if d != ids[k]])
                    n_cor += 1
        seqs.append(ids)
        metas.append((think, reads, r, n_cor))
    matches = teacher_match(teacher, tok, seqs)
    items = []
    for ids, m, (think, reads, r, n_cor) in zip(seqs, matches, metas):
        y = [-100.0] * len(ids)
        ok = True
        for k in think:
            if k >= len(ids):
                continue
            ok = ok and m[k]
            y[k] = float(m[k]) if local else float(ok)
        if local and not local_only:  # the read positions keep the prefix label
            ok = True
            rd = set(reads)
            for k in think:
                if k < len(ids):
                    ok = ok and m[k]
                    if k in rd:
                        y[k] = float(ok)
        if use_exact and not n_cor and not local_only:
            for k, lab in zip(reads, r["labels"]):
                if k < len(ids):
                    y[k] = float(lab)
        items.append((ids, y))
    return items


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", default="demo")
    ap.add_argument("--train", action="append", default=[])
    ap.add_argument("--gold", type=int, default=0, help="also this many gold target responses (train split)")
    ap.add_argument("--corrupt", type=float, default=0.1)
    ap.add_argument("--corrupt-share", type=float, default=0.5, help="share of rows that get corrupted")
    ap.add_argument("--labels", default="teacher", choices=["teacher", "exact"])
    ap.add_argument("--extra-layers", type=int, default=2)
    ap.add_argument("--init-std", type=float, default=0.02)
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr-body", type=float, default=3e-4)
    ap.add_argument("--lr-new", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--eval", default="data/pol_heldout.jsonl")
    ap.add_argument("--eval-n", type=int, default=2000)
    ap.add_argument("--eval-every", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tag", default="")
    ap.add_argument("--save", default="")
    args = ap.parse_args()
    t = Timer()
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    full, tok, n0 = build(args.base, args.extra_layers, args.init_std)
    teacher, _ = load_causal(DEMO_MODEL)
    rows = []
    for path in args.train:
        rows += [r for r in read_jsonl(LAB / path) if r["steps"]]
    if args.gold:
        for p in problem_sets(0)["train"][-args.gold:]:
            resp = demo.target_response(p)
            ex = exact_labels(p["prompt"], resp)
            rows.append({"prompt": p["prompt"], "answer": p["answer"], "response": resp, **ex})
    rng.shuffle(rows)
    ncor = int(len(rows) * args.corrupt_share)
    items = make_items(tok, teacher, rows[:ncor], args.corrupt, rng, args.labels == "exact") + \
        make_items(tok, teacher, rows[ncor:], 0.0, rng, args.labels == "exact")
    del teacher
    prep_s = t()
    pos = sum(v == 1.0 for _, y in items for v in y) / max(1, sum(v != -100.0 for _, y in items for v in y))
    print(f"items {len(items)} (corrupted {ncor}), positive share {pos:.3f}, prep {prep_s} s", flush=True)
    ev = [r for r in read_jsonl(LAB / args.eval) if r["steps"]][:args.eval_n]
    is_new = lambda n: any(f"layers.{i}." in n for i in range(n0, n0 + args.extra_layers)) or n.startswith("score")  # noqa
    new = [p for n, p in full.named_parameters() if is_new(n)]
    body = [p for n, p in full.named_parameters() if not is_new(n)]
    opt = torch.optim.AdamW([{"params": body, "lr": args.lr_body}, {"params": new, "lr": args.lr_new}],
                            weight_decay=0.01)
    base_lr = [args.lr_body, args.lr_new]
    log, train_s = [], 0.0
    for step in range(1, args.steps + 1):
        ts = time.time()
        full.train()
        f = min(1.0, step / args.warmup) * 0.5 * (1 + math.cos(math.pi * step / args.steps))
        for g, lr in zip(opt.param_groups, base_lr):
            g["lr"] = lr * f
        ids, mask, y = batchify(tok, rng.sample(items, args.batch))
        loss = step_loss(full(input_ids=ids, attention_mask=mask).logits.float(), y)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(full.parameters(), 1.0)
        opt.step()
        train_s += time.time() - ts
        if step % args.eval_every == 0 or step == args.steps:
            m = metrics(ev, score_rows(full, tok, ev, "sep"))
            log.append({"step": step, "train_s": round(train_s, 1), "loss": round(loss.item(), 4), **m})
            print(json.dumps(log[-1]), flush=True)
    probs_ev = score_rows(full, tok, ev, "sep")
    res = {"tag": args.tag, "script": "prm2.py", "args": vars(args), "prep_s": prep_s, "final": log[-1],
           "by_thr": {thr: metrics(ev, probs_ev, thr) for thr in (0.3, 0.5, 0.7)}, "wall_s": t(),
           "load": os.getloadavg()}
    print("RESULT", json.dumps(res), flush=True)
    with open(LAB / "prm_results.jsonl", "a") as fh:
        fh.write(json.dumps(res) + "\n")
    if args.save:
        out = LAB / args.save
        full.save_pretrained(out)
        tok.save_pretrained(out)
        (out / "prm_config.json").write_text(json.dumps({"read": "sep", **vars(args)}))


if __name__ == "__main__":
    main()
