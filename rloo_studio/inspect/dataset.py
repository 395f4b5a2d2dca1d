"""The labeled set as the reward model sees it: every pair scored, accuracy, the margin histogram, the
pairs the model disagrees with, and whether scores follow length (Inspect's Dataset view, the records
table). `summarize` needs no model.

Scoring the set (`score_labeled`) costs about one batched forward pass over its tokens: each text is
scored once (a text in two pairs too), read at its last token only, in batches of similar length under a
token budget (scoring.length_batches), a chunk of texts tokenized at a time so that memory stays bounded.
A reward run's scores are kept in its folder (score_cache), so a second look is read, not computed; a
progress callback sees every batch and may stop the work (what was scored stays kept)."""
from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import dataclass, field

from rloo_studio.core.errors import DataError, StudioError
from rloo_studio.core.reward_input import format_ids_many
from rloo_studio.core.stats import correlation
from rloo_studio.core.thinking import Template, pair_kind
from rloo_studio.inspect.score_cache import ScoreCache, text_key
from rloo_studio.inspect.scoring import Scorer, final_scores, load_scorer, parse_response
from rloo_studio.label.store import preference_pairs
from rloo_studio.runs.catalog import adapter_dir, scorer_run

CHUNK = 4096
"""Texts tokenized and scored at a time."""
BATCH_TOKENS = {"cpu": 2048, "cuda": 16384}
"""Padded tokens per forward pass (rows x the longest of the batch), by device. On the CPU larger batches are
slower (bench/bench_dataset_scoring.py: 2,048 beat 4,096 by 1.3x and 65,536 by 2.2x on the 25M model); the GPU
figure is a starting point, not measured here (no GPU on the machines this was built on)."""


def budget(scorer: Scorer) -> int:
    device = next(scorer.model.parameters()).device.type
    return BATCH_TOKENS.get(device, BATCH_TOKENS["cpu"])


class Stopped(StudioError):
    """The scoring was stopped by the person; what it scored is kept."""

LENGTH_BIAS_WARN = 0.5
"""|Pearson r| of score vs length at or above which the dataset view warns."""


@dataclass
class PairScore:
    pair_id: int
    prompt: str
    chosen: str
    rejected: str
    chosen_score: float
    rejected_score: float
    source: str = ""  # where the pair came from (an import's file name, "candidates", "rloo:<run>" ...)

    @property
    def margin(self) -> float:
        return self.chosen_score - self.rejected_score


@dataclass
class DatasetView:
    pairs: list[PairScore]
    accuracy: float  # share of pairs where the chosen response scores higher
    mean_margin: float
    histogram: list[tuple[float, float, int]]  # (bin start, bin end, pairs)
    disagreements: list[PairScore]  # the most negative margins first
    length_r: float | None  # Pearson r of score vs response length (characters)
    thinking_r: float | None  # ... vs thinking length (characters)
    warnings: list[str] = field(default_factory=list)
    groups: list[dict] = field(default_factory=list)
    """Accuracy per kind of pair (core.thinking.pair_kind: both reason / only one does / neither) and per
    source: [{"by": "kind" | "source", "name", "pairs", "accuracy"}], the held-out breakdown of a reward run
    for the whole labeled set, so a model right on the format pairs and at chance on the rest shows it."""


def groups(pairs: list[PairScore], start: str = "answer") -> list[dict]:
    """Accuracy of the pairs of each kind and of each source (largest groups first within each)."""
    out = []
    for by, key in (("kind", lambda p: pair_kind(p.chosen, p.rejected, start)), ("source", lambda p: p.source)):
        parts: dict[str, list[PairScore]] = {}
        for p in pairs:
            parts.setdefault(key(p) or "–", []).append(p)
        for name, ps in sorted(parts.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            out.append({"by": by, "name": name, "pairs": len(ps), "accuracy": sum(p.margin > 0 for p in ps) / len(ps)})
    return out


def histogram(values: list[float], bins: int = 20) -> list[tuple[float, float, int]]:
    if not values:
        return []
    lo, hi = min(values), max(values)
    if hi == lo:
        return [(lo, hi, len(values))]
    width = (hi - lo) / bins
    counts = [0] * bins
    for v in values:
        counts[min(int((v - lo) / width), bins - 1)] += 1
    return [(lo + k * width, lo + (k + 1) * width, c) for k, c in enumerate(counts)]


def summarize(pairs: list[PairScore], bins: int = 20, top: int = 10, warn_r: float = LENGTH_BIAS_WARN,
              template: Template | None = None) -> DatasetView:
    """Accuracy, margins, disagreements and length bias of scored pairs (no model needed). `template`:
    each response's thinking is read as the chat prompt leaves it (None: a template that opens nothing)."""
    margins = [p.margin for p in pairs]
    texts = [t for p in pairs for t in (p.chosen, p.rejected)]
    scores = [s for p in pairs for s in (p.chosen_score, p.rejected_score)]
    tpl = template or Template()
    length_r = correlation([float(len(t)) for t in texts], scores)
    thinking_r = correlation([float(len(parse_response(tpl, t).thinking)) for t in texts], scores)
    warnings = [
        f"Scores correlate with {what} (r = {r:+.2f}): the model may reward length rather than quality."
        for what, r in (("response length", length_r), ("thinking length", thinking_r))
        if r is not None and abs(r) >= warn_r
    ]
    return DatasetView(
        pairs=pairs,
        accuracy=sum(m > 0 for m in margins) / len(margins) if margins else 0.0,
        mean_margin=sum(margins) / len(margins) if margins else 0.0,
        histogram=histogram(margins, bins),
        disagreements=sorted((p for p in pairs if p.margin < 0), key=lambda p: p.margin)[:top],
        length_r=length_r, thinking_r=thinking_r, warnings=warnings, groups=groups(pairs, tpl.start),
    )


@dataclass
class Progress:
    """What score_labeled tells its callback after each batch."""
    done: int  # texts scored so far in this call
    total: int  # texts this call scores (those not already kept)
    kept: int  # texts whose score was already kept (not scored again)
    seconds: float  # since the first batch began

    @property
    def eta(self) -> float | None:
        """Seconds left at the pace so far (None before the first batch)."""
        return self.seconds / self.done * (self.total - self.done) if self.done else None


def run_cache(ws, reward_run: str | None, scorer: Scorer) -> ScoreCache | None:
    """The score cache of a trained reward run's model (None for no run, or a run that saved no adapter weights
    file). Closed on leaving `with run_cache(...) as cache:` (nothing to close for None)."""
    weights = adapter_dir(ws, reward_run) / "adapter_model.safetensors" if reward_run else None
    if weights is None or not weights.exists():
        return None
    return ScoreCache(ws.run_dir(reward_run), weights, scorer.enable_thinking)


def score_kept(scorer: Scorer, items: list[tuple], cache: ScoreCache | None = None, progress=None,
               batch_tokens: int | None = None) -> list[float]:
    """The score of each (prompt, response): kept scores read from `cache`, every other text scored once (a
    text met twice too) and kept. progress(Progress) after each batch; it may raise (Stopped)."""
    keys = [text_key(p, t) for p, t in items]
    known = cache.get(keys) if cache is not None else {}
    todo: dict[bytes, tuple] = {}
    for k, item in zip(keys, items):
        if k not in known:
            todo.setdefault(k, item)
    todo_items, t0, done = list(todo.items()), time.perf_counter(), 0
    for c in range(0, len(todo_items), CHUNK):
        part = todo_items[c:c + CHUNK]
        ids = format_ids_many(scorer.tok, [p for _, (p, _) in part], [t for _, (_, t) in part],
                              scorer.enable_thinking)

        def kept(idx, scores, part=part):
            nonlocal done
            got = [(part[i][0], s) for i, s in zip(idx, scores)]
            known.update(got)
            if cache is not None:
                cache.put(got)
            done += len(got)
            if progress is not None:
                progress(Progress(done, len(todo_items), len(known) - done, time.perf_counter() - t0))

        final_scores(scorer, ids, batch_size=1 << 16, batch_tokens=batch_tokens or budget(scorer), on_batch=kept)
    return [known[k] for k in keys]


def score_labeled(scorer: Scorer, rows: list[dict], cache: ScoreCache | None = None, progress=None,
                  batch_tokens: int | None = None) -> list[tuple[float, float]]:
    """(chosen score, rejected score) of each {prompt, chosen, rejected} row (score_kept)."""
    s = score_kept(scorer, [(r["prompt"], t) for r in rows for t in (r["chosen"], r["rejected"])], cache,
                   progress, batch_tokens)
    return list(zip(s[::2], s[1::2]))


def score_rows(scorer: Scorer, rows: list[dict], cache: ScoreCache | None = None, progress=None,
               numbers: list[int] | None = None, unit: str = "Row") -> list[dict]:
    """`score --file`: each {prompt, response} row gets its "score"; each {prompt, chosen, rejected} row its
    "chosen_score", "rejected_score" and "margin"; the row's other keys are kept. numbers: each row's number in
    its file (for the messages; default 1, 2, ...)."""
    items = []
    for n, r in zip(numbers or range(1, len(rows) + 1), rows):
        sides = ("response",) if "response" in r else ("chosen", "rejected")
        if not isinstance(r.get("prompt"), (str, list)) or any(not isinstance(r.get(k), str) for k in sides):
            raise DataError(f"{unit} {n} needs a prompt and a response, or a prompt, a chosen and a rejected "
                            f"response (text); it has {', '.join(sorted(r)) or 'nothing'}.")
        items += [(r["prompt"], r[k]) for k in sides]
    it = iter(score_kept(scorer, items, cache, progress))
    out = []
    for r in rows:
        if "response" in r:
            out.append({**r, "score": next(it)})
        else:
            c, j = next(it), next(it)
            out.append({**r, "chosen_score": c, "rejected_score": j, "margin": c - j})
    return out


def dataset_view(scorer: Scorer, ws, top: int = 10, cache: ScoreCache | None = None, progress=None) -> DatasetView:
    """Score every labeled pair (label.store.preference_pairs; score_labeled) and summarize."""
    rows = preference_pairs(ws)
    if not rows:
        raise DataError("No labeled pairs with a preference yet: label some in the Label tab.")
    scores = score_labeled(scorer, rows, cache, progress)
    pairs = [PairScore(r["pair_id"], r["prompt"], r["chosen"], r["rejected"], c, j, r.get("source") or "")
             for r, (c, j) in zip(rows, scores)]
    return summarize(pairs, top=top, template=scorer.template)


_DISAGREE: dict = {}  # (reward run, its adapter's mtime, the labels' state) -> pair ids; one entry


def disagreements(ws, reward_run: str) -> list[int]:
    """Pairs whose labeled preference the reward run's model scores the other way (margin < 0), most
    negative first (the Records tab's filter). Scored once per reward model and state of the labels, then kept."""
    rid = scorer_run(ws, reward_run, ("outcome",))["id"]
    ad = adapter_dir(ws, rid) / "adapter_model.safetensors"
    if not ad.exists():
        raise DataError(f"Reward run {rid} saved no model: pick a finished reward run.")
    state = tuple(ws.query("SELECT COUNT(*), MAX(id) FROM labels")[0])
    key = (str(ws.root), rid, ad.stat().st_mtime, state)
    if key not in _DISAGREE:
        scorer = load_scorer(ws, reward_run=rid)
        with run_cache(ws, rid, scorer) or nullcontext() as cache:
            view = dataset_view(scorer, ws, top=1 << 30, cache=cache)
        _DISAGREE.clear()
        _DISAGREE[key] = [p.pair_id for p in view.disagreements]
    return list(_DISAGREE[key])
