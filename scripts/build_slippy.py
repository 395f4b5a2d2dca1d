"""Build the demo's slipping policy and its step labels from rollouts (no download).

    .venv/bin/python scripts/build_slippy.py                  # the policy, then the labels (~10 min on 2 cores)
    .venv/bin/python scripts/build_slippy.py --labels-only    # the labels only, from the bundled policy

The demo model reasons about half the time and is right when it does: its room is "reason first". A process reward
model needs a policy whose steps go wrong. This one has the demo model's architecture and tokenizer, is trained from
scratch on <think> targets only (it reasons on every answer) and is stopped early, at the first validation
measurement with accuracy >= --target, reasoning >= 95% and format >= 93%: an under-trained model whose arithmetic
slips on a good share of its answers (natural, on-policy slips). Writes rloo_studio/assets/demo-slippy-model/ (with
build_report.json).

Then the demo's step labels, as the step-labels-from-rollouts job makes them (prm/rollouts.py, Math-Shepherd): the
slipping policy answers --label-prompts prompts of demo-train --samples times, and from the end of each <think> step
the bundled demo model (which rarely slips, so a right step's endings reach the answer) writes 4 endings; a step is
good when any of them reaches the answer. Writes rloo_studio/assets/demo-data/step_labels.jsonl: one response per line
with its verdicts (+1 / -1, stopping at the first bad step) and each step's share of endings that reached the answer,
which `--demo` workspaces hold under the annotator "rollouts (automatic)".
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import torch
from transformers import AutoTokenizer, Qwen3Config, Qwen3ForCausalLM

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
import build_demo  # noqa: E402

from rloo_studio.core.paths import DEMO_DATA, DEMO_MODEL, DEMO_SLIPPY_MODEL  # noqa: E402


def build_policy(args) -> dict:
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    sets = build_demo.make_problems(0)
    tok = AutoTokenizer.from_pretrained(str(DEMO_MODEL))
    data = build_demo.examples(tok, sets["train"], 0.0, rng)  # every target reasons
    src = json.loads((DEMO_MODEL / "config.json").read_text())
    cfg = Qwen3Config(**{k: src[k] for k in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                                             "num_attention_heads", "num_key_value_heads", "head_dim",
                                             "max_position_embeddings", "tie_word_embeddings", "rope_theta",
                                             "pad_token_id", "eos_token_id") if k in src})
    model = Qwen3ForCausalLM(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    evals, t0 = [], time.time()
    while build_demo.train_steps.done < args.max_steps:
        loss = build_demo.train_steps(model, opt, tok, data, rng, args.eval_every,
                                      lambda s: args.lr * min(1.0, (s + 1) / 50))
        m = build_demo.evaluate(model, tok, sets["validation"], seed=build_demo.train_steps.done)
        evals.append({"step": build_demo.train_steps.done, "loss": round(loss, 4), **m})
        print(json.dumps(evals[-1]), flush=True)
        if m["accuracy"] >= args.target and m["thinking_rate"] >= 0.95 and m["format_rate"] >= 0.93:
            break
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    DEMO_SLIPPY_MODEL.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(DEMO_SLIPPY_MODEL)
    tok.save_pretrained(DEMO_SLIPPY_MODEL)
    report = {"args": vars(args), "steps": build_demo.train_steps.done, "train_s": round(time.time() - t0, 1),
              "heldout": build_demo.evaluate(model, tok, sets["heldout"], seed=1234), "evals": evals}
    (DEMO_SLIPPY_MODEL / "build_report.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
    print("held-out", json.dumps(report["heldout"]), flush=True)
    return report


def build_labels(args) -> int:
    """Label steps with the product's rollouts job in a throw-away demo workspace; write what it stored."""
    from rloo_studio.label.demo_data import open_workspace
    from rloo_studio.label.steps import ROLLOUTS
    from rloo_studio.prm.rollouts import RolloutConfig, label_from_rollouts
    from rloo_studio.runs.runner import JobRunner

    with tempfile.TemporaryDirectory() as tmp:
        ws = open_workspace(Path(tmp) / "ws", demo=True)
        cfg = RolloutConfig(policy=str(DEMO_SLIPPY_MODEL), completer=str(DEMO_MODEL), prompts=args.label_prompts,
                            samples=args.samples, continuations=4, batch_prompts=50, seed=args.seed)
        runner = JobRunner(ws)
        rid = runner.submit("rollouts", cfg, label_from_rollouts)
        status = runner.wait(rid, 24 * 3600)
        if status != "completed":
            raise SystemExit(f"the rollouts job ended {status}: see {ws.run_dir(rid) / 'log.txt'}")
        rows = ws.query(
            "SELECT p.text, p.extra, r.text, r.id FROM responses r JOIN prompts p ON p.id = r.prompt_id "
            "WHERE r.id IN (SELECT response_id FROM step_labels sl JOIN annotators a ON a.id = sl.annotator_id "
            "WHERE a.name = ? AND sl.superseded = 0) ORDER BY r.id", (ROLLOUTS,))
        out = []
        for prompt, extra, response, response_id in rows:
            labels = ws.query("SELECT step, verdict, soft FROM step_labels WHERE response_id = ? AND superseded = 0 "
                              "ORDER BY step", (response_id,))
            out.append({"prompt": prompt, "answer": json.loads(extra or "{}").get("answer"), "response": response,
                        "verdicts": [v for _, v, _ in labels], "soft": [s for _, _, s in labels]})
    (DEMO_DATA / "step_labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in out))
    bad = sum(-1 in r["verdicts"] for r in out)
    print(f"{len(out)} responses labeled, {bad} with a bad step -> {DEMO_DATA / 'step_labels.jsonl'}", flush=True)
    return len(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--target", type=float, default=0.45, help="stop once validation accuracy reaches this")
    ap.add_argument("--eval-every", type=int, default=25)
    ap.add_argument("--max-steps", type=int, default=1500)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--label-prompts", type=int, default=400, help="demo-train prompts the rollouts label")
    ap.add_argument("--samples", type=int, default=2, help="responses of the policy per prompt")
    ap.add_argument("--labels-only", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)
    if not args.labels_only:
        build_policy(args)
    build_labels(args)


if __name__ == "__main__":
    main()
