"""Warnings about a run's latest steps, in words: what the RLOO tab shows live and the job keeps with the
run (runs/run_warnings.py). Pure functions of TRL's metric records and the job's samples.jsonl."""
from __future__ import annotations

import math

from rloo_studio.core.stats import correlation

WINDOW = 5  # steps the warnings look at


def step_records(records: list[dict]) -> list[dict]:
    """Training-step records only (TRL's final summary line has no 'reward'); the last one per step wins."""
    by_step = {}
    for r in records:
        if "reward" in r and "step" in r:
            by_step[r["step"]] = r
    return [by_step[s] for s in sorted(by_step)]


def _mean(xs):
    xs = [x for x in xs if isinstance(x, (int, float)) and math.isfinite(x)]
    return sum(xs) / len(xs) if xs else None


def warnings(records: list[dict], max_completion_length: int | None = None, samples: list[dict] | None = None,
             window: int = WINDOW) -> list[str]:
    """Plain warnings about the latest steps: truncation, zero-variance groups, reward rising with length or KL,
    a reward model blind to what a rule reward beside it separates (on `samples`, the latest steps' completions)."""
    recs = step_records(records)
    if not recs:
        return []
    last = recs[-window:]
    out = []
    cut = _mean([r.get("completions/clipped_ratio") for r in last])
    if samples:  # more precise: cut before </think> means no answer can be rewarded
        recent = [s for s in samples if s.get("step", 0) >= last[0]["step"]]
        if recent:
            cut = sum(bool(s.get("truncated")) and "</think>" not in s["completion"] for s in recent) / len(recent)
    if cut is not None and cut > 0.5:
        limit = f" ({max_completion_length} tokens)" if max_completion_length else ""
        out.append(f"{cut:.0%} of recent completions are cut at max completion length{limit} before </think>: their "
                   "answers never count. Raise max completion length.")
    zero = _mean([r.get("frac_reward_zero_std") for r in last])
    if zero is not None and zero > 0.5:
        out.append(f"In {zero:.0%} of recent groups every completion got the same reward, so the leave-one-out "
                   "advantage is zero and those prompts teach nothing. Raise num_generations or temperature, or use "
                   "a reward that tells completions apart.")
    if len(recs) >= 2 * window:
        rew = [r.get("reward", 0.0) for r in recs]
        rising = _mean(rew[-window:]) - _mean(rew[:window]) > 0.05 * max(1e-9, max(rew) - min(rew) or 1)
        for key, what in (("completions/mean_length", "completion length"), ("kl", "KL")):
            vals = [r.get(key) for r in recs]
            if rising and all(isinstance(v, (int, float)) for v in vals):
                c = correlation(rew, vals) or 0.0  # a flat reward or length says nothing here
                grew = _mean(vals[-window:]) > 1.25 * max(_mean(vals[:window]), 1e-9) + (0.02 if key == "kl" else 0)
                if c > 0.8 and grew:
                    out.append(f"The reward rises together with {what} (correlation {c:.2f}): possible reward "
                               "hacking. Read the completions below; raise beta or fix the reward if they got worse.")
    out += process_warnings(recs, window) + unfinished_warnings(recs, window)
    if samples:  # a reward model beside rule rewards: does it separate what the rules separate? (blind.py)
        from rloo_studio.reward.blind import blind_warnings

        out += blind_warnings(samples)
    return out


PROCESS = "rewards/process_reward/mean"  # rloo/process_reward.py logs process/accuracy and process/steps beside it


def process_warnings(recs: list[dict], window: int = WINDOW) -> list[str]:
    """Process-reward hacking, from what the process reward logs: its reward rising while the share of right
    answers stays flat (the policy pleases the process reward model without reasoning better), or while the number
    of steps grows (longer chains of easy steps)."""
    recs = [r for r in recs if isinstance(r.get(PROCESS), (int, float))]
    if len(recs) < 2 * window:
        return []
    first, last = recs[:window], recs[-window:]
    rose = _mean([r[PROCESS] for r in last]) - _mean([r[PROCESS] for r in first])
    if rose <= 0.05:
        return []
    out = []
    acc = [_mean([r.get("process/accuracy") for r in part]) for part in (first, last)]
    if None not in acc and acc[1] - acc[0] < 0.02:
        out.append(f"The process reward rose by {rose:.2f} while right answers stayed at {acc[0]:.0%} -> {acc[1]:.0%}: "
                   "the policy may be pleasing the process reward model without reasoning better (process-reward "
                   "hacking). Read the completions below; add the correctness reward or tick "
                   "process_reward_correct_only.")
    steps = [_mean([r.get("process/steps") for r in part]) for part in (first, last)]
    if None not in steps and steps[1] > 1.2 * steps[0]:
        out.append(f"The process reward rose by {rose:.2f} together with the number of steps ({steps[0]:.1f} -> "
                   f"{steps[1]:.1f} a completion): longer chains of easy steps can please a process reward model. "
                   "Try process_reward_aggregate=min or product, which do not reward more steps.")
    return out


def unfinished_warnings(recs: list[dict], window: int = WINDOW) -> list[str]:
    """Stopping early as a process-reward hack, from what the process reward logs: unfinished completions (no closed
    reasoning, or no answer after it) paid more than finished ones in the latest steps, or their share growing."""
    recs = [r for r in recs if isinstance(r.get("process/unfinished"), (int, float))]
    if not recs:
        return []
    out, last = [], recs[-window:]
    paid_cut = _mean([r.get("process/unfinished_reward") for r in last])
    paid_done = _mean([r.get("process/finished_reward") for r in last])
    if paid_cut is not None and paid_done is not None and paid_cut > paid_done:
        out.append(f"Unfinished completions (reasoning never closed, or no answer after it) earn more process reward "
                   f"than finished ones ({paid_cut:.2f} against {paid_done:.2f} a completion): the policy can learn "
                   "to stop early, before the steps it could slip on. Untick process_reward_unfinished.")
    if len(recs) >= 2 * window:
        before, now = (_mean([r["process/unfinished"] for r in part]) for part in (recs[:window], last))
        if now > max(2 * before, before + 0.05):
            out.append(f"Unfinished completions grew from {before:.0%} to {now:.0%} of the recent ones: the policy "
                       "stops before it answers. Raise max_completion_length if they are cut at it; add the "
                       "answer_present or correctness reward.")
    return out
