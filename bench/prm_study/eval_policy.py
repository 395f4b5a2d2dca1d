"""Held-out accuracy of a policy (+ optional LoRA adapter): 500 held-out prompts, one sample, T=1, seed 1234.
    python eval_policy.py --policy slippy_s0 [--adapter DIR] [--out FILE.jsonl]"""
import argparse
import json

from common import LAB, load_causal, problem_sets, sample_responses, summarize, write_jsonl

ap = argparse.ArgumentParser()
ap.add_argument("--policy", default="slippy_s0")
ap.add_argument("--adapter", default="")
ap.add_argument("--out", default="")
ap.add_argument("--seed", type=int, default=1234)
a = ap.parse_args()
m, tok = load_causal(LAB / a.policy)
if a.adapter:
    from peft import PeftModel
    m = PeftModel.from_pretrained(m, a.adapter).merge_and_unload().eval()
rows = sample_responses(m, tok, problem_sets(0)["heldout"], seed=a.seed)
if a.out:
    write_jsonl(LAB / a.out, rows)
print("EVAL", json.dumps(summarize(rows)))
