"""The RLOO tab's completions, computed from the job's samples.jsonl without gradio: each prompt's
group with its rewards and leave-one-out advantage, one completion picked, and what the models read of it."""
from __future__ import annotations

from rloo_studio.core.models import run_setting, run_trusts_code
from rloo_studio.core.thinking import parse
from rloo_studio.inspect import model_input
from rloo_studio.rloo.config import REWARD_MODEL, run_config
from rloo_studio.runs.catalog import adapter_dir
from rloo_studio.runs.runner import read_jsonl


def expand(keys: list[str], records: list[dict]) -> list[str]:
    """Metric keys with each '<pre>*<post>' (rloo.charts.PLOTS) replaced by the keys the records hold."""
    out = []
    for k in keys:
        if "*" in k:
            pre, post = k.split("*")
            found = sorted({x for r in records for x in r if x.startswith(pre) and x.endswith(post)})
            out.extend(found)
        else:
            out.append(k)
    return out


def completion_columns(samples: list[dict]) -> list[str]:
    names = []
    for s in samples:
        for k in s.get("rewards", {}):
            if k not in names:
                names.append(k)
    return ["step", "prompt", "thinking", "answer", *names, "total", "advantage", "length", "truncated"]


ORDERS = ("advantage (best first)", "reward (best first)", "as generated")


def completion_groups(samples: list[dict], order: str = ORDERS[0], limit: int = 64) -> tuple[list[str], list[list]]:
    """(headers, rows): the newest groups first, each prompt's completions together (the rollout view of
    verl / miles), with each reward, the weighted total and the leave-one-out advantage; thinking and
    answer apart. Within a group the rows follow `order`."""
    names = completion_columns(samples)[4:-4]
    recent = samples[-limit:]
    groups: dict[tuple, list[dict]] = {}
    for s in recent:
        groups.setdefault((s.get("step"), s.get("prompt")), []).append(s)
    keys = sorted(groups, key=lambda k: -(k[0] or 0))  # newest step first, prompts in generation order
    headers = ["group", "step", "prompt", "#", "thinking", "answer", *names, "total", "advantage", "tokens", "cut"]
    rows = []
    for g, key in enumerate(keys, 1):
        members = list(enumerate(groups[key], 1))
        if order.startswith("advantage"):
            members.sort(key=lambda m: -(m[1].get("advantage") or 0))
        elif order.startswith("reward"):
            members.sort(key=lambda m: -(m[1].get("total") or 0))
        for i, s in members:
            p = parse(s.get("response") or s.get("completion", ""))  # response: the template's <think> written out
            think = p.thinking if (p.has_close or p.has_open) else ""
            answer = p.answer if not p.truncated else "(cut before </think>)"
            rows.append([f"{g} · k={len(members)}", s.get("step"), s.get("prompt"), i, think, answer,
                         *[_round(s.get("rewards", {}).get(n)) for n in names], _round(s.get("total")),
                         _round(s.get("advantage")), s.get("length"), "yes" if s.get("truncated") else ""])
    return headers, rows


DIGITS = 4  # significant digits of a reward, total or advantage: process rewards of one group differ in the third


def _round(v):
    """A figure to DIGITS significant digits (0.8123, 0.0004871, 12.35): a fixed number of decimals showed small
    rewards as 0."""
    return None if not isinstance(v, (int, float)) else float(f"{float(v):.{DIGITS}g}")


def _indexed(samples: list[dict]) -> list[tuple[int, dict]]:
    """Each sample with its place among its step's samples (stable while newer steps arrive)."""
    seen: dict = {}
    out = []
    for s in samples:
        k = seen[s.get("step")] = seen.get(s.get("step"), -1) + 1
        out.append((k, s))
    return out


def completion_picks(samples: list[dict], limit: int = 64) -> list[tuple[str, str]]:
    """(label, key) for each completion of the completions table, in its order: 'step 12 · group 3 · #2'
    names the row (group and # as the table numbers them), the key finds the sample again."""
    groups: dict[tuple, list[tuple[int, dict]]] = {}
    for k, s in _indexed(samples)[-limit:]:  # the table's window and grouping (completion_groups)
        groups.setdefault((s.get("step"), s.get("prompt")), []).append((k, s))
    out = []
    for g, key in enumerate(sorted(groups, key=lambda k: -(k[0] or 0)), 1):
        for i, (k, s) in enumerate(groups[key], 1):
            out.append((f"step {key[0]} · group {g} · #{i}", f"{key[0]}:{k}"))
    return out


def pick_label(row: list) -> str | None:
    """The pick label of a completions-table row (group 'g · k=n', step, prompt, #, ...)."""
    try:
        return f"step {int(row[1])} · group {int(str(row[0]).split()[0])} · #{int(row[3])}"
    except (IndexError, TypeError, ValueError):
        return None


def picked_sample(samples: list[dict], key: str) -> dict | None:
    step, _, k = str(key or "").partition(":")
    for i, s in _indexed(samples):
        if str(s.get("step")) == step and str(i) == k:
            return s
    return None


def model_views(ws, run_id: str, sample: dict) -> list:
    """What the policy and (when the run used one) the reward model read for this completion:
    inspect.model_input Views, built with the run's own tokenizers and enable_thinking."""
    cfg = run_config(ws, run_id)
    response = sample.get("response") or sample.get("completion", "")
    tok = model_input.tokenizer(cfg.model, cfg.trust_remote_code)
    views = [model_input.policy_view(tok, sample.get("prompt", ""), response, cfg.enable_thinking,
                            ended=not sample.get("truncated"), model=cfg.model)]
    if REWARD_MODEL in cfg.rewards and cfg.reward_model_run:
        ad = adapter_dir(ws, cfg.reward_model_run)
        base = run_setting(ad, "model") or cfg.model
        rm_tok = model_input.tokenizer(base, run_trusts_code(ad))
        from rloo_studio.rloo.rewards import shares_tokenizer

        views.append(model_input.reward_view(rm_tok, sample.get("prompt", ""), response, cfg.enable_thinking,
                                    model=f"reward run {cfg.reward_model_run} ({base})",
                                    whole=not shares_tokenizer(rm_tok, tok)))  # as the RLOO reward builds it
    return views


def read_samples(run_dir, last_steps: int | None = None) -> list[dict]:
    """Rows of samples.jsonl; with last_steps, only those of the latest N steps."""
    rows = read_jsonl(run_dir / "samples.jsonl")
    if last_steps:
        steps = sorted({r["step"] for r in rows})[-last_steps:]
        rows = [r for r in rows if r["step"] in set(steps)]
    return rows
