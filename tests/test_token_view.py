"""The token view (rloo/tokens.py): after an RLOO step on the demo, tokens.jsonl's Δ log-prob is what an independent
forward pass with the saved checkpoint gives, and the completions with positive advantage moved up more, on
average, than those with negative advantage. Plus the reading side (summary, runs show) on hand-made rows."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from rloo_studio.core.model_options import LoraSpec
from rloo_studio.rloo import tokens
from rloo_studio.rloo.config import RlooJobConfig

ROOT = Path(__file__).resolve().parent.parent
# one step at a high learning rate, so the update moves log-probs well above float noise; beta > 0 so the
# reference's log-probs are recorded; save_steps=1 so checkpoint-1 holds the weights the step produced
STEP = dict(max_steps=1, beta=0.05, per_device_train_batch_size=16, num_generations=4, lora=LoraSpec(r=4, alpha=8),
            max_completion_length=48, save_steps=1, learning_rate=5e-3, seed=3)


def _independent_logps(model, tok, prompt_text: str, ids: list[int]) -> list[float]:
    """Per-token log-probs of `ids` after the chat-templated prompt, by a plain transformers forward pass."""
    import torch

    from rloo_studio.core.thinking import chat_prompt

    p = tok(chat_prompt(tok, prompt_text), add_special_tokens=False)["input_ids"]
    x = torch.tensor([p + ids])
    with torch.no_grad():
        logits = model(input_ids=x).logits[0, len(p) - 1:-1].float()
    return torch.log_softmax(logits, -1).gather(1, torch.tensor(ids)[:, None])[:, 0].tolist()


@pytest.mark.train
def test_stored_delta_matches_an_independent_pass_and_follows_the_advantage(workspace):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rloo_studio.rloo.job import train_rloo
    from rloo_studio.runs.runner import JobRunner

    r = JobRunner(workspace)
    rid = r.submit("rloo", RlooJobConfig(**STEP), train_rloo)
    assert r.wait(rid, 1800) == "completed", r.status(rid)
    run = workspace.run_dir(rid)
    rows = tokens.read_tokens(run, step=1)
    assert len(rows) == 16 and {r_["prompt"] for r_ in rows} == {0, 1, 2, 3}
    assert all(len(r_["tokens"]) == len(r_["logp_old"]) == len(r_["logp_new"]) == len(r_["logp_ref"]) > 0
               for r_ in rows)

    cfg = RlooJobConfig()
    tok = AutoTokenizer.from_pretrained(cfg.model)
    base = AutoModelForCausalLM.from_pretrained(cfg.model).eval()
    # LoRA's B starts at zero, so the policy that sampled step 1 is the base model; checkpoint-1 is after the step
    old = {(r_["prompt"], r_["completion"]): _independent_logps(base, tok, r_["prompt_text"], r_["ids"]) for r_ in rows}
    tuned = PeftModel.from_pretrained(base, str(run / "checkpoints" / "checkpoint-1")).eval()
    worst = 0.0
    for r_ in rows:
        new = _independent_logps(tuned, tok, r_["prompt_text"], r_["ids"])
        want = [n - o for n, o in zip(new, old[(r_["prompt"], r_["completion"])])]
        worst = max(worst, max(abs(a - b) for a, b in zip(tokens.deltas(r_), want)))
        assert max(abs(a - b) for a, b in zip(r_["logp_ref"], old[(r_["prompt"], r_["completion"])])) < 1e-3
    assert worst < 1e-3, f"stored Δ log-prob differs from the checkpoint's by up to {worst:.2e}"
    assert max(abs(d) for r_ in rows for d in tokens.deltas(r_)) > 1e-2  # the step did move the policy

    s = tokens.summary(rows)
    assert s["positive"] and s["negative"], s
    assert s["mean_delta_positive"] > s["mean_delta_negative"] and not s["against"], s

    # the same data from the CLI: runs show RUN --step 1 --prompt K
    k = rows[0]["prompt"]
    out = subprocess.run([sys.executable, "-m", "rloo_studio", "runs", "show", rid, "--step", "1", "--prompt",
                          str(k), "--workspace", str(workspace.root)], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert f"step 1, prompt {k}" in out.stdout and "advantage" in out.stdout and "Δ log-prob" in out.stdout


def _row(adv, deltas, completion=0, ref=True):
    old = [-1.0] * len(deltas)
    return {"step": 2, "prompt": 0, "completion": completion, "prompt_text": "1+2", "ids": list(range(len(deltas))),
            "tokens": ["a\n"] * len(deltas), "logp_old": old, "logp_new": [o + d for o, d in zip(old, deltas)],
            "logp_ref": [-1.5] * len(deltas) if ref else None, "advantage": adv, "in_loss": True,
            "steps": [[0, 1]]}


def test_summary_says_when_the_update_went_against_the_advantage():
    followed = tokens.summary([_row(0.5, [0.2, 0.1]), _row(-0.5, [-0.3], 1)])
    assert not followed["against"] and "followed the advantage" in followed["verdict"]
    against = tokens.summary([_row(0.5, [-0.2]), _row(-0.5, [0.3], 1)])
    assert against["against"] and "went against the advantage" in against["verdict"]
    flat = tokens.summary([_row(0.0, [0.1]), _row(0.0, [0.1], 1)])
    assert not flat["against"] and "same reward" in flat["verdict"]


def test_think_steps_are_token_ranges_of_reasoning_lines():
    toks = ["7", "+", "8", "=15", "\n", "1", "+1=2", "\n", "</think>", "\n\n", "215"]
    assert tokens.think_steps(toks, start="think") == [[0, 4], [5, 7]]
    assert tokens.think_steps(["<think>", "1+1=2", "</think>", "2"]) == [[1, 2]]
    assert tokens.think_steps(["42"]) == []


def test_describe_prints_a_group(tmp_path):
    (tmp_path / tokens.FILE).write_text("".join(json.dumps(_row(a, [d], i)) + "\n"
                                                for i, (a, d) in enumerate([(0.5, 0.2), (-0.5, -0.1)])))
    rows = tokens.read_tokens(tmp_path, step=2, prompt=0)
    text = tokens.describe(rows)
    assert "#0 advantage +0.500  Δ log-prob +0.200  KL +0.500" in text and "followed the advantage" in text
    assert tokens.recorded(tmp_path) == {2: 1}
    assert "no token view recorded" in tokens.describe([])
