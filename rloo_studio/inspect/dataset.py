"""The labeled set as the reward model sees it: every pair scored, accuracy, the margin histogram, the
pairs the model disagrees with, and whether scores follow length (Inspect's Dataset view, the records
table). Scoring itself is reward.scoring's; `summarize` needs no model."""
from __future__ import annotations

from dataclasses import dataclass, field

from rloo_studio.core.errors import DataError
from rloo_studio.core.stats import correlation
from rloo_studio.core.thinking import Template
from rloo_studio.label.store import preference_pairs
from rloo_studio.core.thinking import pair_kind
from rloo_studio.inspect.scoring import Scorer, load_scorer, parse_response, score_texts
from rloo_studio.runs.catalog import adapter_dir, find_run

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


def dataset_view(scorer: Scorer, ws, batch_size: int = 16, top: int = 10) -> DatasetView:
    """Score every labeled pair (label.store.preference_pairs) and summarize."""
    rows = preference_pairs(ws)
    if not rows:
        raise DataError("No labeled pairs with a preference yet: label some in the Label tab.")
    prompts = [r["prompt"] for r in rows for _ in (0, 1)]
    texts = [t for r in rows for t in (r["chosen"], r["rejected"])]
    s = score_texts(scorer, prompts, texts, batch_size)
    pairs = [PairScore(r["pair_id"], r["prompt"], r["chosen"], r["rejected"], s[2 * k], s[2 * k + 1],
                       r.get("source") or "") for k, r in enumerate(rows)]
    return summarize(pairs, top=top, template=scorer.template)


_DISAGREE: dict = {}  # (reward run, its adapter's mtime, the labels' state) -> pair ids; one entry


def disagreements(ws, reward_run: str) -> list[int]:
    """Pairs whose labeled preference the reward run's model scores the other way (margin < 0), most
    negative first (the Records tab's filter). Scored once per reward model and state of the labels, then kept."""
    rid = find_run(ws, reward_run, "reward")["id"]
    ad = adapter_dir(ws, rid) / "adapter_model.safetensors"
    if not ad.exists():
        raise DataError(f"Reward run {rid} saved no model: pick a finished reward run.")
    state = tuple(ws.query("SELECT COUNT(*), MAX(id) FROM labels")[0])
    key = (str(ws.root), rid, ad.stat().st_mtime, state)
    if key not in _DISAGREE:
        view = dataset_view(load_scorer(ws, reward_run=rid), ws, top=1 << 30)
        _DISAGREE.clear()
        _DISAGREE[key] = [p.pair_id for p in view.disagreements]
    return list(_DISAGREE[key])
