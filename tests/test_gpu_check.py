import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_gpu_check_tiny_runs_on_cpu():
    out = subprocess.run([sys.executable, "bench/gpu_check.py", "--tiny"], cwd=ROOT, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    rows = [json.loads(x) for x in out.stdout.splitlines() if x.startswith("{")]
    results = [r for r in rows if "variant" in r]
    assert {r["variant"] for r in results} == {"transformers+bnb 4-bit", "transformers+PEFT 16-bit"}
    for r in results:
        assert r["reward_step_s_median"] > 0 and r["rloo_step_s_median"] > 0 and r["gen_tokens_per_s"] > 0
        assert r["reward_estimate_gib"] > 0 and r["rloo_estimate_gib"] > 0
    assert rows[-1]["results"] == 2
