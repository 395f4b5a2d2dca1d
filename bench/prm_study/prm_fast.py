"""PRM = frozen base LM (its 4 decoder layers) + K fresh decoder layers + score head, as ONE
Qwen3ForTokenClassification (4+K layers). The base's layer outputs are computed once per training example (cached),
so training runs only the K top layers: fast on CPU.

    python prm_fast.py --base demo --train data/pol_train.jsonl:labels --dense --extra-layers 2 --steps 1000 \
        --lr 2e-3 --tag NAME [--save prm_out]

Reads at --read (sep: the token after each step). Evaluates on held-out policy responses (prm.metrics).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import time

import torch
from common import DEMO_MODEL, LAB, Timer, demo, load_causal, operands, problem_sets, read_jsonl
from prm import (
    AutoTokenizer,
    Qwen3ForTokenClassification,
    answer_pairs,
    batchify,
    encode,
    metrics,
    score_answers,
    score_rows,
    step_loss,
    synth,
)
from transformers import Qwen3Config


def build(base: str, extra: int, init_std: float):
    path = DEMO_MODEL if base == "demo" else LAB / base
    tok = AutoTokenizer.from_pretrained(str(path))
    src = Qwen3ForTokenClassification.from_pretrained(str(path), num_labels=2)
    cfg = Qwen3Config.from_dict(src.config.to_dict())
    n0 = cfg.num_hidden_layers
    cfg.num_hidden_layers = n0 + extra
    cfg.layer_types = ["full_attention"] * cfg.num_hidden_layers
    cfg.num_labels = 2
    cfg.pad_token_id = tok.pad_token_id
    full = Qwen3ForTokenClassification(cfg)
    full.load_state_dict(src.state_dict(), strict=False)
    for i in range(n0, n0 + extra):
        for mod in full.model.layers[i].modules():
            if isinstance(mod, torch.nn.Linear):
                torch.nn.init.normal_(mod.weight, std=init_std)
    torch.nn.init.normal_(full.score.weight, std=0.02)
    torch.nn.init.zeros_(full.score.bias)
    return full, tok, n0


@torch.no_grad()
def base_states(full, n0: int, ids, mask):
    """Residual stream after the base's n0 layers (pre-norm), via a hook, one forward of the base part."""
    m = full.model
    keep = m.layers
    m.layers = keep[:n0]
    saved = {}
    h = m.layers[n0 - 1].register_forward_hook(
        lambda mod, i, o: saved.__setitem__("h", o[0] if isinstance(o, tuple) else o))
    try:
        m(input_ids=ids, attention_mask=mask)
    finally:
        h.remove()
        m.layers = keep
    return saved["h"]


def top_forward(full, n0: int, hidden, mask):
    """The top layers + final norm + score on cached base states."""
    m = full.model
    pos = torch.arange(hidden.shape[1])[None].expand(hidden.shape[0], -1)
    pe = m.rotary_emb(hidden, pos)
    from transformers.masking_utils import create_causal_mask
    cm = create_causal_mask(config=m.config, inputs_embeds=hidden, attention_mask=mask, past_key_values=None,
                            position_ids=pos)
    for layer in m.layers[n0:]:
        hidden = layer(hidden, attention_mask=cm, position_ids=pos, position_embeddings=pe)
        hidden = hidden[0] if isinstance(hidden, tuple) else hidden
    return full.score(m.norm(hidden))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", default="demo")
    ap.add_argument("--train", action="append", default=[])
    ap.add_argument("--synthetic", type=int, default=0)
    ap.add_argument("--p-clean", type=float, default=0.4)
    ap.add_argument("--read", default="sep", choices=["sep", "last", "both"])
    ap.add_argument("--dense", action="store_true")
    ap.add_argument("--teacher", action="store_true", help="dense labels from the demo LM's argmax (prm2.make_items)")
    ap.add_argument("--local", action="store_true",
                    help="with --teacher: per-token local labels (read positions: prefix)")
    ap.add_argument("--corrupt", type=float, default=0.1)
    ap.add_argument("--answer", action="store_true", help="with --teacher: local labels on the answer tokens too")
    ap.add_argument("--local-only", action="store_true", help="with --teacher --local: no prefix labels at the reads")
    ap.add_argument("--corrupt-copies", type=int, default=1)
    ap.add_argument("--extra-layers", type=int, default=2)
    ap.add_argument("--init-std", type=float, default=0.02)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--eval", default="data/pol_heldout.jsonl")
    ap.add_argument("--eval-every", type=int, default=250)
    ap.add_argument("--max-train-s", type=float, default=1e9)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tag", default="")
    ap.add_argument("--save", default="")
    args = ap.parse_args()
    t = Timer()
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    full, tok, n0 = build(args.base, args.extra_layers, args.init_std)
    rows = []
    for spec in args.train:
        path, key = spec.split(":")
        for r in read_jsonl(LAB / path):
            if r["steps"]:
                lab = r[key]
                if key == "roll_hard":
                    lab = [all(lab[:k + 1]) for k in range(len(lab))]
                if key == "roll_soft":
                    lab = [min(lab[:k + 1]) for k in range(len(lab))]
                r["gold"] = demo.reasoning_steps(*operands(r["prompt"])) if key == "labels" else None
                rows.append((r, lab))
    if args.synthetic:
        probs = problem_sets(0)["train"]
        for _ in range(args.synthetic):
            r = synth(probs[rng.randrange(len(probs))], rng, args.p_clean)
            r["gold"] = demo.reasoning_steps(*operands(r["prompt"]))
            rows.append((r, r["labels"]))
    if args.teacher:
        from prm2 import make_items
        teacher, _ = load_causal(DEMO_MODEL)
        rr = [r for r, _ in rows]
        items = make_items(tok, teacher, rr, 0.0, rng, True, args.local, args.answer, args.local_only)
        for _ in range(args.corrupt_copies):
            items += make_items(tok, teacher, rr, args.corrupt, rng, True, args.local, args.answer, args.local_only)
        del teacher
    else:
        items = [encode(tok, r, lab, args.read, args.dense) for r, lab in rows]
    # cache base states, in length-sorted chunks (little padding)
    order = sorted(range(len(items)), key=lambda i: len(items[i][0]))
    cache = [None] * len(items)
    full.eval()
    for i in range(0, len(order), 256):
        idx = order[i:i + 256]
        ids, mask, y = batchify(tok, [items[j] for j in idx])
        hs = base_states(full, n0, ids, mask)
        for k, j in enumerate(idx):
            L = len(items[j][0])
            cache[j] = (hs[k, :L].clone(), torch.tensor(items[j][1]))
    cache_s = t()
    print(f"examples {len(items)}; cached base states in {cache_s} s", flush=True)
    ev = [r for r in read_jsonl(LAB / args.eval) if r["steps"]]
    for p in full.parameters():
        p.requires_grad_(False)
    params = [p for n, p in full.named_parameters()
              if any(f"layers.{i}." in n for i in range(n0, n0 + args.extra_layers))
              or n.startswith("score") or n.startswith("model.norm")]
    for p in params:
        p.requires_grad_(True)
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.01)
    log, train_s = [], 0.0
    for step in range(1, args.steps + 1):
        ts = time.time()
        full.train()
        f = min(1.0, step / args.warmup) * 0.5 * (1 + math.cos(math.pi * step / args.steps))
        for g in opt.param_groups:
            g["lr"] = args.lr * f
        batch = [cache[j] for j in rng.sample(range(len(cache)), args.batch)]
        W = max(h.shape[0] for h, _ in batch)
        hid = torch.zeros(len(batch), W, batch[0][0].shape[1])
        y = torch.full((len(batch), W), -100.0)
        mask = torch.zeros(len(batch), W, dtype=torch.long)
        for k, (h, yy) in enumerate(batch):
            hid[k, :h.shape[0]] = h
            y[k, :h.shape[0]] = yy
            mask[k, :h.shape[0]] = 1
        loss = step_loss(top_forward(full, n0, hid, mask).float(), y)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        train_s += time.time() - ts
        if step % args.eval_every == 0 or step == args.steps or train_s > args.max_train_s:
            m = metrics(ev, score_rows(full, tok, ev, args.read))
            log.append({"step": step, "train_s": round(train_s, 1), "loss": round(loss.item(), 4), **m})
            print(json.dumps(log[-1]), flush=True)
            if train_s > args.max_train_s:
                break
    probs_ev = score_rows(full, tok, ev, args.read)
    res = {"tag": args.tag, "script": "prm_fast.py", "args": vars(args), "cache_s": cache_s, "final": log[-1],
           "by_thr": {thr: metrics(ev, probs_ev, thr) for thr in (0.3, 0.5, 0.7)}, "wall_s": t(),
           "mintok": {thr: metrics(ev, pm, thr)
                      for pm in [score_rows(full, tok, ev, "mintok")] for thr in (0.3, 0.5, 0.7)},
           "mintok_answer_pairs": answer_pairs(ev, score_rows(full, tok, ev, "mintok"), score_answers(full, tok, ev)),
           "load": os.getloadavg()}
    print("RESULT", json.dumps(res), flush=True)
    with open(LAB / "prm_results.jsonl", "a") as fh:
        fh.write(json.dumps(res) + "\n")
    if args.save:
        out = LAB / args.save
        full.save_pretrained(out)
        tok.save_pretrained(out)
        (out / "prm_config.json").write_text(json.dumps({"read": args.read, **vars(args)}))


if __name__ == "__main__":
    main()
