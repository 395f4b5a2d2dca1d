"""What the RLOO tab shows, computed from a run's files: warnings, the completions table, the form.

No gradio here: the tab formats these; tests call them directly. All inputs are TRL's own
metric records (metrics.jsonl) and the job's samples.jsonl.
"""
from __future__ import annotations

from pathlib import Path

from rloo_studio.core import form
from rloo_studio.core.answers import ANSWER_FORMATS
from rloo_studio.rloo.config import RlooJobConfig
from rloo_studio.core.thinking import parse
from rloo_studio.inspect import model_input
from rloo_studio.core.errors import ConfigError
from rloo_studio.core.models import run_setting, run_trusts_code
from rloo_studio.label.prompts import LABELED_PAIRS, load_prompts, prompt_sets
from rloo_studio.rloo.config import CUSTOM_PREFIX, REWARD_MODEL, RULE_REWARDS, resolve_latest, run_config
from rloo_studio.rloo.rewards import CUSTOM_DIR
from rloo_studio.runs.catalog import adapter_dir
from rloo_studio.runs.lifecycle import follow

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


# -- completions table -------------------------------------------------------------------------

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


def _round(v):
    return None if not isinstance(v, (int, float)) else round(float(v), 3)


# -- one completion, as the models read it ------------------------------------------------------

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


# -- the config form ---------------------------------------------------------------------------
CHOICES = {"backend": ("auto", "unsloth", "transformers"),
           "optim": ("adamw_torch", "adamw_8bit", "paged_adamw_8bit", "sgd"),
           "answer_format": ANSWER_FORMATS}
FormField = form.FormField


def form_fields() -> list[FormField]:
    return form.fields(RlooJobConfig, CHOICES)


def form_values(cfg: RlooJobConfig) -> list:
    return form.values(cfg, CHOICES)


def config_from_form(values: list) -> RlooJobConfig:
    """Widget values (form_fields() order) -> a validated config; raises ConfigError naming the field."""
    return form.parse(RlooJobConfig, values, CHOICES)


def launch_check(ws, cfg: RlooJobConfig) -> None:
    """Everything Launch can know before a run exists: the job's pre-flight, plus the settings the job
    would only trip over after loading the model (LoRA layers, optimizer name, the held-out prompt set).
    Raises ConfigError in plain words. Resolves reward_model_run 'latest' in `cfg` (config.resolve_latest)."""
    from rloo_studio.rloo.job import preflight

    resolve_latest(ws, cfg)
    preflight(cfg, ws)
    for name in ("seed", "eval_seed"):
        if not 0 <= getattr(cfg, name) < 2 ** 32:  # numpy's seeds are 32-bit; set_seed would fail in the job
            raise ConfigError(f"{name} must be a whole number from 0 to {2 ** 32 - 1}, got {getattr(cfg, name)}.")
    if not cfg.lora.target_modules:
        raise ConfigError("lora.target_modules must name at least one layer (e.g. q_proj, v_proj).")
    if cfg.lora.r < 1:
        raise ConfigError(f"lora.r must be at least 1, got {cfg.lora.r}.")
    from transformers.training_args import OptimizerNames

    if cfg.optim not in {o.value for o in OptimizerNames}:
        raise ConfigError(f"optim {str(cfg.optim)[:60]!r} is not an optimizer transformers knows; "
                          f"choose one of {', '.join(CHOICES['optim'])}.")
    if cfg.eval_prompts > 0:
        try:
            load_prompts(ws, cfg.eval_prompt_set)
        except ConfigError as exc:
            raise ConfigError(f"eval_prompt_set: {exc} (or set eval_prompts to 0 to skip the before/after "
                              "measurement)") from None


def weights_after_tick(before: list[str], after: list[str], weights: str) -> str:
    """reward_weights as text after the ticked rewards changed from `before` to `after`: every reward
    keeps the weight the user gave it, a newly ticked one gets 1.0, an unticked one loses its weight."""
    parts = [w.strip() for w in str(weights or "").split(",") if w.strip()]
    kept = dict(zip(before, parts))  # weights beyond the ticked rewards belong to none of them
    return ", ".join(kept.get(name, "1.0") for name in after)


MAX_COMPARE = 1000  # held-out prompts for before / after: more is a typo (each one is generated twice)


# -- choices and status for the tab ------------------------------------------------------------

def reward_choices(ws) -> list[str]:
    """Reward names a user can tick: the rules, the reward model, and each .py file in <workspace>/rewards/."""
    files = sorted(p.name for p in (Path(ws.root) / CUSTOM_DIR).glob("*.py"))
    return [*RULE_REWARDS, REWARD_MODEL, *[CUSTOM_PREFIX + f for f in files]]


def prompt_set_choices(ws) -> list[str]:
    return [s["name"] for s in prompt_sets(ws)] + [LABELED_PAIRS]


def latest_run(ws) -> str | None:
    """The active RLOO run, else the newest one."""
    return follow(ws, "rloo")


EVAL_COLUMNS = (("accuracy", "accuracy"), ("reasons", "thinking_rate"),
                ("right when it reasons", "accuracy_reasoning"), ("right when it does not", "accuracy_not_reasoning"))


def eval_rows(ev: dict) -> tuple[list[str], list[list[str]]]:
    """(headers, rows) of the job's own held-out measurement (eval.json): before, after and the change, each
    as accuracy overall, the share of answers that reason, and the accuracy among those that do and do not."""
    b, a = ev.get("before"), ev.get("after")
    if not b:
        return [], []
    headers = [f"held-out, n={b['n']}", *[title for title, _ in EVAL_COLUMNS]]
    rows = [["before training", *[_pct(b.get(k)) for _, k in EVAL_COLUMNS]]]
    if a:
        rows.append(["after", *[_pct(a.get(k)) for _, k in EVAL_COLUMNS]])
        rows.append(["change", *[_points(b.get(k), a.get(k)) for _, k in EVAL_COLUMNS]])
    return headers, rows


def _pct(v) -> str:
    return "–" if v is None else f"{v:.1%}"


def _points(before, after) -> str:
    return "–" if before is None or after is None else f"{(after - before) * 100:+.1f} points"
