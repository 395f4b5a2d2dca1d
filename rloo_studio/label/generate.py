"""Generate candidates to label: sample k responses per prompt from a model and form pairs.

Runs as a job (kind 'generate') so that it shows progress, can be stopped, and never blocks
the page. Pairs are written per batch of prompts, so a stopped run keeps what it made.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from rloo_studio.core import bootstrap  # noqa: F401

# isort: split
from rloo_studio.core.errors import ConfigError
from rloo_studio.core.paths import DEMO_MODEL
from rloo_studio.label.importing import candidate_pairs
from rloo_studio.label.prompts import add_pair, add_prompt, add_response, get_or_create_set, load_prompt_set


@dataclass
class GenerateConfig:
    model: str = field(default=str(DEMO_MODEL), metadata={"help": (
        "Policy to sample from: a local folder or a Hugging Face hub id already in the local cache.")})
    trust_remote_code: bool = field(default=False, metadata={"help": (
        "Run Python code shipped with the model; only for a model whose source you trust.")})
    adapter: str | None = field(default=None, metadata={"help": (
        "Optional LoRA adapter folder on top of the model (e.g. an RLOO run's adapter), to label what a "
        "trained policy writes.")})
    prompt_set: str | None = field(default="demo-train", metadata={"help": (
        "Prompt set to sample for; ignored when prompts is given.")})
    prompts: list[str] = field(default_factory=list, metadata={"help": (
        "Typed prompts (one per entry); when given, prompt_set and limit are ignored.")})
    limit: int = field(default=20, metadata={"help": (
        "How many prompts of the set to use (its first ones).")})
    k: int = field(default=2, metadata={"help": (
        "Responses per prompt (2-8); all pairs among up to 4, neighbours beyond. Identical responses are "
        "merged, so a prompt may give fewer pairs.")})
    max_new_tokens: int = field(default=128, metadata={"help": (
        "Most tokens generated per response; a response cut before </think> has no answer.")})
    temperature: float = field(default=1.0, metadata={"help": (
        "Sampling temperature: higher gives more varied responses, so more pairs worth comparing.")})
    seed: int = field(default=0, metadata={"help": (
        "Sampling seed: the same seed, model and prompts give the same responses.")})
    enable_thinking: bool = field(default=True, metadata={"help": (
        "Hybrid chat templates (Qwen3): reason before answering (False: the template closes an empty "
        "<think> block and the model answers directly). Templates without the switch ignore it.")})

    def validate(self) -> None:
        if not 2 <= self.k <= 8:
            raise ConfigError(f"k must be between 2 and 8 responses per prompt, got {self.k}")
        if self.max_new_tokens < 1:
            raise ConfigError("max_new_tokens must be at least 1")
        if self.temperature <= 0:
            raise ConfigError("temperature must be above 0: identical greedy samples make no pairs")
        if not self.prompts and not self.prompt_set:
            raise ConfigError("choose a prompt set or type prompts")
        if self.limit < 1:
            raise ConfigError("use at least 1 prompt")


def generate_candidates(cfg: GenerateConfig, ctx) -> str:
    from rloo_studio.core.models import load_policy
    from rloo_studio.core.sampling import sample

    cfg.validate()
    prompts = [p.strip() for p in cfg.prompts if p.strip()]
    extras = [{} for _ in prompts]
    set_name = "typed prompts"
    if not prompts:
        try:
            rows = load_prompt_set(ctx.ws, cfg.prompt_set)[: cfg.limit]
        except KeyError as e:
            raise ConfigError(str(e.args[0])) from None
        prompts = [r["prompt"] for r in rows]
        extras = [{k: v for k, v in r.items() if k != "prompt"} for r in rows]
        set_name = cfg.prompt_set
    # a typed adapter folder: trust is the box ticked here, never read from beside the folder
    model, tok = load_policy(cfg.model, cfg.adapter, trust_remote_code=cfg.trust_remote_code)
    source = f"generated:{ctx.run_id}"
    made = done = 0
    batch = 8
    for i in range(0, len(prompts), batch):
        if ctx.should_stop():
            break
        chunk = prompts[i : i + batch]
        outs = sample(model, tok, chunk, n=cfg.k, max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature,
                      seed=cfg.seed + i, enable_thinking=cfg.enable_thinking)
        with ctx.ws.transaction() as con:
            sid = get_or_create_set(con, set_name, "typed" if cfg.prompts else f"set:{set_name}")
            for j, p in enumerate(chunk):
                # whole responses: a <think> the chat template opened in the prompt is written out, so that
                # labeling, scoring and training read the reasoning as reasoning (and never double the tag)
                texts = list(dict.fromkeys(o.response for o in outs[j * cfg.k : (j + 1) * cfg.k] if o.text.strip()))
                if len(texts) < 2:
                    continue  # identical samples: nothing to compare
                pid = add_prompt(con, sid, p, extras[i + j])
                now = time.time()
                rids = [add_response(con, pid, t, f"model:{cfg.model}", now) for t in texts]
                for a, b in candidate_pairs(len(rids)):
                    add_pair(con, pid, rids[a], rids[b], source, now)
                    made += 1
        done = min(i + batch, len(prompts))
        ctx.set_progress(done, len(prompts), "prompts")
        ctx.metric({"step": done, "pairs": made})
    return f"{made} new pairs from {done} prompts (source {source})"
