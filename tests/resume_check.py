"""Checks that a resumed run is the run that never stopped: same metrics per step, same adapter."""
from pathlib import Path

import torch
from safetensors.torch import load_file

from rloo_studio.runs.runner import read_metrics

# Wall-clock figures differ between any two runs; everything else must not.
TIMING = ("time", "step_time", "train_runtime", "train_samples_per_second", "train_steps_per_second",
          "eval_runtime", "eval_samples_per_second", "eval_steps_per_second")


def by_step(run_dir: Path) -> dict[tuple, dict]:
    """metrics.jsonl as {(step, kind): record}; asserts one record of each kind per step."""
    out = {}
    for m in read_metrics(run_dir):
        kind = ("summary" if "train_runtime" in m
                else "breakdown" if any(k.startswith("eval_") and "/" in k for k in m)  # per kind / source of pair
                else "eval" if any(k.startswith("eval_") for k in m) else "train")
        key = (m["step"], kind)
        assert key not in out, f"step {m['step']} ({kind}) recorded twice in {run_dir.name}/metrics.jsonl"
        out[key] = {k: v for k, v in m.items() if k not in TIMING}
    return out


def assert_same_run(resumed: Path, uninterrupted: Path, from_step: int) -> None:
    """Every metric of the steps after `from_step`, and the saved adapter, equal the uninterrupted run's."""
    a, b = by_step(resumed), by_step(uninterrupted)
    assert sorted(a) == sorted(b), (sorted(a), sorted(b))
    later = [k for k in b if k[0] > from_step and k[1] != "summary"]
    assert later, f"nothing logged after step {from_step}"
    for key in sorted(later):
        assert a[key].keys() == b[key].keys(), key
        for name, value in b[key].items():  # deterministic on the CPU with a fixed seed: equal, not close
            assert a[key][name] == value, (key, name, a[key][name], value)
    name = next(n for n in ("adapter_model.safetensors", "model.safetensors")  # an adapter, or a whole fine-tune
                if (uninterrupted / "adapter" / n).exists())
    wa = load_file(str(resumed / "adapter" / name))
    wb = load_file(str(uninterrupted / "adapter" / name))
    assert wa.keys() == wb.keys()
    for name in wb:
        assert torch.equal(wa[name], wb[name]), (name, (wa[name] - wb[name]).abs().max().item())
