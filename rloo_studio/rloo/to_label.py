"""RLOO completions into labeling: a prompt's group of completions from a run's samples.jsonl becomes
pairs in the Label queue, under the source `rloo:<run-id>`, so that the next reward model learns where
the current rewards were wrong.

A group is the k completions of one prompt at one step. Two ways to pick the pair:
  extremes      the completion with the highest weighted total reward against the lowest one;
  disagreement  the two completions the reward model orders most strongly against the rule rewards
                (the run must have used the reward_model reward and at least one other).
Pairs are written without labels (people label them). A pair already in the workspace (the same prompt
and the same two responses, in either order: import_store.pair_key) is not written again.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from itertools import combinations

from rloo_studio.core.errors import DataError
from rloo_studio.core.workspace import Workspace
from rloo_studio.label.import_store import fill_keys, pair_key
from rloo_studio.label.prompts import add_pair, add_prompt, add_response, get_or_create_set
from rloo_studio.runs.catalog import find_run, run_config
from rloo_studio.runs.runner import read_jsonl

HOW = ("extremes", "disagreement")
REWARD_MODEL = "reward_model"


@dataclass
class SendResult:
    source: str
    added: int  # pairs written
    skipped: int  # pairs already in the workspace
    pair_ids: list[int]

    def summary(self) -> str:
        if not self.added:
            return (f"Nothing new: {'that pair is' if self.skipped == 1 else 'those pairs are'} already in the "
                    f"Label queue (source {self.source}).")
        s = f"{self.added} pair{'s' * (self.added != 1)} sent to the Label queue as source {self.source}."
        return s + (f" {self.skipped} already there, skipped." if self.skipped else "")


def source_of(run_id: str) -> str:
    return f"rloo:{run_id}"


def _run(ws: Workspace, run_id: str) -> tuple[str, list[dict], dict]:
    """(run id, samples, config) of an RLOO run; DataError in plain words when there is nothing to send."""
    from rloo_studio.rloo.completions import read_samples

    rid = find_run(ws, run_id, "rloo")["id"]
    rows = read_samples(ws.run_dir(rid))
    if not rows:
        raise DataError(f"Run {rid} has logged no completions yet: wait for its first step.")
    cfg = run_config(ws, rid)
    return rid, rows, cfg


def groups(ws: Workspace, run_id: str) -> list[dict]:
    """One entry per (step, prompt) group of a run, latest step first: step, prompt, n, best, worst, spread."""
    _, rows, _ = _run(ws, run_id)
    by: dict[tuple[int, str], list[dict]] = {}
    for r in rows:
        by.setdefault((r["step"], r["prompt"]), []).append(r)
    out = []
    for (step, prompt), g in by.items():
        totals = [r["total"] for r in g if r.get("total") is not None]
        best, worst = (max(totals), min(totals)) if totals else (None, None)
        out.append({"step": step, "prompt": prompt, "n": len(g), "best": best, "worst": worst,
                    "spread": None if best is None else best - worst})
    return sorted(out, key=lambda x: -x["step"])


def group(ws: Workspace, run_id: str, step: int, prompt: str) -> list[dict]:
    """The completions of one prompt at one step."""
    rid, rows, _ = _run(ws, run_id)
    g = [r for r in rows if r["step"] == int(step) and r["prompt"] == prompt]
    if not g:
        raise DataError(f"Run {rid} has no completions for that prompt at step {step}: pick a group from the list.")
    return g


def _text(r: dict) -> str:
    return r.get("response") or r.get("completion") or ""


def pick_pairs(rows: list[dict], how: str, rewards: list[str], weights: list[float]) -> list[tuple[dict, dict]]:
    """The (first, second) completions to compare, by `how` (see the module doc). Identical texts never pair."""
    if how not in HOW:
        raise DataError(f"Unknown way to pick pairs {how!r}: choose {' or '.join(HOW)}.")
    if how == "extremes":
        scored = sorted((r for r in rows if r.get("total") is not None), key=lambda r: -r["total"])
        if len(scored) < 2 or scored[0]["total"] == scored[-1]["total"]:
            raise DataError("Every completion of this group got the same reward: no best and worst to compare. "
                            "Pick a group with a spread, or send the reward model's disagreement.")
        best, worst = scored[0], scored[-1]
        if _text(best) == _text(worst):
            raise DataError("The best and worst completions of this group are the same text: nothing to compare.")
        return [(best, worst)]
    if REWARD_MODEL not in rewards or len(rewards) < 2:
        raise DataError("This run was not rewarded by a reward model and rule rewards together, so they cannot "
                        "disagree: send the highest against the lowest reward instead.")
    w = dict(zip(rewards, weights or [1.0] * len(rewards)))

    def rule(r):
        vals = [w.get(k, 1.0) * v for k, v in (r.get("rewards") or {}).items() if k != REWARD_MODEL and v is not None]
        return sum(vals) if vals else None

    scored = [(r, (r.get("rewards") or {}).get(REWARD_MODEL), rule(r)) for r in rows]
    scored = [s for s in scored if s[1] is not None and s[2] is not None]
    worst_pair, worst = None, 0.0
    for (a, ma, ra), (b, mb, rb) in combinations(scored, 2):
        against = (ma - mb) * (ra - rb)  # < 0: the reward model and the rules order the two oppositely
        if against < worst and _text(a) != _text(b):
            worst_pair, worst = ((a, b) if ra > rb else (b, a)), against
    if worst_pair is None:
        raise DataError("The reward model and the rule rewards agree on every pair of this group: "
                        "nothing it ranks against them. Pick another group, or send the highest against the lowest.")
    return [worst_pair]  # the rules' favourite first


def send_group(ws: Workspace, run_id: str, step: int, prompt: str, how: str = "extremes") -> SendResult:
    """Write the picked pair(s) of one group into the Label queue (source rloo:<run-id>), unlabeled."""
    rid, _, cfg = _run(ws, run_id)
    rows = group(ws, rid, step, prompt)
    picked = pick_pairs(rows, how, list(cfg.get("rewards") or []), list(cfg.get("reward_weights") or []))
    source, now = source_of(rid), time.time()
    extra = _prompt_extra(ws, rid, prompt)
    added, skipped, ids = 0, 0, []
    with ws.transaction() as con:
        fill_keys(con)  # pairs written before dedup keys existed get theirs, so that they count as duplicates
        for a, b in picked:
            ta, tb = _text(a), _text(b)
            key = pair_key(prompt, None, ta, tb)
            if con.execute("SELECT 1 FROM pairs WHERE dedup_key=? LIMIT 1", (key,)).fetchone():
                skipped += 1
                continue
            sid = get_or_create_set(con, source, source)
            pid = add_prompt(con, sid, prompt, extra)
            ra, rb = (add_response(con, pid, t, source, now) for t in (ta, tb))
            ids.append(add_pair(con, pid, ra, rb, source, now, key))
            added += 1
    return SendResult(source, added, skipped, ids)


def _prompt_extra(ws: Workspace, rid: str, prompt: str) -> dict:
    """The prompt's other columns (answer, ...) as the run read them (prompts.jsonl), for later RLOO runs."""
    for r in read_jsonl(ws.run_dir(rid) / "prompts.jsonl"):
        if r.get("prompt") == prompt:
            return {k: v for k, v in r.items() if k != "prompt"}
    return {}
