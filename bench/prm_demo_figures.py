"""How well a process reward model judges the demo's slipping policy on prompts no run trained on.

    .venv/bin/python bench/prm_demo_figures.py --workspace WS [--run latest] [--samples 2] [--seed 0]

Samples the bundled slipping policy (rloo_studio/assets/demo-slippy-model) on the 500 held-out demo prompts
(temperature 1), labels each response's steps exactly (core/demo_task.step_labels: a step is right when it and every
step before it equal the demo's own), scores them with the workspace's process reward run, and prints
inspect/process.step_figures (step accuracy, right steps called right, the first wrong step found, ProcessBench's F1)
and the slip pairs ranked right: pairs of responses to one prompt, one with every step right and one with a wrong step,
where the right one gets the higher weakest-step score.
"""
from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from rloo_studio.core import bootstrap  # noqa: F401  (unsloth before transformers)

# isort: split
from rloo_studio.core import demo_task  # noqa: E402
from rloo_studio.core.models import load_policy  # noqa: E402
from rloo_studio.core.paths import DEMO_DATA, DEMO_SLIPPY_MODEL  # noqa: E402
from rloo_studio.core.sampling import sample  # noqa: E402
from rloo_studio.core.workspace import Workspace  # noqa: E402
from rloo_studio.inspect.process import load_process_scorer, score_steps, step_figures  # noqa: E402
from rloo_studio.runs import catalog  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workspace", required=True)
    ap.add_argument("--run", default="latest")
    ap.add_argument("--samples", type=int, default=2, help="responses per held-out prompt")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t0 = time.time()
    problems = [json.loads(x) for x in (DEMO_DATA / "prompts_heldout.jsonl").read_text().splitlines() if x.strip()]
    policy, tok = load_policy(str(DEMO_SLIPPY_MODEL))
    got = sample(policy, tok, [p["prompt"] for p in problems], n=args.samples, max_new_tokens=64, seed=args.seed)
    rows = []
    for s, p in zip(got, (p for p in problems for _ in range(args.samples))):
        labels = demo_task.step_labels(p["prompt"], s.response, p["answer"])
        if labels:
            rows.append({"prompt": p["prompt"], "response": s.response, "labels": labels})
    ws = Workspace(args.workspace)
    run = catalog.scorer_runs(ws, ("process",))[0][1] if args.run == "latest" else args.run
    scorer = load_process_scorer(ws, run)
    scored = score_steps(scorer, [(r["prompt"], r["response"]) for r in rows])
    truth, probs = [], []
    for r, v in zip(rows, scored):
        if len(v["steps"]) != len(r["labels"]):
            continue
        ts = [int(x) for x in r["labels"]]
        first = next((k for k, t in enumerate(ts) if t == 0), None)
        ts = ts if first is None else ts[:first + 1]
        truth.append(ts)
        probs.append([s["p_correct"] for s in v["steps"]][:len(ts)])
        r["min"] = v["min"]
    figures = step_figures(truth, probs)
    pairs = []
    by_prompt = itertools.groupby(sorted((r for r in rows if "min" in r), key=lambda r: r["prompt"]),
                                  lambda r: r["prompt"])
    for _, group in by_prompt:
        group = list(group)
        for a, b in itertools.product(group, group):
            if all(a["labels"]) and not all(b["labels"]):
                pairs.append(a["min"] > b["min"])
    figures["slip_pairs_ranked_right"] = sum(pairs) / len(pairs) if pairs else None
    figures["slip_pairs"] = len(pairs)
    figures["responses"] = len(truth)
    figures["run"] = run
    figures["seconds"] = round(time.time() - t0, 1)
    print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in figures.items()}, indent=1))


if __name__ == "__main__":
    main()
