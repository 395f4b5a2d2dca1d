"""Process reward model for the demo: Qwen3ForTokenClassification (2 labels) over a demo-shaped causal LM, the step's
label at a read position per step, -100 elsewhere. Train + evaluate on held-out *policy* responses.

    python prm.py --base demo --train data/pol_train.jsonl:labels --synthetic 0 --read sep \
        --steps 300 --lr-body 3e-4 --lr-head 3e-3 --eval data/pol_heldout.jsonl --tag NAME [--save DIR]

--train FILE:KEY (repeatable): policy responses (rollout_labels.py output), KEY = labels (exact) | roll_hard | roll_soft
--synthetic N: N synthetic responses (gold steps with injected slips, see synth()) added to the pool
--read: sep (the token after the step: '\\n\\n' or '\\n') | last (the step's last token) | both
--dense: also label every token inside each step (auxiliary; the prefix-so-far right/wrong)
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import time
from pathlib import Path

import torch
from common import DEMO_MODEL, LAB, Timer, chat, demo, exact_labels, kind, operands, problem_sets, read_jsonl

# isort: split
from rloo_studio.core import bootstrap  # noqa: F401  (unsloth before transformers/peft)

# isort: split
from transformers import AutoTokenizer, Qwen3ForTokenClassification

# ---------------------------------------------------------------- data

def synth(problem: dict, rng: random.Random, p_clean: float = 0.4) -> dict:
    """A synthetic response: the gold steps, or with a slip at a random step (then the later steps go on from the
    slipped sum's carry, computed right, and the answer follows the written sums)."""
    a, b = operands(problem["prompt"])
    da, db = list(reversed(str(a))), list(reversed(str(b)))
    slip_at = None if rng.random() < p_clean else rng.randrange(3)
    steps, carry, digits = [], 0, []
    for k in range(3):
        x, y, c = int(da[k]), int(db[k]), carry
        s = x + y + c
        if k == slip_at:
            t = rng.random()
            if t < 0.45:  # wrong sum
                s = max(0, s + rng.choice([-2, -1, 1, 2, 10, -10]))
                if s == x + y + c:
                    s += 1
            elif t < 0.7:  # wrong carry in (sum consistent with the written carry, or not)
                c = 1 - c
                s = x + y + c if rng.random() < 0.6 else x + y + carry
            else:  # a digit copied wrong (sum consistent with what is written, or the right one)
                if rng.random() < 0.5:
                    x = rng.choice([d for d in range(10) if d != x])
                else:
                    y = rng.choice([d for d in range(10) if d != y])
                s = x + y + c if rng.random() < 0.7 else s
        steps.append(f"{x}+{y}+{c}={s}")
        digits.append(s % 10)
        carry = 1 if s >= 10 else 0
    ans = int("".join(str(d) for d in reversed(digits)))
    if carry:
        ans += 1000 * carry
    if slip_at is not None and rng.random() < 0.1:  # sometimes the final answer is the right one anyway
        ans = a + b
    resp = "<think>\n" + "\n\n".join(steps) + "\n</think>\n\nThe answer is " + str(ans) + "."
    ex = exact_labels(problem["prompt"], resp)
    return {"prompt": problem["prompt"], "answer": problem["answer"], "response": resp, **ex, "kind": kind(ex)}


def encode(tok, row: dict, labels: list, read: str, dense: bool) -> tuple[list[int], list]:
    """ids of chat prompt + response + EOS; targets (float label or -100) at the read positions of the steps.
    dense: also every token inside each step gets 'the response is right up to this token' (exact labels only:
    needs row['gold'], the gold steps; rows without it get the step's label on its tokens)."""
    head = chat(tok, row["prompt"])
    text = head + row["response"] + tok.eos_token
    enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
    ids, offs = enc["input_ids"], enc["offset_mapping"]
    y = [-100.0] * len(ids)
    base = len(head)
    gold = row.get("gold")
    for k_step, ((s0, e0), lab) in enumerate(zip(row["spans"], labels)):
        s, e = s0 + base, e0 + base
        toks = [k for k, (a, b) in enumerate(offs) if b > a and a < e and b > s]
        last = toks[-1]
        if dense:
            prev_ok = all(labels[:k_step])
            g = gold[k_step] if gold and k_step < len(gold) else None
            for k in toks[:-1]:
                done = row["response"][s0:offs[k][1] - base]
                y[k] = float(prev_ok and g.startswith(done)) if g is not None else float(lab)
        if read in ("last", "both") or dense:
            y[last] = float(lab)
        if read in ("sep", "both") and last + 1 < len(ids):
            y[last + 1] = float(lab)
    return ids, y


def read_positions(tok, row: dict, read: str) -> list[int]:
    ids, y = encode(tok, row, [1] * len(row["spans"]), "last" if read == "last" else "sep", False)
    return [k for k, v in enumerate(y) if v != -100.0]


def batchify(tok, items: list[tuple[list[int], list]]):
    width = max(len(x) for x, _ in items)
    ids = torch.tensor([x + [tok.pad_token_id] * (width - len(x)) for x, _ in items])
    y = torch.tensor([t + [-100.0] * (width - len(t)) for _, t in items])
    mask = (torch.arange(width)[None] < torch.tensor([len(x) for x, _ in items])[:, None]).long()
    return ids, mask, y


# ---------------------------------------------------------------- model

def load_prm(base: str, lora: int = 0, extra_layers: int = 0):
    """Token classifier over `base`; extra_layers > 0 stacks that many fresh decoder layers on top of the base's
    (their o_proj / down_proj zero-initialised, so the network starts as the base)."""
    path = DEMO_MODEL if base == "demo" else (LAB / base if (LAB / base).exists() else Path(base))
    tok = AutoTokenizer.from_pretrained(str(path))
    model = Qwen3ForTokenClassification.from_pretrained(str(path), num_labels=2)
    if extra_layers:
        from transformers import Qwen3Config
        cfg = Qwen3Config.from_dict({**model.config.to_dict()})
        n0 = cfg.num_hidden_layers
        cfg.num_hidden_layers = n0 + extra_layers
        cfg.layer_types = ["full_attention"] * cfg.num_hidden_layers
        cfg.num_labels = 2
        big = Qwen3ForTokenClassification(cfg)
        missing, unexpected = big.load_state_dict(model.state_dict(), strict=False)
        assert not unexpected, unexpected
        for i in range(n0, n0 + extra_layers):
            torch.nn.init.zeros_(big.model.layers[i].self_attn.o_proj.weight)
            torch.nn.init.zeros_(big.model.layers[i].mlp.down_proj.weight)
        model = big
    model.config.pad_token_id = tok.pad_token_id
    if lora:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=lora, lora_alpha=2 * lora, task_type="TOKEN_CLS",
                                                 target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
                                                                 "up_proj", "down_proj"]))
    return model, tok


def step_loss(logits, y):
    """Cross-entropy over 2 classes at the labeled positions; soft labels in [0, 1] allowed."""
    m = y != -100.0
    lp = torch.log_softmax(logits[m], -1)
    t = y[m]
    return -(t * lp[:, 1] + (1 - t) * lp[:, 0]).mean()


@torch.no_grad()
def score_rows(model, tok, rows: list[dict], read: str, batch: int = 256) -> list[list[float]]:
    """p(step right) per step of each row. read 'mintok': min of p over every token of steps <= k and their
    separators (for models trained with per-token local labels)."""
    model.eval()
    out = []
    for i in range(0, len(rows), batch):
        chunk = rows[i:i + batch]
        mode = "last" if read == "last" else "sep"
        items = [encode(tok, r, [1] * len(r["spans"]), mode, read == "mintok") for r in chunk]
        ids, mask, y = batchify(tok, items)
        p = torch.softmax(model(input_ids=ids, attention_mask=mask).logits.float(), -1)[..., 1]
        for j, r in enumerate(chunk):
            if read == "mintok":
                seps = [k for k in (y[j] != -100.0).nonzero().flatten().tolist()]
                reads = read_positions(tok, r, "sep")
                res, cur = [], 1.0
                for k in seps:
                    cur = min(cur, p[j, k].item())
                    if k in reads:
                        res.append(round(cur, 4))
                out.append(res)
            else:
                pos = (y[j] != -100.0).nonzero().flatten().tolist()
                out.append([round(p[j, k].item(), 4) for k in pos])
    return out


@torch.no_grad()
def score_answers(model, tok, rows: list[dict], batch: int = 256) -> list[float]:
    """min of p(right) over the tokens after the last step (</think>, the answer line, EOS): the answer's score."""
    model.eval()
    out = []
    for i in range(0, len(rows), batch):
        chunk = rows[i:i + batch]
        items = []
        starts = []
        for r in chunk:
            ids, y = encode(tok, r, [1] * len(r["spans"]), "sep", False)
            reads = [k for k, v in enumerate(y) if v != -100.0]
            starts.append(reads[-1] + 1 if reads else len(ids))
            items.append((ids, y))
        ids, mask, _ = batchify(tok, items)
        p = torch.softmax(model(input_ids=ids, attention_mask=mask).logits.float(), -1)[..., 1]
        for j, (it, st) in enumerate(zip(items, starts)):
            L = len(it[0])
            out.append(round(p[j, st:L].min().item(), 4) if st < L else 1.0)
    return out


def answer_pairs(rows, step_probs, ans_probs) -> dict:
    """Slip pairs ranked by min(min over steps, answer score)."""
    by = {}
    for r, ps, a in zip(rows, step_probs, ans_probs):
        if r["steps"]:
            by.setdefault(r["prompt"], []).append((r, min(ps + [a])))
    n = ok = 0
    for g in by.values():
        for rg, sg in g:
            if rg["kind"] != "clean":
                continue
            for rb, sb in g:
                if not rb["correct"]:
                    n += 1
                    ok += 1.0 if sg > sb else (0.5 if sg == sb else 0.0)
    return {"slip_pairs_with_answer": round(ok / max(n, 1), 4), "n_pairs": n}


def metrics(rows: list[dict], probs: list[list[float]], thr: float = 0.5) -> dict:
    steps = agree = rr = rn = ww = wn = 0
    fw_n = fw_ok = fws_n = fws_ok = 0
    for r, ps in zip(rows, probs):
        for lab, p in zip(r["labels"], ps):
            steps += 1
            agree += lab == (p >= thr)
            if lab:
                rn += 1
                rr += p >= thr
            else:
                wn += 1
                ww += p < thr
        if r["first_wrong"] is not None:
            first = next((k for k, p in enumerate(ps) if p < thr), None)
            fw_n += 1
            fw_ok += first == r["first_wrong"]
            if not r["correct"]:
                fws_n += 1
                fws_ok += first == r["first_wrong"]
    # slip pairs: same prompt, one right (clean) and one slipped (reasons, wrong answer), min over steps
    by = {}
    for r, ps in zip(rows, probs):
        if r["steps"]:
            by.setdefault(r["prompt"], []).append((r, min(ps) if ps else 0.0))
    pairs = pok = pairs_s = pok_s = 0
    for g in by.values():
        good = [s for r, s in g if r["kind"] == "clean"]
        bad = [(r, s) for r, s in g if not r["correct"]]
        for sg in good:
            for r, sb in bad:
                v = 1.0 if sg > sb else (0.5 if sg == sb else 0.0)
                pairs += 1
                pok += v
                if r["first_wrong"] is not None:  # the slip is in a step (not only in the answer line)
                    pairs_s += 1
                    pok_s += v
    return {"step_acc": round(agree / max(steps, 1), 4), "right_called_right": round(rr / max(rn, 1), 4),
            "wrong_called_wrong": round(ww / max(wn, 1), 4),
            "first_wrong_found": round(fw_ok / max(fw_n, 1), 4), "n_wrong_step_resp": fw_n,
            "first_wrong_found_slipped": round(fws_ok / max(fws_n, 1), 4), "n_slipped": fws_n,
            "slip_pairs": round(pok / max(pairs, 1), 4), "n_pairs": pairs,
            "slip_pairs_step": round(pok_s / max(pairs_s, 1), 4), "n_pairs_step": pairs_s}


# ---------------------------------------------------------------- train

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", default="demo")
    ap.add_argument("--train", action="append", default=[])
    ap.add_argument("--synthetic", type=int, default=0)
    ap.add_argument("--p-clean", type=float, default=0.4)
    ap.add_argument("--read", default="sep", choices=["sep", "last", "both"])
    ap.add_argument("--dense", action="store_true")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr-body", type=float, default=3e-4)
    ap.add_argument("--lr-head", type=float, default=3e-3)
    ap.add_argument("--lora", type=int, default=0)
    ap.add_argument("--extra-layers", type=int, default=0)
    ap.add_argument("--freeze-base", action="store_true")
    ap.add_argument("--lr-new", type=float, default=0, help="lr of the extra layers (default: --lr-body)")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--schedule", default="cosine", choices=["cosine", "constant"])
    ap.add_argument("--eval", default="data/pol_heldout.jsonl")
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--max-train-s", type=float, default=1e9)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tag", default="")
    ap.add_argument("--save", default="")
    args = ap.parse_args()
    t = Timer()
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    model, tok = load_prm(args.base, args.lora, args.extra_layers)
    if args.freeze_base:
        n0 = model.config.num_hidden_layers - args.extra_layers
        for n, p in model.named_parameters():
            if "embed_tokens" in n or any(f"layers.{i}." in n for i in range(n0)):
                p.requires_grad_(False)
    pool = []
    for spec in args.train:
        path, key = spec.split(":")
        for r in read_jsonl(LAB / path):
            if r["steps"]:
                lab = r[key]
                if key == "roll_hard":  # Math-Shepherd prefixes: once a step is bad, later steps are bad too
                    lab = [all(lab[:k + 1]) for k in range(len(lab))]
                r["gold"] = demo.reasoning_steps(*operands(r["prompt"]))
                pool.append(encode(tok, r, lab, args.read, args.dense))
    n_policy = len(pool)
    if args.synthetic:
        probs = problem_sets(0)["train"]
        for i in range(args.synthetic):
            r = synth(probs[rng.randrange(len(probs))], rng, args.p_clean)
            r["gold"] = demo.reasoning_steps(*operands(r["prompt"]))
            pool.append(encode(tok, r, r["labels"], args.read, args.dense))
    ev = [r for r in read_jsonl(LAB / args.eval) if r["steps"]]
    pos_share = sum(v == 1.0 for _, y in pool for v in y) / max(1, sum(v != -100.0 for _, y in pool for v in y))
    print(f"pool {len(pool)} (policy {n_policy}), positive share {pos_share:.3f}, eval {len(ev)}", flush=True)
    n0 = model.config.num_hidden_layers - args.extra_layers
    is_new = lambda n: any(f"layers.{i}." in n for i in range(n0, model.config.num_hidden_layers))  # noqa: E731
    head = [p for n, p in model.named_parameters() if "score" in n and p.requires_grad]
    new = [p for n, p in model.named_parameters() if is_new(n) and p.requires_grad]
    body = [p for n, p in model.named_parameters() if "score" not in n and not is_new(n) and p.requires_grad]
    lr_new = args.lr_new or args.lr_body
    opt = torch.optim.AdamW([{"params": body, "lr": args.lr_body}, {"params": head, "lr": args.lr_head},
                             {"params": new, "lr": lr_new}], weight_decay=0.01)
    base_lr = [args.lr_body, args.lr_head, lr_new]
    log, train_s = [], 0.0
    for step in range(1, args.steps + 1):
        ts = time.time()
        model.train()
        f = min(1.0, step / args.warmup)
        if args.schedule == "cosine":
            f *= 0.5 * (1 + math.cos(math.pi * step / args.steps))
        for g, lr in zip(opt.param_groups, base_lr):
            g["lr"] = lr * f
        ids, mask, y = batchify(tok, rng.sample(pool, args.batch))
        loss = step_loss(model(input_ids=ids, attention_mask=mask).logits.float(), y)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        train_s += time.time() - ts
        if step % args.eval_every == 0 or step == args.steps or train_s > args.max_train_s:
            m = metrics(ev, score_rows(model, tok, ev, args.read))
            log.append({"step": step, "train_s": round(train_s, 1), "loss": round(loss.item(), 4), **m})
            print(json.dumps(log[-1]), flush=True)
            if train_s > args.max_train_s:
                break
    probs_ev = score_rows(model, tok, ev, args.read)
    best = max(((thr, metrics(ev, probs_ev, thr)) for thr in [0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]),
               key=lambda x: x[1]["first_wrong_found"] + x[1]["right_called_right"])
    res = {"tag": args.tag, "args": vars(args), "final": log[-1], "best_thr": best[0], "at_best_thr": best[1],
           "wall_s": t(), "load": os.getloadavg()}
    print("RESULT", json.dumps(res), flush=True)
    with open(LAB / "prm_results.jsonl", "a") as fh:
        fh.write(json.dumps(res) + "\n")
    if args.save:
        out = LAB / args.save
        (model.merge_and_unload() if args.lora else model).save_pretrained(out)
        tok.save_pretrained(out)
        (out / "prm_config.json").write_text(json.dumps({"read": args.read, **vars(args)}))


if __name__ == "__main__":
    main()
