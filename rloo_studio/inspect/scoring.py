"""Reward-model scoring: whole texts, every token, every <think> step — from one forward pass.

A sequence classifier over a causal decoder applies its `score` head to the hidden state of the
last token. Causal attention makes the hidden state at position t depend only on tokens <= t, so
the head applied at *every* position gives the score of every prefix in one pass (DESIGN.md).
Step scores are read at the last token of each step. `naive_step_scores` re-scores each prefix
with the model's own forward: the reference for tests and the benchmark.

Text format equals training (TRL RewardTrainer, explicit prompt): chat prompt + response + EOS, built
by core.reward_input.format_text.
"""
from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass
from pathlib import Path

from rloo_studio.core import bootstrap  # noqa: F401  (unsloth before transformers)

# isort: split
import torch  # noqa: E402

from rloo_studio.core import kept  # noqa: E402
from rloo_studio.core.errors import DataError, ModelLoadError  # noqa: E402
from rloo_studio.core.models import load_reward_adapter, load_seq_cls, resolve, run_setting, run_trusts_code
from rloo_studio.core.reward_input import format_ids_many, format_text  # noqa: E402  (the text it trained on)
from rloo_studio.core.thinking import answer_alone as alone_text  # noqa: E402
from rloo_studio.core.thinking import body_start, chat_prompt, parse, template_info, token_span
from rloo_studio.label.store import preference_pairs

UNTRAINED = "base model, untrained head"


@dataclass
class Scorer:
    model: object
    tok: object
    label: str  # what the UI and the CLI show
    trained: bool  # False: a fresh, seeded, untrained score head (numbers mean nothing yet)
    enable_thinking: bool = True  # the chat template's switch, as the reward model was trained

    @property
    def template(self):
        """What the chat template puts into the prompt (thinking.Template): opened <think>, ..."""
        return template_info(self.tok, self.enable_thinking)


@dataclass(frozen=True)
class StepScore:
    text: str
    start: int  # character offsets into the response
    end: int
    score: float  # score of the prefix ending at the step's last token
    delta: float  # minus the previous step's score (first step: minus the score just before it)
    token: int  # index of that token within the response's tokens


@dataclass
class Scored:
    prompt: str
    response: str
    total: float  # the whole formatted text, read at EOS (what training compares)
    answer: float | None  # the answer alone (thinking removed), scored as its own text
    thinking: float | None  # the prefix through the reasoning (</think>, or its last token)
    steps: list[StepScore]
    tokens: list[str]  # response tokens (plus the EOS), as text
    token_scores: list[float]  # score of the prefix ending at each of those tokens
    closed: bool
    truncated: bool

    def as_json(self) -> dict:
        return {
            "total": self.total, "answer": self.answer, "thinking": self.thinking, "closed": self.closed,
            "truncated": self.truncated,
            "steps": [{"text": s.text, "start": s.start, "end": s.end, "score": s.score, "delta": s.delta}
                      for s in self.steps],
        }


# ---------------------------------------------------------------- loading

_CACHE: dict[tuple, Scorer] = {}
_LOCK = threading.Lock()


def load_scorer(ws=None, reward_run: str | None = None, reward_model: str | None = None,
                trust_remote_code: bool = False, enable_thinking: bool | None = None) -> Scorer:
    """A trained reward run's adapter (by run id), or a model folder / hub id.

    A folder holding a PEFT adapter is a trained reward model; any other model gets a fresh
    score head, seeded so that its (meaningless) numbers repeat, and is labelled untrained.
    The last load is cached (keyed by path and modification time). enable_thinking (hybrid chat
    templates): None takes a reward run's own setting (True for a model folder).
    """
    if bool(reward_run) == bool(reward_model):
        raise DataError("Choose one reward model: a trained reward run, or a base model (untrained head).")
    if reward_run:
        from rloo_studio.runs.catalog import adapter_dir, scorer_run

        if ws is None or ws.run(str(reward_run).strip()) is None:
            raise DataError(f"No run {reward_run} in this workspace (see `python -m rloo_studio runs`).")
        reward_run = scorer_run(ws, reward_run, ("outcome",))["id"]  # a run whose kind gives no such scorer: in words
        path, label = adapter_dir(ws, reward_run), f"reward run {reward_run}"
    else:
        path = Path(resolve(reward_model))
        label = f"{reward_model} ({UNTRAINED})"
    trained = (path / "adapter_config.json").exists()
    if reward_model and trained:
        label = f"reward adapter {reward_model}"
    trust = run_trusts_code(path) if reward_run else trust_remote_code  # a run: as its user ticked it
    if enable_thinking is None:
        enable_thinking = bool(run_setting(path, "enable_thinking", True)) if reward_run else True
    key = (str(path), _mtime(path), trust)
    with _LOCK:
        if key not in _CACHE:
            if reward_run and not trained:
                raise ModelLoadError(f"Run {reward_run} saved no adapter (did it fail before saving?).")
            _CACHE.clear()  # one model at a time (two 8B models would not fit a 24 GB GPU); free it first
            if trained:
                model, tok = load_reward_adapter(path, trust_remote_code=trust)
            else:
                model, tok = load_seq_cls(str(path), trust_remote_code=trust)
                _seed_head(_parts(model)[1])
            if torch.cuda.is_available() and not getattr(model, "is_loaded_in_4bit", False):
                model.to("cuda")  # from_pretrained loads onto the CPU; 4-bit weights are placed by bitsandbytes
            model.eval()
            _CACHE[key] = Scorer(model, tok, label, trained)
        return dataclasses.replace(_CACHE[key], enable_thinking=bool(enable_thinking))


def _kept() -> list[kept.Kept]:
    with _LOCK:
        return [kept.Kept("Inspect's reward model", s.label, kept.model_bytes(s.model)) for s in _CACHE.values()]


def unload() -> None:
    """Drop the kept reward model (Inspect, active labeling and the Records filter load it again when asked)."""
    with _LOCK:
        _CACHE.clear()


kept.register("Inspect's reward model", _kept, unload)


def _mtime(path: Path) -> float:
    files = [path / "adapter_model.safetensors", path / "adapter_config.json", path / "config.json"]
    return max((f.stat().st_mtime for f in files if f.exists()), default=0.0)


def _seed_head(head) -> None:
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        w = torch.randn(head.weight.shape, generator=g) * 0.02
        head.weight.copy_(w.to(head.weight.dtype))


def _parts(model):
    """(transformer, score head). Under PEFT the head is the adapter's trained copy
    (ModulesToSaveWrapper forwards to the active adapter's module)."""
    inner = model.get_base_model() if hasattr(model, "get_base_model") else model
    return getattr(inner, inner.base_model_prefix), inner.score


# ---------------------------------------------------------------- text and tokens

def _encode(tok, prompt: str, response: str, enable_thinking: bool = True):
    """(ids, offsets, base, k): text[base + i] == response[i] for every i >= k, where response[k:] is
    the part that follows the chat prompt (k > 0 when a leading <think> is already in the prompt)."""
    k = body_start(template_info(tok, enable_thinking), response)
    base = len(chat_prompt(tok, prompt, enable_thinking)) - k
    enc = tok(format_text(tok, prompt, response, enable_thinking), return_offsets_mapping=True)
    return enc["input_ids"], [tuple(o) for o in enc["offset_mapping"]], base, k


def length_batches(lengths: list[int], batch_size: int = 8, batch_tokens: int | None = None) -> list[list[int]]:
    """Indices into `lengths`, shortest first, cut into batches of at most `batch_size` sequences and, with
    `batch_tokens`, at most that many padded tokens (rows x the widest): short texts go many to a batch, long
    ones few, and a batch pads only up to its own longest (sorted, so that is little)."""
    out: list[list[int]] = [[]]
    for i in sorted(range(len(lengths)), key=lengths.__getitem__):
        b = out[-1]
        if b and (len(b) >= batch_size or (batch_tokens and lengths[i] * (len(b) + 1) > batch_tokens)):
            out.append(b := [])
        b.append(i)
    return out if out[0] else []


def _padded(id_lists: list[list[int]], idx: list[int], pad: int, padding_side: str = "right"):
    """(input ids, attention mask, position ids) of the sequences `idx`, padded to the longest of them;
    position ids follow the mask so that left and right padding see the same positions."""
    width = max(len(id_lists[i]) for i in idx)
    ids = torch.full((len(idx), width), pad, dtype=torch.long)
    mask = torch.zeros((len(idx), width), dtype=torch.long)
    for r, i in enumerate(idx):
        n = len(id_lists[i])
        cols = slice(0, n) if padding_side == "right" else slice(width - n, width)
        ids[r, cols] = torch.tensor(id_lists[i])
        mask[r, cols] = 1
    return ids, mask, (mask.cumsum(-1) - 1).clamp(min=0)


def _check_length(scorer: Scorer, id_lists: list[list[int]]) -> None:
    limit = getattr(scorer.model.config, "max_position_embeddings", None)
    if limit and id_lists and max(map(len, id_lists)) > limit:
        raise DataError(f"The text is {max(map(len, id_lists))} tokens; this model reads at most {limit}.")


def _pad_id(scorer: Scorer) -> int:
    return scorer.tok.pad_token_id if scorer.tok.pad_token_id is not None else 0


@torch.no_grad()
def position_scores(scorer: Scorer, id_lists: list[list[int]], batch_size: int = 8,
                    padding_side: str = "right") -> list[list[float]]:
    """The head's score at every position of each sequence: one forward pass per batch (length_batches)."""
    if padding_side not in ("left", "right"):
        raise ValueError("padding_side must be 'left' or 'right'")
    _check_length(scorer, id_lists)
    backbone, head = _parts(scorer.model)
    device = next(scorer.model.parameters()).device
    out: list[list[float]] = [[] for _ in id_lists]
    for idx in length_batches([len(x) for x in id_lists], batch_size):
        ids, mask, pos = _padded(id_lists, idx, _pad_id(scorer), padding_side)
        hidden = backbone(input_ids=ids.to(device), attention_mask=mask.to(device),
                          position_ids=pos.to(device)).last_hidden_state
        s = head(hidden).squeeze(-1).float().cpu()
        width = ids.shape[1]
        for r, i in enumerate(idx):
            n = len(id_lists[i])
            out[i] = (s[r, :n] if padding_side == "right" else s[r, width - n :]).tolist()
    return out


@torch.inference_mode()
def final_scores(scorer: Scorer, id_lists: list[list[int]], batch_size: int = 8, batch_tokens: int | None = None,
                 on_batch=None) -> list[float]:
    """The head at the last token of each sequence: what the sequence classifier outputs, what TRL trained.
    One forward pass per batch (length_batches), the head applied to the last token's hidden state only.
    on_batch(indices, scores) after each batch (progress, a cache; it may raise to stop)."""
    _check_length(scorer, id_lists)
    backbone, head = _parts(scorer.model)
    device = next(scorer.model.parameters()).device
    out = [0.0] * len(id_lists)
    for idx in length_batches([len(x) for x in id_lists], batch_size, batch_tokens):
        ids, mask, pos = _padded(id_lists, idx, _pad_id(scorer))
        hidden = backbone(input_ids=ids.to(device), attention_mask=mask.to(device),
                          position_ids=pos.to(device)).last_hidden_state
        last = hidden[torch.arange(len(idx), device=hidden.device), mask.sum(-1).to(hidden.device) - 1]
        scores = head(last).squeeze(-1).float().cpu().tolist()
        for i, v in zip(idx, scores):
            out[i] = v
        if on_batch is not None:
            on_batch(idx, scores)
    return out


def score_texts(scorer: Scorer, prompts: list[str], responses: list[str], batch_size: int = 8) -> list[float]:
    """Total score of each prompt + response (the head at EOS), batched."""
    return final_scores(scorer, format_ids_many(scorer.tok, prompts, responses, scorer.enable_thinking), batch_size)


def score_responses(scorer: Scorer, items: list[tuple[str, str]], split: str = "blank", batch_size: int = 8,
                    padding_side: str = "right", answer_alone: bool = True) -> list[Scored]:
    """Totals, per-token and per-step scores, thinking and answer-alone scores; one pass per batch.

    The answer alone is a second text (thinking removed, rendered as the chat template renders an
    answer without reasoning) scored in the same batches; answer_alone=False skips it (Scored.answer
    is then None). A response reads as the template leaves it: after Qwen3-Thinking's generation prompt
    it begins inside <think> (with or without the tag), and one cut before </think> is all reasoning.
    """
    tpl, think = scorer.template, scorer.enable_thinking
    encs = [_encode(scorer.tok, p, r, think) for p, r in items]
    parsed = [parse_response(tpl, r, split) for _, r in items]
    # A response cut before its answer (reasoning never closed) has no answer to score alone.
    has = [answer_alone and not (pr.truncated and not pr.answer.strip()) for pr in parsed]
    alone = [_encode(scorer.tok, p, alone_text(tpl, pr.answer), think)[0]
             for (p, _), pr, h in zip(items, parsed, has) if h]
    scores = position_scores(scorer, [e[0] for e in encs] + alone, batch_size, padding_side)
    it = iter(scores[len(items):])
    answers = [next(it)[-1] if h else None for h in has]
    return [
        _assemble(scorer.tok, p, r, pr, enc, s, a)
        for (p, r), pr, enc, s, a in zip(items, parsed, encs, scores[: len(items)], answers)
    ]


def score_response(scorer: Scorer, prompt: str, response: str, split: str = "blank") -> Scored:
    return score_responses(scorer, [(prompt, response)], split)[0]


def parse_response(tpl, response: str, split: str = "blank"):
    """The response parsed from where the prompt leaves it; a leading <think> the prompt already opened
    is skipped (its offsets stay those of the whole response)."""
    k = body_start(tpl, response)
    pr = parse(response[k:], split, tpl.start)
    if not k:
        return pr
    shift = lambda spans: [(a + k, b + k) for a, b in spans]  # noqa: E731
    return dataclasses.replace(
        pr, text=response, think_spans=shift(pr.think_spans), answer_spans=shift(pr.answer_spans),
        steps=[dataclasses.replace(st, start=st.start + k, end=st.end + k) for st in pr.steps], has_open=True)


def _assemble(tok, prompt, response, pr, enc, s, answer_score) -> Scored:
    ids, offsets, base, k = enc
    body = response[k:]
    first = token_span(offsets, base + k, base + len(response))[0] if body else len(ids) - 1
    if not body or first == 0 and offsets[0][1] <= base + k:
        first = len(ids) - 1  # empty response: only the EOS
    steps, prev = [], None
    for st in pr.steps:
        i, j = token_span(offsets, base + st.start, base + st.end)
        if j <= i:
            continue
        before = s[i - 1] if prev is None else prev
        steps.append(StepScore(st.text, st.start, st.end, s[j - 1], s[j - 1] - before, j - 1 - first))
        prev = s[j - 1]
    thinking = None
    if pr.think_spans:
        a, b = pr.think_spans[-1]
        end = b + len("</think>") if pr.closed and response[b:].startswith("</think>") else b
        j = token_span(offsets, base + a, base + end)[1]
        thinking = s[j - 1] if j else None
    return Scored(
        prompt=prompt, response=response, total=s[-1], answer=answer_score, thinking=thinking, steps=steps,
        tokens=[tok.decode([t]) for t in ids[first:]], token_scores=list(s[first:]),
        closed=pr.closed, truncated=pr.truncated,
    )


@torch.no_grad()
def naive_step_scores(scorer: Scorer, prompt: str, response: str, split: str = "blank") -> dict:
    """Reference: re-score each step's prefix with its own forward pass of the model.

    Returns {"total", "steps": [score per step]} for comparison with the one-pass numbers.
    """
    ids, offsets, base, _ = _encode(scorer.tok, prompt, response, scorer.enable_thinking)
    device = next(scorer.model.parameters()).device

    def run(n: int) -> float:
        x = torch.tensor([ids[:n]], device=device)
        return float(scorer.model(input_ids=x).logits[0, 0])

    steps = []
    for st in parse_response(scorer.template, response, split).steps:
        i, j = token_span(offsets, base + st.start, base + st.end)
        if j > i:
            steps.append(run(j))
    return {"total": run(len(ids)), "steps": steps}


MAX_TEXT_CHARS = 100_000  # a typed prompt or response longer than this is a paste gone wrong


def check_text(text: str, what: str, required: bool = True) -> str:
    """A typed prompt / response, or a DataError in plain words (empty, or absurdly long)."""
    text = text or ""
    if required and not text.strip():
        raise DataError(f"The {what} is empty: type one (or load a labeled pair by its id).")
    if len(text) > MAX_TEXT_CHARS:
        raise DataError(f"The {what} is {len(text):,} characters; the reward model scores up to "
                        f"{MAX_TEXT_CHARS:,} here. Paste a shorter text.")
    return text


def parse_pair_id(value) -> int:
    """A pair id as typed (a number box gives a float or None) -> int, or a DataError in plain words."""
    if value is None or (isinstance(value, str) and not value.strip()):
        raise DataError("Type a pair id first (the numbers in the Label tab and the Dataset view's table).")
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise DataError(f"Pair ids are whole numbers, not {str(value)[:40]!r}.") from None
    if f != f or f in (float("inf"), float("-inf")) or not f.is_integer() or f < 1:
        raise DataError(f"Pair ids are whole numbers from 1 up, not {value}.")
    return int(f)


def pair_texts(ws, pair_id: int) -> dict:
    """{prompt, chosen, rejected} of a labeled pair (for the pair view and 'open'); a DataError that says
    whether the pair does not exist or has no preference label yet."""
    for r in preference_pairs(ws):
        if r["pair_id"] == pair_id:
            return r
    if pair_id > 2 ** 62 or not ws.query("SELECT 1 FROM pairs WHERE id=?", (pair_id,)):
        raise DataError(f"There is no pair {pair_id} in this workspace. Pair ids are the numbers shown in the "
                        "Label tab and in the Dataset view's table.")
    raise DataError(f"Pair {pair_id} has no preference label yet (unlabeled, a tie, a skip or a split vote); "
                    "label it in the Label tab first.")


# ---------------------------------------------------------------- CLI

def score_json(ws=None, reward_run: str | None = None, reward_model: str | None = None, prompt: str = "",
               response: str = "", split: str = "blank", trust_remote_code: bool = False,
               enable_thinking: bool | None = None) -> dict:
    """What `python -m rloo_studio score --json` prints."""
    scorer = load_scorer(ws, reward_run, reward_model, trust_remote_code, enable_thinking)
    out = score_response(scorer, prompt, response, split).as_json()
    return {"reward_model": scorer.label, "trained": scorer.trained, "split": split, **out}
