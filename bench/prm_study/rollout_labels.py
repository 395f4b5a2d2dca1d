"""Math-Shepherd step labels from rollouts, compared with the exact (synthetic truth) labels.

    python rollout_labels.py --policy slippy_s0 --split train --prompts 400 --samples 2 --n 8 \
        --out data/roll_train.jsonl

For each prompt (known answer): sample --samples responses from the policy (temperature 1, 64 new tokens); for each
response with <think> steps and for each step k, the prefix = chat prompt + response up to the end of step k's text;
sample --n continuations (temperature 1); hard label = any continuation reaches the right answer, soft = the share.
Every row keeps the exact labels too (common.exact_labels) and the rollout labels: roll_hard, roll_soft.
Prints agreement with the exact labels and the time per response.
"""
from __future__ import annotations

import argparse
import json
import os
import time

from common import (
    LAB,
    Timer,
    chat,
    demo,
    generate,
    load_causal,
    problem_sets,
    read_jsonl,
    sample_responses,
    summarize,
    write_jsonl,
)


def agreement(rows: list[dict], key: str = "roll_hard", thr: float = 0.5) -> dict:
    steps = agree = 0
    fw_n = fw_ok = 0
    right_steps = right_ok = wrong_steps = wrong_ok = 0
    for r in rows:
        labs = r[key] if key == "roll_hard" else [s >= thr for s in r[key]]
        # rollout labels need not be monotone; make the response's "first wrong" the first step labeled bad
        for e, lab in zip(r["labels"], labs):
            steps += 1
            agree += e == lab
            if e:
                right_steps += 1
                right_ok += lab
            else:
                wrong_steps += 1
                wrong_ok += not lab
        if r["first_wrong"] is not None:
            fw_n += 1
            first = next((k for k, lab in enumerate(labs) if not lab), None)
            fw_ok += first == r["first_wrong"]
    return {"steps": steps, "step_agreement": round(agree / max(steps, 1), 4),
            "right_steps_called_right": round(right_ok / max(right_steps, 1), 4),
            "wrong_steps_called_wrong": round(wrong_ok / max(wrong_steps, 1), 4),
            "slipped_first_wrong_found": round(fw_ok / max(fw_n, 1), 4), "n_with_wrong_step": fw_n}


def label_rollouts(model, tok, rows: list[dict], n: int, seed: int, batch_size: int = 512) -> None:
    """Adds roll_hard / roll_soft to each row (in place)."""
    jobs = []  # (row index, step index, prefix text)
    for i, r in enumerate(rows):
        for k, (s, e) in enumerate(r["spans"]):
            jobs.append((i, k, r["response"][:e]))
    texts = [chat(tok, rows[i]["prompt"]) + pre for i, _, pre in jobs for _ in range(n)]
    gens = generate(model, tok, texts, max_new_tokens=64, temperature=1.0, batch_size=batch_size, seed=seed)
    for r in rows:
        r["roll_soft"] = [0.0] * len(r["spans"])
    for j, (i, k, pre) in enumerate(jobs):
        r = rows[i]
        good = 0
        for text, stopped in gens[j * n:(j + 1) * n]:
            good += demo.grade(pre + text, r["answer"], stopped)["correct"]
        r["roll_soft"][k] = good / n
    for r in rows:
        r["roll_hard"] = [s > 0 for s in r["roll_soft"]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--policy", default="slippy_s0")
    ap.add_argument("--split", default="train", choices=["train", "heldout", "validation", "rl_train"])
    ap.add_argument("--offset", type=int, default=0)
    ap.add_argument("--prompts", type=int, default=400)
    ap.add_argument("--samples", type=int, default=1)
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", default="")
    ap.add_argument("--from-file", default="",
                    help="label these responses (a jsonl from this script) instead of sampling")
    ap.add_argument("--completer", default="", help="model that samples the continuations (default: the policy)")
    args = ap.parse_args()
    t = Timer()
    model, tok = load_causal(LAB / args.policy)
    if args.from_file:
        rows = read_jsonl(LAB / args.from_file)[args.offset:args.offset + args.prompts * args.samples]
    else:
        probs = problem_sets(0)[args.split][args.offset:args.offset + args.prompts]
        rows = sample_responses(model, tok, probs, n=args.samples, seed=args.seed)
    if args.completer:
        from common import DEMO_MODEL
        model, tok = load_causal(DEMO_MODEL if args.completer == "demo" else LAB / args.completer)
    t_sample = t()
    rows = [r for r in rows if r["steps"]]
    t0 = time.time()
    if args.n:
        label_rollouts(model, tok, rows, args.n, args.seed + 1)
    t_roll = time.time() - t0
    rep = {"args": vars(args), "responses": len(rows), "policy": summarize(rows), "sample_s": t_sample,
           "rollout_s": round(t_roll, 1), "rollout_s_per_response": round(t_roll / max(len(rows), 1), 4),
           "steps_per_response": round(sum(len(r["spans"]) for r in rows) / max(len(rows), 1), 3),
           "load": os.getloadavg()}
    if args.n:
        rep.update({"hard": agreement(rows), "soft>=0.5": agreement(rows, "roll_soft", 0.5),
                    "soft>=0.25": agreement(rows, "roll_soft", 0.25)})
    print(json.dumps(rep, indent=1))
    if args.out:
        write_jsonl(LAB / args.out, rows)
        (LAB / (args.out + ".report.json")).write_text(json.dumps(rep, indent=1))


if __name__ == "__main__":
    main()
