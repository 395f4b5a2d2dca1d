"""tokens.jsonl of an RLOO run: what each recorded step taught, token by token.

One line per completion of a recorded step (the same steps and order as samples.jsonl):

  step        the optimizer step that sampled the completion and then trained on it
  prompt      the group's index within the step (samples.jsonl's rows prompt*k ... prompt*k+k-1)
  completion  the completion's index within its group (0 .. k-1)
  prompt_text the prompt as samples.jsonl shows it
  ids, tokens the completion's token ids and each one decoded alone (special tokens kept)
  logp_old    the policy's log-prob of each token when it was sampled (TRL's own pass, before the update)
  logp_ref    the reference's (base model's) log-prob of each token; null when beta = 0 (no reference)
  logp_new    the updated policy's log-prob of each token, after the optimizer step (one extra forward pass)
  advantage   the completion's leave-one-out advantage (what the loss multiplied its log-prob by)
  in_loss     false when mask_truncated_completions left this completion out of the loss
  steps       [start, end) token ranges of the <think> reasoning steps, one per line

Δ log-prob = logp_new - logp_old; per-token KL = logp_old - logp_ref (TRL RLOO's first-order estimate, the one
its KL penalty sums). torch is imported only inside the functions the trainer's callback calls
(samples.TokensCallback); the readers (read_tokens, summary, describe) are plain Python for the UI and the CLI.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from rloo_studio.core.thinking import parse, token_span
from rloo_studio.runs.runner import read_jsonl

FILE = "tokens.jsonl"
STEP_SPLIT = "line"  # reasoning steps are lines (the demo's "7+8+0=15", one per digit)


# -- capture: TRL's per-token log-probs of the generation batch ------------------------------------------------

@dataclass
class Batch:
    """The last generation batch, in TRL's order before it shuffles (the order of trainer._logs and samples.jsonl)."""

    out: dict  # _generate_and_score_completions' output: prompt_ids/mask, completion_ids/mask, advantages
    old: object  # per-token log-probs of the policy when sampled, (B, C)
    ref: object | None  # per-token log-probs of the reference, (B, C); None when beta = 0
    prompts: list = field(default_factory=list)


class Capture:
    """Keeps the per-token log-probs TRL computes while scoring a generation batch, which TRL itself sums away.

    TRL 1.15's RLOOTrainer._generate_and_score_completions calls _get_per_token_logps_and_entropies under no_grad
    first for the policy, then (beta > 0) for the reference, and returns only the summed old log-prob. We wrap
    both methods on this trainer instance (the class, and Unsloth's patch of it, stay as they are), so the
    recorded values are TRL's own, at no extra cost."""

    def __init__(self, trainer):
        self.trainer, self.batch, self._calls = trainer, None, None
        gen, per_token = trainer._generate_and_score_completions, trainer._get_per_token_logps_and_entropies

        def scoring(*a, **kw):
            out = per_token(*a, **kw)
            if self._calls is not None:
                self._calls.append(out[0].detach())
            return out

        def generating(inputs):
            self._calls = []
            try:
                out = gen(inputs)
            finally:
                calls, self._calls = self._calls, None
            if trainer.model.training and calls:
                self.batch = Batch(out, calls[0], calls[1] if len(calls) > 1 else None,
                                   [x["prompt"] for x in inputs])
            return out

        trainer._get_per_token_logps_and_entropies = scoring
        trainer._generate_and_score_completions = generating

    def take(self) -> Batch | None:
        b, self.batch = self.batch, None
        return b


def updated_logps(trainer, batch: Batch):
    """The updated policy's per-token log-probs of the batch: one no-grad forward pass, in chunks of
    per_device_train_batch_size, through the same TRL function and attention mask that gave logp_old."""
    import torch

    o = batch.out
    ids = torch.cat([o["prompt_ids"], o["completion_ids"]], dim=1)
    mask = torch.cat([o["prompt_mask"], o["completion_mask"]], dim=1)
    with torch.no_grad():
        logps, _, _ = trainer._get_per_token_logps_and_entropies(
            trainer.model, ids, mask, o["completion_ids"].size(1), trainer.args.per_device_train_batch_size)
    return logps


def rows(batch: Batch, new, tok, start: str, step: int, k: int) -> list[dict]:
    """tokens.jsonl rows of a batch (k completions per prompt)."""
    o = batch.out
    in_loss = o["completion_mask"].sum(1).gt(0).tolist()
    # TRL pads completions on the right and masks them up to their EOS; a completion it left out of the loss
    # (mask_truncated_completions) has no mask, but was cut at the limit: it fills the padded width.
    width = o["completion_ids"].size(1)
    lengths = [int(m) if m else width for m in o["completion_mask"].sum(1).tolist()]
    ids, adv = o["completion_ids"].tolist(), o["advantages"].tolist()
    old, ref = batch.old.float().tolist(), batch.ref.float().tolist() if batch.ref is not None else None
    new = new.float().tolist()
    out = []
    for i, n in enumerate(lengths):
        toks = [tok.decode([t]) for t in ids[i][:n]]
        out.append({
            "step": step, "prompt": i // k, "completion": i % k, "prompt_text": _content(batch.prompts[i]),
            "ids": ids[i][:n], "tokens": toks, "logp_old": _r(old[i][:n]),
            "logp_ref": _r(ref[i][:n]) if ref is not None else None, "logp_new": _r(new[i][:n]),
            "advantage": round(float(adv[i]), 5), "in_loss": bool(in_loss[i]), "steps": think_steps(toks, start),
        })
    return out


def think_steps(tokens: list[str], start: str = "answer") -> list[list[int]]:
    """[start, end) token ranges of the reasoning's steps, found in the text the tokens spell (the template's
    state `start`: "think" when the prompt opened the block, so a completion holds only </think>)."""
    text, offsets, pos = "".join(tokens), [], 0
    for t in tokens:
        offsets.append((pos, pos + len(t)))
        pos += len(t)
    spans = [token_span(offsets, s.start, s.end) for s in parse(text, STEP_SPLIT, start).steps]
    return [[i, j] for i, j in spans if j > i]


def _r(xs: list[float]) -> list[float]:
    return [round(x, 5) for x in xs]


def _content(x) -> str:
    if isinstance(x, list):  # conversational: the last message's text
        return x[-1].get("content", "") if x else ""
    return str(x)


# -- reading ----------------------------------------------------------------------------------------------------

def read_tokens(run_dir, step: int | None = None, prompt: int | None = None) -> list[dict]:
    """Rows of tokens.jsonl, optionally of one step and one prompt's group."""
    rows_ = read_jsonl(run_dir / FILE)
    return [r for r in rows_ if (step is None or r["step"] == step) and (prompt is None or r["prompt"] == prompt)]


def recorded(run_dir) -> dict[int, int]:
    """{step: number of prompt groups} of the steps tokens.jsonl holds."""
    out: dict[int, int] = {}
    for r in read_jsonl(run_dir / FILE):
        out[r["step"]] = max(out.get(r["step"], 0), r["prompt"] + 1)
    return out


def deltas(row: dict) -> list[float]:
    return [n - o for n, o in zip(row["logp_new"], row["logp_old"])]


def kl(row: dict) -> list[float] | None:
    """Per-token KL estimate to the reference (logp_old - logp_ref), None without a reference."""
    return [o - r for o, r in zip(row["logp_old"], row["logp_ref"])] if row.get("logp_ref") else None


def summary(rows_: list[dict]) -> dict:
    """Mean Δ log-prob of the whole completion (the sum over its tokens: the quantity RLOO's loss weighs by the
    advantage) for completions with positive vs negative advantage, and whether the update followed them."""
    pos = [sum(deltas(r)) for r in rows_ if r["advantage"] > 0]
    neg = [sum(deltas(r)) for r in rows_ if r["advantage"] < 0]
    mp = sum(pos) / len(pos) if pos else None
    mn = sum(neg) / len(neg) if neg else None
    s = {"positive": len(pos), "negative": len(neg), "mean_delta_positive": mp, "mean_delta_negative": mn}
    if mp is None or mn is None:
        s["verdict"] = "no advantage to follow: every completion of this group earned the same reward"
        s["against"] = False
    else:
        s["against"] = mp <= mn
        s["verdict"] = (f"the update went against the advantage (positive {mp:+.3f} vs negative {mn:+.3f} "
                        "nats): clipping or the KL term can do that" if s["against"] else
                        f"the update followed the advantage: positive {mp:+.3f} vs negative {mn:+.3f} nats")
    return s


def describe(rows_: list[dict], width: int = 100) -> str:
    """Plain text of one group for `runs show --step N --prompt K`: each completion's advantage, Δ log-prob
    (sum), KL (sum) and per think-step Δ sums, then the group summary."""
    if not rows_:
        return "no token view recorded for that step and prompt (see: runs show RUN for the recorded steps)"
    lines = [f"step {rows_[0]['step']}, prompt {rows_[0]['prompt']}: {rows_[0]['prompt_text'][:width]}"]
    for r in rows_:
        d, k_ = deltas(r), kl(r)
        head = (f"  #{r['completion']} advantage {r['advantage']:+.3f}  Δ log-prob {sum(d):+.3f}"
                + (f"  KL {sum(k_):+.3f}" if k_ is not None else "") + ("" if r["in_loss"] else "  (not in loss)"))
        lines.append(head)
        lines.append("     " + "".join(r["tokens"]).replace("\n", "⏎")[:width])
        for n, (i, j) in enumerate(r["steps"], 1):
            lines.append(f"     step {n}: Δ {sum(d[i:j]):+.3f}  {''.join(r['tokens'][i:j]).strip()[:60]}")
    lines.append("  " + summary(rows_)["verdict"])
    return "\n".join(lines)
