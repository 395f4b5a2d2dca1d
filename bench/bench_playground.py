"""How fast the Playground answers on the demo model (the target: "about a second").

    .venv/bin/python bench/bench_playground.py [--repeats 7] [--max-new-tokens 128]

Trains a 2-step RLOO run on a fresh demo workspace (so there is an adapter), then answers the same
held-out prompts through rloo.playground.play, as the tab does: the base model, then base + adapter,
greedy. Prints the median over --repeats prompts (one uncounted warm-up first, which also loads the
model) of: time to the first streamed token, each side's whole answer, and the whole play() call
(both answers and their rewards). One JSON line.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rloo_studio.core import bootstrap  # noqa: E402,F401
from rloo_studio.core.paths import DEMO_DATA  # noqa: E402
from rloo_studio.label.demo_data import open_workspace  # noqa: E402
from rloo_studio.rloo import playground as P  # noqa: E402
from rloo_studio.rloo.config import RlooJobConfig  # noqa: E402
from rloo_studio.rloo.job import train_rloo  # noqa: E402
from rloo_studio.runs.runner import JobRunner, read_jsonl  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--max-new-tokens", type=int, default=128)
    a = ap.parse_args()
    ws = open_workspace(Path(tempfile.mkdtemp()) / "ws", demo=True)
    r = JobRunner(ws)
    rid = r.submit("rloo", RlooJobConfig(max_steps=2, per_device_train_batch_size=8), train_rloo)
    assert r.wait(rid, 1800) == "completed", r.status(rid)
    prompts = [row["prompt"] for row in read_jsonl(DEMO_DATA / "prompts_heldout.jsonl")][: a.repeats + 1]
    s = P.PlaySettings(max_new_tokens=a.max_new_tokens, temperature=0.0)
    rows = []
    for k, prompt in enumerate(prompts):
        t0 = time.perf_counter()
        first = base_done = None
        for state in P.play(ws, prompt, rid, s):
            now = time.perf_counter() - t0
            if first is None and state["base"].tokens:
                first = now
            if base_done is None and state["base"].done:
                base_done = now
        total = time.perf_counter() - t0
        if k:  # the first call loads the model: not counted
            rows.append({"first_token_s": first, "base_s": base_done, "both_s": total,
                         "tokens": state["base"].tokens + state["adapter"].tokens})
    med = {key: round(statistics.median(x[key] for x in rows), 3) for key in rows[0]}
    print(json.dumps({"prompts": len(rows), "max_new_tokens": a.max_new_tokens, **med,
                      "load_average": round(os.getloadavg()[0], 2)}))


if __name__ == "__main__":
    main()
