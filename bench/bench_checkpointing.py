"""Gradient checkpointing on the Qwen3-0.6B shape, on the CPU: the peak resident memory of an RLOO step and of a
process-reward step with checkpointing off and on, and the studio's estimate of each beside its measured rise.

    .venv/bin/python bench/bench_checkpointing.py [--rounds 1] [--model DIR]

A random-weight model of Qwen3-0.6B's real shape (28 layers, hidden 1024, vocabulary 151,936; the real Qwen3
tokenizer, tests/qwen3_fixture.py) trains one step of each job in a process of its own (the job as the tabs start
it: JobRunner); a thread samples the process's resident memory every 50 ms from before the job starts (torch and the
studio imported, the workspace open) to its end; the peak that counts is the one after the job's model has loaded
(a CPU loads bfloat16 weights into float32, a transient that a GPU does not have). RLOO: 2 completions of 256 tokens
(random weights never stop early), so the activations weigh; process reward: a LoRA over 2 responses of about 380
tokens, max_length set to the longest so that the estimate and the batch agree. The variants alternate, round after
round; the figures are each variant's median. Prints a line per run and a summary: peak off / peak on, and each
estimate's error against the rise (the standard: within 25%).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
VARIANTS = [("rloo", False), ("rloo", True), ("prm", False), ("prm", True)]
LOADED = {"rloo": "prompts from", "prm": "training responses"}  # the job's log line once its model is loaded
# glibc keeps freed memory and its arenas grow with each thread's fragments: resident memory would show the allocator's
# high-water mark, not the live tensors (a process-reward step with checkpointing: +2.7 GiB, against +0.23 GiB with
# this). Blocks from 64 KiB up are mapped and unmapped one by one, so resident memory follows what is live.
ENV = {"MALLOC_MMAP_THRESHOLD_": "65536"}


def model_folder(path: Path) -> Path:
    """The 0.6B-shaped model with the qwen3-thinking template, built once (about a minute) and kept."""
    if not (path / "model.safetensors").exists():
        from qwen3_fixture import save_model

        save_model(path, "qwen3-thinking", shape="0.6B")
    return path


def step_labels(ws, tok) -> int:
    """16 step-labeled responses of 30 arithmetic steps each (every step right, half the responses cut wrong at a
    step), written as a rollout job writes them; the longest prompt + response in tokens."""
    import random

    from rloo_studio.label.steps import write_rollout_labels

    rng, longest = random.Random(0), 0
    for i in range(16):
        pairs = [(rng.randrange(100, 999), rng.randrange(100, 999)) for _ in range(30)]
        steps = [f"Step {k + 1}: {a} + {b} = {a + b}." for k, (a, b) in enumerate(pairs)]
        prompt = f"Add these {len(pairs)} pairs, number {i}."
        text = "<think>\n" + "\n\n".join(steps) + "\n</think>\n\nDone."
        verdicts = [1] * 30 if i % 2 else [1] * 10 + [-1]
        write_rollout_labels(ws, prompt, {"answer": "0"}, text, verdicts, [float(v > 0) for v in verdicts],
                             "long-steps", "bench")
        chat = tok.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                       add_generation_prompt=True)
        longest = max(longest, len(tok(chat + text, add_special_tokens=False)["input_ids"]))
    return longest


def config(kind: str, gc: bool, model: str, max_length: int):
    from rloo_studio.core.model_options import LoraSpec

    if kind == "rloo":
        from rloo_studio.rloo.config import RlooJobConfig

        return RlooJobConfig(model=model, backend="auto", num_generations=2, per_device_train_batch_size=2,
                             max_completion_length=256, max_steps=1, save_steps=100, eval_prompts=0, beta=0.0,
                             token_view_max_tokens=0, lora=LoraSpec(r=8, alpha=16), gradient_checkpointing=gc)
    from rloo_studio.prm.config import PrmJobConfig

    return PrmJobConfig(model=model, finetune="lora", extra_layers=0, token_labels="steps", step_score="at_read",
                        per_device_train_batch_size=2, max_length=max_length, max_steps=1, save_steps=100,
                        eval_fraction=0.0, learning_rate=1e-4, lora=LoraSpec(r=8, alpha=16), length_batches=False,
                        gradient_checkpointing=gc)


def anonymous() -> int:
    """The process's resident anonymous memory (RssAnon): what it allocated, without the pages of files it maps
    (the safetensors file it loaded from stays mapped, 1.1 GiB on this shape, and a GPU holds none of it)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no RssAnon in /proc/self/status")


def one(kind: str, gc: bool, model: str, work: Path) -> dict:
    """A child's run: one step of `kind`, the resident memory sampled from before the job to its end."""
    from rloo_studio.label.demo_data import open_workspace
    from rloo_studio.prm.job import train_prm
    from rloo_studio.rloo.job import train_rloo
    from rloo_studio.runs.jobs import KINDS
    from rloo_studio.runs.runner import JobRunner

    ws = open_workspace(work / "ws", demo=True)
    longest = json.loads((work / "longest.json").read_text())["tokens"]
    cfg = config(kind, gc, model, longest)
    est = KINDS[kind].plan(cfg, ws)
    on = [True]
    peak = {"load": 0, "train": 0}  # before and after the job's log says the model is loaded (its LoRA on)
    r, base, t0 = JobRunner(ws), anonymous(), time.time()
    rid = r.submit(kind, cfg, train_rloo if kind == "rloo" else train_prm)
    log = ws.run_dir(rid) / "log.txt"

    def watch():
        phase = "load"
        while on[0]:
            if phase == "load" and log.exists() and LOADED[kind] in log.read_text():
                phase = "train"
            peak[phase] = max(peak[phase], anonymous())
            time.sleep(0.05)

    threading.Thread(target=watch, daemon=True).start()
    status = r.wait(rid, 3600)
    on[0] = False
    return {"kind": kind, "gradient_checkpointing": gc, "status": status, "wall_s": round(time.time() - t0, 1),
            "estimate_gib": round(est.total / 2**30, 3), "activations_gib": round(est.parts["activations"] / 2**30, 3),
            "load_rise_gib": round((peak["load"] - base) / 2**30, 3),
            "peak_gib": round(peak["train"] / 2**30, 3), "rise_gib": round((peak["train"] - base) / 2**30, 3)}


def prepare(work: Path, model: Path) -> None:
    """The workspace (demo data + the long step labels), shared by every child."""
    from rloo_studio.core.models import load_tokenizer
    from rloo_studio.label.demo_data import open_workspace

    ws = open_workspace(work / "ws", demo=True)
    (work / "longest.json").write_text(json.dumps({"tokens": step_labels(ws, load_tokenizer(str(model)))}))


def summary(rows: list[dict]) -> None:
    med = {(k, gc): {key: statistics.median(r[key] for r in rows if (r["kind"], r["gradient_checkpointing"]) == (k, gc))
                     for key in ("peak_gib", "rise_gib", "estimate_gib")} for k, gc in VARIANTS}
    for kind in ("rloo", "prm"):
        off, on = med[(kind, False)], med[(kind, True)]
        print(f"{kind}: peak off {off['peak_gib']:.2f} GiB, on {on['peak_gib']:.2f} GiB (on/off "
              f"{on['peak_gib'] / off['peak_gib']:.2f}); rise off {off['rise_gib']:.2f} on {on['rise_gib']:.2f}; "
              f"estimate off {off['estimate_gib']:.2f} ({(off['estimate_gib'] / off['rise_gib'] - 1):+.0%} of the "
              f"rise), on {on['estimate_gib']:.2f} ({(on['estimate_gib'] / on['rise_gib'] - 1):+.0%})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--model", default=str(Path(tempfile.gettempdir()) / "bench-qwen3-0.6B"),
                    help="where the 0.6B-shaped model is built (kept for the next run)")
    ap.add_argument("--one", nargs=3, metavar=("KIND", "GC", "WORK"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        print(json.dumps(one(a.one[0], a.one[1] == "on", a.model, Path(a.one[2]))), flush=True)
        return
    model = model_folder(Path(a.model))
    work = Path(tempfile.mkdtemp(prefix="bench-gc-"))
    prepare(work, model)
    rows = []
    for _ in range(a.rounds):
        for kind, gc in VARIANTS:  # alternating: the host's drift spreads over every variant
            out = subprocess.run([sys.executable, __file__, "--model", str(model), "--one", kind,
                                  "on" if gc else "off", str(work)], capture_output=True, text=True,
                                 env={**os.environ, **ENV})
            line = next((x for x in reversed(out.stdout.splitlines()) if x.startswith('{"kind"')), None)
            if line is None:
                sys.exit(f"{kind} gc={gc} failed:\n{out.stderr[-3000:]}")
            rows.append(json.loads(line))
            print(line, flush=True)
    summary(rows)


if __name__ == "__main__":
    main()
