"""What the token view (tokens.jsonl) costs an RLOO step: its extra forward pass as a share of step time.

    .venv/bin/python bench/token_view_cost.py [--pairs 3] [--steps 5]

Runs the demo-cpu preset (32 completions x <= 64 tokens, k = 8, beta 0.02) for --steps steps, --pairs times with the
token view on and off, interleaved (on, off, on, off, ...), same seed. A step's time is the wall time between two
successive on_step_end events (generation, loss, backward, optimizer, the callbacks; the first step of each run is
dropped: it warms up). With the view on, its own on_step_end (the extra pass, the rows, the write) is timed too, and the
forward pass alone.
Prints one JSON line: the medians, the pass's share of an on-step, and the on/off step-time ratio.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rloo_studio.core import bootstrap  # noqa: F401,E402  (unsloth before trl)

# isort: split
from rloo_studio.label.demo_data import open_workspace  # noqa: E402
from rloo_studio.rloo import samples, tokens  # noqa: E402
from rloo_studio.rloo.job import train_rloo  # noqa: E402
from rloo_studio.runs.jobs import KINDS
from rloo_studio.runs.runner import JobRunner  # noqa: E402

ENDS: list[float] = []  # on_step_end times of the current run
PASS: list[float] = []  # seconds of each TokensCallback.on_step_end
FORWARD: list[float] = []  # of that, the forward pass alone (tokens.updated_logps)


def _instrument() -> None:
    def stamp(self, args, state, control, **kw):
        ENDS.append(time.perf_counter())

    samples.SamplesCallback.on_step_end = stamp  # inherited no-op otherwise; runs before the token view's
    original = samples.TokensCallback.on_step_end

    def timed(self, *a, **kw):
        t = time.perf_counter()
        out = original(self, *a, **kw)
        PASS.append(time.perf_counter() - t)
        return out

    samples.TokensCallback.on_step_end = timed
    forward = tokens.updated_logps

    def timed_forward(*a, **kw):
        t = time.perf_counter()
        out = forward(*a, **kw)
        FORWARD.append(time.perf_counter() - t)
        return out

    tokens.updated_logps = timed_forward  # the callback looks it up on the module at each step


def one_run(runner: JobRunner, on: bool, steps: int) -> list[float]:
    ENDS.clear()
    cfg = KINDS["rloo"].preset_config("demo-cpu")
    cfg.max_steps, cfg.eval_prompts, cfg.save_steps = steps, 0, 10_000
    cfg.token_view_max_tokens = 8192 if on else 0
    rid = runner.submit("rloo", cfg, train_rloo)
    assert runner.wait(rid, 3600) == "completed", runner.status(rid)
    return [b - a for a, b in zip(ENDS, ENDS[1:])]  # step 2 onwards


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--steps", type=int, default=5)
    a = ap.parse_args()
    _instrument()
    ws = open_workspace(Path(tempfile.mkdtemp()) / "ws", demo=True)
    runner = JobRunner(ws)
    times = {True: [], False: []}
    for _ in range(a.pairs):
        for on in (True, False):
            n = len(PASS)
            times[on] += one_run(runner, on, a.steps)
            if on:
                del PASS[n], FORWARD[n]  # the first step's pass belongs to the dropped warm-up step
    on, off, extra = (statistics.median(times[True]), statistics.median(times[False]), statistics.median(PASS))
    print(json.dumps({"steps_timed": {"on": len(times[True]), "off": len(times[False])},
                      "median_step_s_on": round(on, 3), "median_step_s_off": round(off, 3),
                      "median_token_view_s": round(extra, 3),
                      "median_forward_s": round(statistics.median(FORWARD), 3),
                      "share_of_step_on": round(extra / on, 3),
                      "ratio_on_off": round(on / off, 3)}))


if __name__ == "__main__":
    main()
