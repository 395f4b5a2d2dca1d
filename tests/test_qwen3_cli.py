"""A Qwen3 thinking model end to end through the CLI: the tiny random Qwen3 with the real tokenizer and
Unsloth's qwen3-thinking template (tests/qwen3_fixture.py). Import Qwen3-style pairs (reasoning without an
opening <think>), train a reward model, score per step, and run RLOO with think_format + the reward model
+ TRL rewards."""
import contextlib
import io
import json
import random

OPEN_ID = 151667


def cli(*args) -> str:
    """The CLI's own main() in this process (the same code as `python -m rloo_studio`, without paying a new
    process's imports for every command; tests/test_cli.py runs it as a subprocess); its stdout."""
    from rloo_studio.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main([str(a) for a in args])
    assert rc == 0, (args[0], out.getvalue()[-2000:])
    return out.getvalue()


def run_id(stdout: str) -> str:
    return next(line.split()[1] for line in stdout.splitlines() if line.startswith("run "))


def qwen3_pairs(n: int = 12) -> list[dict]:
    """Pairs as a Qwen3-Thinking model writes them: the template opened <think>, so the text starts inside."""
    rng = random.Random(0)
    rows = []
    for k in range(n):
        a, b = rng.randint(10, 99), rng.randint(10, 99)
        good = f"{a % 10}+{b % 10}={a % 10 + b % 10}\n\nthen the tens\n</think>\n\nThe answer is {a + b}."
        bad = f"guess\n</think>\n\nThe answer is {a + b + 1}."
        rows.append({"prompt": f"What is {a} + {b}?", "chosen": good, "rejected": bad})
    return rows


def test_qwen3_thinking_model_through_the_cli(tmp_path, qwen3_model):
    from transformers import AutoTokenizer

    ws = tmp_path / "ws"
    src = tmp_path / "qwen3_pairs.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in qwen3_pairs()))
    assert "Imported 12 rows" in cli("import", str(src), "--workspace", str(ws))

    # -- reward model: exactly one <think> (151667) per response in what it trains on
    out = cli("train-reward", "--workspace", str(ws), "--set", f"model={qwen3_model}", "--set", "max_steps=2",
              "--set", "eval_fraction=0.25", "--set", "per_device_train_batch_size=4", "--set", "max_length=256",
              "--set", "use_unsloth=false")
    rm_run = run_id(out)
    assert out.strip().splitlines()[-1].startswith("completed"), out
    tok = AutoTokenizer.from_pretrained(qwen3_model)
    rows = [json.loads(x) for x in (ws / "runs" / rm_run / "pairs.jsonl").read_text().splitlines()]
    assert len(rows) == 12
    for r in rows:
        assert r["prompt"].endswith("<|im_start|>assistant\n<think>\n")
        for side in ("chosen", "rejected"):
            ids = tok(r["prompt"] + r[side] + tok.eos_token)["input_ids"]
            assert ids.count(OPEN_ID) == 1 and ids.count(151668) == 1
        assert "then the tens\n</think>" in r["chosen"]  # the response's own reasoning is trained on

    # -- score: the same steps with and without the opening tag; a cut response is truncated, with its steps
    def score(response):
        return json.loads(cli("score", "--workspace", str(ws), "--reward-run", rm_run, "--prompt", "What is 12 + 34?",
                              "--response", response, "--json"))

    body = "2+4=6\n\nthen the tens\n</think>\n\nThe answer is 46."
    with_tag, without = score("<think>\n" + body), score(body)
    assert [s["text"] for s in with_tag["steps"]] == [s["text"] for s in without["steps"]] == ["2+4=6", "then the tens"]
    assert abs(with_tag["total"] - without["total"]) < 1e-4
    assert with_tag["closed"] and not with_tag["truncated"]
    cut = score("2+4=6\n\nthen the te")
    assert cut["truncated"] and not cut["closed"] and [s["text"] for s in cut["steps"]] == ["2+4=6", "then the te"]

    # -- RLOO: think_format + the reward model + TRL rewards, 2 steps
    prompts = tmp_path / "math.jsonl"
    prompts.write_text("".join(json.dumps({"prompt": f"What is {k} + {k}?", "solution": f"${2 * k}$"}) + "\n"
                               for k in range(1, 9)))
    cli("import", str(prompts), "--workspace", str(ws), "--name", "math")
    out = cli("train-rloo", "--workspace", str(ws), "--set", f"model={qwen3_model}", "--set", "backend=transformers",
              "--set", "prompt_set=math", "--set", "rewards=think_format,reward_model,reasoning_accuracy,soft_overlong",
              "--set", "reward_weights=1.0,0.5,1.0,0.2", "--set", f"reward_model_run={rm_run}",
              "--set", "num_generations=2", "--set", "per_device_train_batch_size=4", "--set", "max_steps=2",
              "--set", "max_completion_length=12", "--set", "eval_prompts=0", "--set", "save_steps=10")
    rl_run = run_id(out)
    assert out.strip().splitlines()[-1].startswith("completed"), out
    metrics = [json.loads(x) for x in (ws / "runs" / rl_run / "metrics.jsonl").read_text().splitlines() if x.strip()]
    logged = {k for m in metrics for k in m}
    for name in ("think_format", "reward_model", "reasoning_accuracy", "soft_overlong"):
        assert any(name in k for k in logged), (name, sorted(logged))
    samples = [json.loads(x) for x in (ws / "runs" / rl_run / "samples.jsonl").read_text().splitlines()]
    assert {s["step"] for s in samples} == {1, 2}
    for s in samples:
        assert s["response"] == "<think>\n" + s["completion"]  # completions begin inside the template's <think>
        closed = "</think>" in s["completion"]
        assert (s["rewards"]["think_format"] == -1.0) == (not closed)
    assert any("</think>" in s["completion"] for s in samples)
