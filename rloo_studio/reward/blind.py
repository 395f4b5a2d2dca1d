"""Is a reward model blind to what a rule reward sees? Two views, no gradio, no torch.

1. Held-out pairs by kind: `core.thinking.pair_kind` tells from a pair's texts whether both sides reason in
   <think>, only one does, or neither, so a reward run can report its held-out accuracy per kind
   and per source of pairs (`breakdown`). On the demo, "only chosen reasons" pairs are told apart
   by the format alone, "both reason" pairs only by checking the arithmetic.
2. Live RLOO completions: when rule rewards run beside the reward model, `correlations` measures
   how the reward-model reward moves with each rule reward (overall, within each prompt's group,
   and among completions that think), and `blind_warnings` says in plain words when the reward
   model does not separate what a rule separates.
"""
from __future__ import annotations

from collections import defaultdict

from rloo_studio.core.stats import correlation
from rloo_studio.core.thinking import reasons

REWARD_MODEL = "reward_model"  # the reward-model reward's name in samples.jsonl (rloo.config.REWARD_MODEL)
BLIND_R = 0.2
"""Pearson r below which the reward model is said not to separate what a rule separates."""
MIN_COMPLETIONS = 16
"""Fewest completions (with the rule varying among them) a slice needs before it can warn."""
FORMAT_RULES = ("think_format",)
"""Rules that judge whether a completion thinks: 'among completions that think' says nothing about them."""
WHAT = {
    "correctness": "correct and wrong answers",
    "accuracy": "correct and wrong answers",
    "reasoning_accuracy": "correct and wrong answers",
    "think_format": "completions that think and completions that do not",
    "answer_present": "completions with an answer and completions without one",
}
SLICES = ("among completions that think", "within each prompt's group", "over all recent completions")

# -- held-out pairs by kind and source -----------------------------------------------------------


def breakdown(rows: list[dict]) -> dict:
    """Held-out accuracy per kind and per source.

    rows: one per held-out pair scored, {pair_id, kind, source, chosen_score, rejected_score}.
    Returns {"pairs": n, "correct": k, "accuracy": k/n, "by_kind": {kind: {pairs, correct, accuracy}},
    "by_source": {source: {...}}, "rows": [...]} — each group's pairs add up to n."""
    def stats(part):
        k = sum(r["chosen_score"] > r["rejected_score"] for r in part)
        return {"pairs": len(part), "correct": k, "accuracy": k / len(part) if part else None}

    out = stats(rows)
    for key, name in (("kind", "by_kind"), ("source", "by_source")):
        groups: dict[str, list] = defaultdict(list)
        for r in rows:
            groups[str(r.get(key) or "unknown")].append(r)
        out[name] = {g: stats(part) for g, part in sorted(groups.items())}
    out["rows"] = rows
    return out


def metric_record(b: dict) -> dict:
    """Flat metrics for metrics.jsonl: eval_accuracy/kind:<kind>, eval_pairs/kind:<kind>, same for sources."""
    rec = {}
    for name, prefix in (("by_kind", "kind"), ("by_source", "source")):
        for g, s in b.get(name, {}).items():
            rec[f"eval_accuracy/{prefix}:{g}"] = s["accuracy"]
            rec[f"eval_pairs/{prefix}:{g}"] = s["pairs"]
    return rec


def breakdown_text(b: dict | None) -> str:
    """One line per kind and per source: 'both reason: 9/10 (90.0%)'; '' without a breakdown."""
    if not b or not b.get("pairs"):
        return ""
    lines = []
    for name, what in (("by_kind", "by kind"), ("by_source", "by source")):
        parts = [f"{g}: {s['correct']}/{s['pairs']} ({s['accuracy']:.1%})" for g, s in b[name].items()]
        lines.append(f"held-out accuracy {what} — " + "; ".join(parts))
    return "\n".join(lines)


def breakdown_cell(b: dict | None) -> str:
    """Compact, for a table cell: 'only chosen reasons 37/37 · both reason 9/10 | source demo 46/47'."""
    if not b or not b.get("pairs"):
        return ""
    kinds = " · ".join(f"{g} {s['correct']}/{s['pairs']}" for g, s in b["by_kind"].items())
    srcs = " · ".join(f"{g} {s['correct']}/{s['pairs']}" for g, s in b["by_source"].items())
    return f"{kinds} | source: {srcs}"


# -- live RLOO completions -----------------------------------------------------------------------


def _demeaned(rows: list[tuple], key) -> tuple[list[float], list[float]]:
    """Both values minus their group's mean, for groups of at least two completions."""
    groups: dict = defaultdict(list)
    for row in rows:
        groups[key(row)].append(row)
    xs, ys = [], []
    for g in groups.values():
        if len(g) < 2:
            continue
        mx, my = sum(r[0] for r in g) / len(g), sum(r[1] for r in g) / len(g)
        xs += [r[0] - mx for r in g]
        ys += [r[1] - my for r in g]
    return xs, ys


def correlations(samples: list[dict], reward_model: str = REWARD_MODEL) -> list[dict]:
    """r between the reward-model reward and each other reward in samples.jsonl rows.

    One entry per rule and slice: {rule, slice, r, n}; r is None where the rule does not vary (or too
    few completions). Within a group, both rewards are taken relative to the group's mean (what the
    leave-one-out advantage sees)."""
    rules = []
    for s in samples:
        for k in s.get("rewards") or {}:
            if k != reward_model and k not in rules:
                rules.append(k)
    if not rules or not any((s.get("rewards") or {}).get(reward_model) is not None for s in samples):
        return []
    thinks = [reasons(s.get("response") or s.get("completion", "")) for s in samples]
    out = []
    for rule in rules:
        rows = [(s["rewards"][reward_model], s["rewards"][rule], s.get("step"), s.get("prompt"), t)
                for s, t in zip(samples, thinks)
                if (s.get("rewards") or {}).get(reward_model) is not None and s["rewards"].get(rule) is not None]
        slices = {
            SLICES[2]: ([r[0] for r in rows], [r[1] for r in rows]),
            SLICES[1]: _demeaned(rows, lambda r: (r[2], r[3])),
        }
        if rule not in FORMAT_RULES:
            think_rows = [r for r in rows if r[4]]
            slices[SLICES[0]] = ([r[0] for r in think_rows], [r[1] for r in think_rows])
        for name in SLICES:
            if name in slices:
                x, y = slices[name]
                out.append({"rule": rule, "slice": name, "r": correlation(x, y), "n": len(x)})
    return out


def blind_warnings(samples: list[dict], reward_model: str = REWARD_MODEL, blind_r: float = BLIND_R,
                   min_n: int = MIN_COMPLETIONS) -> list[str]:
    """At most one plain warning per rule: the most specific slice (among completions that think, then
    within groups, then overall) where the rule varies and the reward model's r stays below blind_r."""
    by_rule: dict[str, list[dict]] = defaultdict(list)
    for c in correlations(samples, reward_model):
        by_rule[c["rule"]].append(c)
    share = sum(reasons(s.get("response") or s.get("completion", "")) for s in samples) / max(1, len(samples))
    out = []
    for rule, cs in by_rule.items():
        if rule in FORMAT_RULES and not 0.1 <= share <= 0.9:
            continue  # (almost) all think, or none do: what is left of a format rule is length bands
        for c in cs:  # SLICES order: most specific first
            if c["r"] is None or c["n"] < min_n or c["r"] >= blind_r:
                continue
            what = WHAT.get(rule, f"completions the {rule} reward tells apart")
            how = "alike" if c["r"] > -blind_r else "the wrong way round"
            out.append(f"The reward model scores {what} {how} {c['slice']} (r = {c['r']:.2f} over {c['n']} "
                       f"completions), while the {rule} rule tells them apart: rewarded by the reward model alone, "
                       f"RLOO will not learn what {rule} checks. Train the reward model on pairs that differ in it.")
            break
    return out


def correlation_text(samples: list[dict], reward_model: str = REWARD_MODEL) -> str:
    """'correctness: r = 0.16 overall, 0.05 within groups, 0.02 among thinking' — one line per rule."""
    by_rule: dict[str, list[str]] = defaultdict(list)
    short = dict(zip(SLICES, ("among completions that think", "within groups", "overall")))
    for c in correlations(samples, reward_model):
        if c["r"] is not None:
            by_rule[c["rule"]].append(f"{c['r']:.2f} {short[c['slice']]} (n={c['n']})")
    return "\n".join(f"reward model vs {rule}: r = " + ", ".join(v) for rule, v in by_rule.items())


# -- a run folder, for `runs show` -----------------------------------------------------------------

def run_figures(run_dir, last_steps: int = 5) -> dict:
    """What a run folder says about blindness: a reward run's held-out accuracy by kind and source
    (held_out_breakdown.json, without the per-pair rows), an RLOO run's reward-model-vs-rule correlations
    over the completions of its latest `last_steps` steps (samples.jsonl). {} when it has neither."""
    import json
    from pathlib import Path

    d, out = Path(run_dir), {}
    try:
        b = json.loads((d / "held_out_breakdown.json").read_text())
        out["held_out_accuracy_by"] = {k: b[k] for k in ("by_kind", "by_source") if k in b}
    except (OSError, ValueError):
        pass
    try:
        rows = [json.loads(x) for x in (d / "samples.jsonl").read_text().splitlines() if x.strip()]
    except (OSError, ValueError):
        rows = []
    if rows:
        keep = set(sorted({r.get("step", 0) for r in rows})[-last_steps:])
        rows = [r for r in rows if r.get("step", 0) in keep]
        cs = [c for c in correlations(rows) if c["r"] is not None]
        if cs:
            out["reward_model_vs_rules"] = [{**c, "r": round(c["r"], 3)} for c in cs]
            out["blind_warnings"] = blind_warnings(rows)
    return out
