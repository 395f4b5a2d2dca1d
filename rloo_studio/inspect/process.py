"""A process reward model's lens: each `<think>` step's probability of being right, from one forward pass.

A process reward model (prm/job.py trains one) is a token classifier over a causal decoder: two labels (wrong,
right), read at one position per step. Causal attention makes the hidden state there depend only on the text up
to it, so every step's verdict comes from the same pass (no re-scoring of prefixes). The position is the step's
last token ('step_end') or the first token after the step, the separator before the next one ('after_step': a
fixed place to read, as a marker token after each step is in Qwen2.5-Math-PRM). Training (prm/data.py) and
scoring find the positions here, with the same text: the chat prompt, then the response as it follows it.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from rloo_studio.core import bootstrap  # noqa: F401  (unsloth before transformers)

# isort: split
import torch  # noqa: E402

from rloo_studio.core import kept  # noqa: E402
from rloo_studio.core.errors import DataError, ModelLoadError  # noqa: E402
from rloo_studio.core.thinking import chat_prompt, continuation, template_info, token_span  # noqa: E402
from rloo_studio.inspect.scoring import length_batches, parse_response  # noqa: E402

READ_AT = ("step_end", "after_step")
STEP_SCORES = ("at_read", "min_so_far")
"""How a step's probability is read from the per-token output: at the step's read position, or the lowest over
every token of the reasoning up to it (a model trained with per-token labels, prm/teacher.py: the step is right
when no token so far is wrong)."""
THRESHOLD = 0.5  # a step whose probability of being right is below this is one the model doubts


@dataclass
class ProcessScorer:
    model: object
    tok: object
    label: str  # what the UI and the CLI show
    enable_thinking: bool = True
    read_at: str = "after_step"
    step_score: str = "at_read"

    @property
    def template(self):
        return template_info(self.tok, self.enable_thinking)


@dataclass(frozen=True)
class Encoded:
    """A prompt + response as the model reads it: its ids, the steps (text, start, end in the response), the
    position read for each step and each step's first token."""
    ids: list[int]
    steps: list[tuple[str, int, int]]
    positions: list[int]
    truncated: bool  # reasoning never closed
    starts: tuple[int, ...] = ()

    def reasoning_tokens(self, k: int) -> list[int]:
        """The token positions of steps 0..k, each from its first token to its read position."""
        return [t for a, b in zip(self.starts[:k + 1], self.positions[:k + 1]) for t in range(a, b + 1)]


def encode(tok, prompt, response: str, enable_thinking: bool = True, read_at: str = "after_step",
           split: str = "blank") -> Encoded:
    """The ids of chat prompt + response (no EOS: a step is judged on the text so far) and where each step is read:
    its last token ('step_end'), or the last token before the next step begins ('after_step': the separator after
    the step, or the step's last token when the tokenizer merged the separator into it, as Qwen's BPE does with
    '.\n\n'; for the last step, the last token before </think>). A step with no token of its own is left out."""
    tpl = template_info(tok, enable_thinking)
    head = chat_prompt(tok, prompt, enable_thinking)
    body = continuation(tpl, response)
    shift = len(head) - (len(response) - len(body))  # response offsets -> text offsets (a leading <think> skipped)
    enc = tok(head + body, return_offsets_mapping=True, add_special_tokens=False)
    ids, offsets = list(enc["input_ids"]), [tuple(o) for o in enc["offset_mapping"]]
    parsed = parse_response(tpl, response, split)
    steps, positions, starts = [], [], []
    for k, st in enumerate(parsed.steps):
        i, j = token_span(offsets, shift + st.start, shift + st.end)
        if j <= i:
            continue
        pos = j - 1
        if read_at == "after_step":
            until = shift + _next_boundary(parsed, k)
            while pos + 1 < len(ids) and offsets[pos + 1][0] < until:
                pos += 1
        steps.append((st.text, st.start, st.end))
        positions.append(pos)
        starts.append(i)
    return Encoded(ids, steps, positions, parsed.truncated, tuple(starts))


def read_steps(p_tokens, starts, positions, step_score: str = "at_read") -> list[float]:
    """Each step's probability of being right from the per-token probabilities `p_tokens` (indexable): at its read
    position, or (min_so_far) the lowest over every token of the steps up to it."""
    if step_score != "min_so_far":
        return [float(p_tokens[k]) for k in positions]
    out, low = [], 1.0
    for a, b in zip(starts, positions):
        low = min(low, *(float(p_tokens[t]) for t in range(a, b + 1)))
        out.append(low)
    return out


def _next_boundary(parsed, k: int) -> int:
    """Where step k's stretch of text ends: the next step's start, or the end of its <think> block."""
    st = parsed.steps[k]
    block = next((b for a, b in parsed.think_spans if a <= st.start < b), st.end)
    nxt = parsed.steps[k + 1].start if k + 1 < len(parsed.steps) else block
    return min(nxt, block) if nxt > st.start else block


# ---------------------------------------------------------------- loading

_CACHE: dict[tuple, ProcessScorer] = {}
_LOCK = threading.Lock()


def load_process_scorer(ws, run_id: str) -> ProcessScorer:
    """A trained process-reward run's adapter (base + LoRA + head), kept while it is the last one used."""
    from rloo_studio.core.models import load_token_cls_adapter, run_trusts_code
    from rloo_studio.runs.catalog import adapter_dir, scorer_run

    rid = scorer_run(ws, run_id, ("process",))["id"]
    path = adapter_dir(ws, rid)
    if not (path / "adapter_config.json").exists() and not (path / "config.json").exists():
        raise ModelLoadError(f"Run {rid} saved no model (did it fail before saving?).")
    key = (str(path), _mtime(path))
    with _LOCK:
        if key not in _CACHE:
            _CACHE.clear()  # one model at a time
            model, tok = load_token_cls_adapter(path, trust_remote_code=run_trusts_code(path))
            if torch.cuda.is_available() and not getattr(model, "is_loaded_in_4bit", False):
                model.to("cuda")
            model.eval()
            _CACHE[key] = of_run(path, model, tok, f"process reward run {rid}")
        return _CACHE[key]


def of_run(adapter_path: Path, model, tok, label: str) -> ProcessScorer:
    """A scorer that reads as the run that saved `adapter_path` trained: its chat template's thinking switch,
    where each step is read and how (its config.yaml)."""
    from rloo_studio.core.models import run_setting

    return ProcessScorer(model, tok, label, bool(run_setting(adapter_path, "enable_thinking", True)),
                         str(run_setting(adapter_path, "read_at", "after_step")),
                         str(run_setting(adapter_path, "step_score", "at_read")))


def _mtime(path: Path) -> float:
    files = [path / n for n in ("adapter_model.safetensors", "adapter_config.json", "model.safetensors")]
    return max((f.stat().st_mtime for f in files if f.exists()), default=0.0)


def unload() -> None:
    """Drop the kept process reward model (Inspect loads it again when asked)."""
    with _LOCK:
        _CACHE.clear()


def _kept() -> list[kept.Kept]:
    with _LOCK:
        return [kept.Kept("Inspect's process reward model", s.label, kept.model_bytes(s.model))
                for s in _CACHE.values()]


kept.register("Inspect's process reward model", _kept, unload)


# ---------------------------------------------------------------- scoring

def padded(seqs: list[list[int]], idx: list[int], pad: int):
    """Right-padded ids and attention mask of seqs[i] for i in idx."""
    width = max(len(seqs[i]) for i in idx)
    ids = torch.full((len(idx), width), pad, dtype=torch.long)
    mask = torch.zeros((len(idx), width), dtype=torch.long)
    for r, i in enumerate(idx):
        ids[r, :len(seqs[i])] = torch.tensor(seqs[i])
        mask[r, :len(seqs[i])] = 1
    return ids, mask


@torch.inference_mode()
def step_probabilities(model, tok, encoded: list[Encoded], batch_size: int = 16,
                       step_score: str = "at_read") -> list[list[float]]:
    """P(step right) for each step (`read_steps`), one forward pass per batch (shortest first, right-padded)."""
    limit = getattr(model.config, "max_position_embeddings", None)
    longest = max((len(e.ids) for e in encoded), default=0)
    if limit and longest > limit:
        raise DataError(f"A text is {longest} tokens; this model reads at most {limit}.")
    device = next(model.parameters()).device
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    out: list[list[float]] = [[] for _ in encoded]
    for idx in length_batches([len(e.ids) for e in encoded], batch_size):
        ids, mask = padded([e.ids for e in encoded], idx, pad)
        logits = model(input_ids=ids.to(device), attention_mask=mask.to(device)).logits.float()
        p = logits.softmax(-1)[..., 1].cpu()
        for r, i in enumerate(idx):
            out[i] = read_steps(p[r].tolist(), encoded[i].starts, encoded[i].positions, step_score)
    return out


def score_steps(scorer: ProcessScorer, items: list[tuple], split: str = "blank", batch_size: int = 16) -> list[dict]:
    """For each (prompt, response): its steps with p_correct, the first step the model doubts, and the
    aggregates RLOO's process reward uses (min, product, last, mean)."""
    encs = [encode(scorer.tok, p, r, scorer.enable_thinking, scorer.read_at, split) for p, r in items]
    probs = step_probabilities(scorer.model, scorer.tok, encs, batch_size, scorer.step_score)
    return [{**verdict(e, ps), "step_score": scorer.step_score} for e, ps in zip(encs, probs)]


def verdict(enc: Encoded, probs: list[float]) -> dict:
    doubt = next((k for k, p in enumerate(probs) if p < THRESHOLD), None)
    return {"steps": [{"text": t, "start": a, "end": b, "p_correct": p} for (t, a, b), p in zip(enc.steps, probs)],
            "first_doubt": doubt, "truncated": enc.truncated, **aggregates(probs)}


def aggregates(probs: list[float]) -> dict:
    """One number per response from its steps: min (the weakest step), product (all right), last, mean; None
    for a response without reasoning steps."""
    if not probs:
        return {"min": None, "product": None, "last": None, "mean": None}
    prod = 1.0
    for p in probs:
        prod *= p
    return {"min": min(probs), "product": prod, "last": probs[-1], "mean": sum(probs) / len(probs)}


def score_json(ws, run_id: str, prompt: str, response: str, split: str = "blank") -> dict:
    """What `score --reward-run PRM_RUN --json` prints and the /score API returns for a process reward run."""
    scorer = load_process_scorer(ws, run_id)
    out = score_steps(scorer, [(prompt, response)], split)[0]
    return {"reward_model": scorer.label, "kind": "process", "trained": True, "split": split, **out}


# ---------------------------------------------------------------- figures over labeled responses

def step_figures(truth: list[list[int]], probs: list[list[float]], threshold: float = THRESHOLD) -> dict:
    """How a process reward model judges labeled responses (truth: 1 right / 0 wrong per labeled step, the
    labeled prefix up to the first wrong step; a step is doubted when its probability is below `threshold`). Step
    accuracy; right steps called right; wrong steps called wrong; and, as in ProcessBench, the earliest wrong step
    found exactly among the erroneous responses (no step doubted before it, and it doubted), no step doubted among
    the correct ones, and their harmonic mean (F1; 0 when both are 0, None when either set is empty). The one place
    ProcessBench's rule is computed: the training's held-out figures (prm/job.py) and eval-prm
    (inspect/processbench.py) call it."""
    steps = [(t, p >= threshold) for ts, ps in zip(truth, probs) for t, p in zip(ts, ps)]
    right = [called for t, called in steps if t == 1]
    wrong = [not called for t, called in steps if t == 0]
    found, clean = [], []
    for ts, ps in zip(truth, probs):
        first = next((k for k, t in enumerate(ts) if t == 0), None)
        doubted = next((k for k, p in enumerate(ps[:len(ts)]) if p < threshold), None)
        (found if first is not None else clean).append(doubted == first)
    share = lambda xs: sum(xs) / len(xs) if xs else None  # noqa: E731
    f_err, f_ok = share(found), share(clean)
    f1 = None if f_err is None or f_ok is None else 2 * f_err * f_ok / (f_err + f_ok) if f_err + f_ok else 0.0
    return {"step_accuracy": share([t == c for t, c in steps]), "right_called_right": share(right),
            "wrong_called_wrong": share(wrong), "first_wrong_found": f_err, "correct_called_correct": f_ok,
            "processbench_f1": f1, "labeled_steps": len(steps), "erroneous_responses": len(found),
            "correct_responses": len(clean)}


def labeled_figures(ws, scorer: ProcessScorer, who: str = "all", progress=None, batch_size: int = 16,
                    threshold: float = THRESHOLD) -> dict:
    """step_figures over the workspace's step-labeled responses (label.steps.labeled_responses(who)): how well this
    process reward model agrees with the step labels, and how often it finds the first wrong step."""
    from rloo_studio.label.steps import labeled_responses

    rows = labeled_responses(ws, who)
    if not rows:
        raise DataError("No step labels yet: label steps in the Label tab's step mode, import a stepwise file, "
                        "or make step labels from rollouts on the Process reward tab.")
    truth, probs, _ = judged(scorer, rows, progress, batch_size)
    return {**step_figures(truth, probs, threshold), "responses": len(truth), "who": who}


def judged(scorer: ProcessScorer, rows: list[dict], progress=None, batch_size: int = 16, leave_long: bool = False,
           max_length: int | None = None) -> tuple[list[list[int]], list[list[float]], int]:
    """Labeled responses ({prompt, response, steps: its step texts, labels: the verdicts of its first steps, 1 / 0 /
    -1}) read by the model: (truth, probs) for step_figures, each the labeled prefix up to the first wrong step
    (neutral counts right), and how many responses were left out: those whose steps the tokenizer merges (training
    leaves them out too) and, with `leave_long`, those longer than the model reads (else a DataError) or than
    `max_length` tokens (a run's own limit: training left those out)."""
    truth, probs, left = [], [], 0
    limits = [getattr(scorer.model.config, "max_position_embeddings", None) if leave_long else None, max_length]
    limit = min((n for n in limits if n), default=None)
    for i in range(0, len(rows), 256):
        part = rows[i:i + 256]
        encs = [encode(scorer.tok, r["prompt"], r["response"], scorer.enable_thinking, scorer.read_at) for r in part]
        keep = [k for k, e in enumerate(encs) if not limit or len(e.ids) <= limit]
        left += len(part) - len(keep)
        part, encs = [part[k] for k in keep], [encs[k] for k in keep]
        for r, e, ps in zip(part, encs, step_probabilities(scorer.model, scorer.tok, encs, batch_size,
                                                                  scorer.step_score)):
            if len(e.positions) != len(r["steps"]):
                left += 1
                continue  # steps the tokenizer merges: not judged (training left them out too)
            ts = [0 if v < 0 else 1 for v in r["labels"]]
            first = next((k for k, t in enumerate(ts) if t == 0), None)
            ts = ts if first is None else ts[:first + 1]
            truth.append(ts)
            probs.append(ps[:len(ts)])
        if progress:
            progress(min(i + 256, len(rows)), len(rows))
    return truth, probs, left
