"""The reward-model job on the CPU with the bundled demo model and the seeded demo pairs."""
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from transformers import TrainerCallback

from rloo_studio.core.config import build, from_dict
from rloo_studio.core.errors import ConfigError
from rloo_studio.core.model_options import LoraSpec
from rloo_studio.core.models import load_reward_adapter, load_seq_cls
from rloo_studio.core.paths import DEMO_DATA
from rloo_studio.core.thinking import pair_kind
from rloo_studio.reward import launch_form, runs_list, uncertainty
from rloo_studio.reward.config import RewardJobConfig
from rloo_studio.reward.job import (
    format_preflight,
    held_out_rows,
    preflight,
    token_length,
    train_reward,
    truncate_thinking,
)
from rloo_studio.runs.jobs import KINDS
from rloo_studio.runs.runner import JobRunner, read_metrics, read_status

ROOT = Path(__file__).resolve().parent.parent
SHORT = dict(per_device_train_batch_size=8, eval_fraction=0.1, lora=LoraSpec(r=8, alpha=8))


def _run(workspace, cfg, callbacks=(), runner=None):
    r = runner or JobRunner(workspace)
    rid = r.submit("reward", cfg, lambda c, ctx: train_reward(c, ctx, callbacks))
    return r, rid, r.wait(rid, 900)


def _pair_accuracy(model, tok, rows):
    n = len(rows)
    s = uncertainty.score_texts(model, tok, [r["raw_prompt"] for r in rows] * 2,
                                [r["chosen"] for r in rows] + [r["rejected"] for r in rows])
    return sum(s[i] > s[n + i] for i in range(n)) / n


def _raw_prompts(workspace, rows):
    """pairs.jsonl holds chat-formatted prompts; score_texts wants the user's prompt text."""
    from rloo_studio.label.store import preference_pairs

    by_id = {p["pair_id"]: p["prompt"] for p in preference_pairs(workspace)}
    return [{**r, "raw_prompt": by_id[r["pair_id"]]} for r in rows]


def test_demo_preset_learns_the_format_and_reports_each_kind(workspace):
    """The demo preset on the bundled pairs, held-out split stratified by kind: every format pair ranked right,
    the overall figure well above chance, the logged accuracy equal to the saved adapter's, and the figure per
    kind recorded. (The slip pairs stay near chance: docs/REWARD.md.)"""
    cfg = KINDS["reward"].preset_config("demo-cpu")
    t0 = time.time()
    r, rid, state = _run(workspace, cfg)
    assert state == "completed", r.status(rid)
    d = workspace.run_dir(rid)
    last = runs_list.final_eval(read_metrics(d))
    held = held_out_rows(d)
    assert len(held) == int(237 * cfg.eval_fraction)
    assert last["accuracy"] >= 0.75, last
    model, tok = load_reward_adapter(d / "adapter")
    acc = _pair_accuracy(model, tok, _raw_prompts(workspace, held))
    assert abs(acc - last["accuracy"]) <= 1 / len(held) + 1e-6, (acc, last)  # logged = recomputed
    final = [m for m in read_metrics(d) if "eval_accuracy/kind:only chosen reasons" in m][-1]
    assert final["eval_accuracy/kind:only chosen reasons"] >= 0.95, final
    pairs = [json.loads(x) for x in (DEMO_DATA / "pairs.jsonl").read_text().splitlines()]
    both = sum(pair_kind(p["chosen"], p["rejected"]) == "both reason" for p in pairs)
    share = both * cfg.eval_fraction  # stratified: 20% of them, rounded either way (largest remainders)
    assert int(share) <= final["eval_pairs/kind:both reason"] <= int(share) + 1, final
    assert "held-out accuracy" in read_status(d)["message"]
    print(f"\ndemo preset: held-out accuracy {acc:.3f} on {len(held)} pairs in {time.time() - t0:.0f} s")


def test_stop_then_resume_continues_from_the_checkpoint(workspace):
    r = JobRunner(workspace)
    cfg = RewardJobConfig(max_steps=14, save_steps=1000, eval_steps=1000, **SHORT)
    rid = r.submit("reward", cfg, train_reward)
    t0 = time.time()
    while not any(m.get("step", 0) >= 3 and "loss" in m for m in r.feed(rid)):
        assert time.time() - t0 < 600 and r.status(rid)["status"] in ("queued", "running"), r.status(rid)
        time.sleep(0.1)
    r.stop(rid)
    assert r.wait(rid, 600) == "stopped"
    d = workspace.run_dir(rid)
    ckpts = sorted(p.name for p in (d / "checkpoints").glob("checkpoint-*"))
    assert len(ckpts) == 1, ckpts  # save_steps is out of reach: Stop wrote it
    stopped_at = int(ckpts[0].split("-")[1])
    assert 3 <= stopped_at < 14 and (d / "adapter" / "adapter_config.json").exists()
    assert r.submit("reward", cfg, train_reward, run_id=rid) == rid
    assert r.wait(rid, 600) == "completed", r.status(rid)
    steps = [m["step"] for m in read_metrics(d) if "loss" in m]
    assert steps == sorted(set(steps)) and steps[-1] == 14, steps  # one record per step, none trained twice
    assert [s for s in steps if s > stopped_at][0] == stopped_at + 1  # the step count goes on from the checkpoint
    assert "step 14" in read_status(d)["message"]


class _Keep(TrainerCallback):
    def on_train_end(self, args, state, control, model=None, **kw):
        self.model = model


def test_saved_adapter_reloads_with_the_in_memory_scores_and_holds_the_score_head(workspace):
    from peft import PeftModel

    keep = _Keep()
    r, rid, state = _run(workspace, RewardJobConfig(max_steps=4, **SHORT), callbacks=[keep])
    assert state == "completed", r.status(rid)
    adapter = workspace.run_dir(rid) / "adapter"
    saved = load_file(str(adapter / "adapter_model.safetensors"))
    head = [k for k in saved if "score" in k]
    assert head, sorted(saved)[:5]
    base, tok = load_seq_cls(RewardJobConfig().model)
    fresh_head = base.score.weight.detach().clone()
    reloaded = PeftModel.from_pretrained(base, str(adapter)).eval()
    trained = keep.model.eval()
    rows = _raw_prompts(workspace, held_out_rows(workspace.run_dir(rid)))[:12]
    prompts, texts = [x["raw_prompt"] for x in rows], [x["chosen"] for x in rows]
    a = torch.tensor(uncertainty.score_texts(trained, tok, prompts, texts))
    b = torch.tensor(uncertainty.score_texts(reloaded, tok, prompts, texts))
    assert torch.allclose(a, b, atol=1e-5), (a, b)
    (w,) = [saved[k] for k in head if k.endswith("weight")]
    assert not torch.allclose(w, fresh_head)  # the trained head, not a fresh random one


@pytest.mark.parametrize("policy,max_length", [("drop", 70), ("truncate_thinking", 60), ("fit", 40)])
def test_preflight_over_length_count_matches_what_trl_trains_on(workspace, policy, max_length):
    cfg = RewardJobConfig(max_steps=1, max_length=max_length, over_length=policy, **SHORT)
    pf = preflight(workspace, cfg)
    assert 0 < pf["over_length"] < pf["pairs"] or policy != "drop"
    r, rid, state = _run(workspace, cfg)
    assert state == "completed", r.status(rid)
    done = json.loads((workspace.run_dir(rid) / "preflight.json").read_text())
    kept = done["trained_on"]["train"] + done["trained_on"]["held_out"]
    assert kept == pf["after"]
    if policy == "drop":  # TRL silently filtered exactly the pairs the pre-flight counted
        assert done["dropped_by_trl"] == pf["over_length"] and kept == pf["pairs"] - pf["over_length"]
    elif policy == "fit":
        assert kept == pf["pairs"] and done["dropped_by_trl"] == 0
    else:
        assert pf["over_length"] > 0 and kept > pf["pairs"] - pf["over_length"]


def test_truncate_thinking_keeps_the_answer_and_fits():
    _, tok = load_seq_cls(RewardJobConfig().model)
    resp = "<think>\n6+0+0=6\n\n6+6+0=12\n\n7+5+1=13\n</think>\n\nThe answer is 1326."
    prompt = "<|im_start|>user\nAdd 766 and 560.<|im_end|>\n<|im_start|>assistant\n"
    full = token_length(tok, prompt, resp)
    cut = truncate_thinking(tok, prompt, resp, full - 3)
    assert token_length(tok, prompt, cut) <= full - 3
    assert cut.endswith("</think>\n\nThe answer is 1326.") and cut.startswith("<think>\n6+0+0=6")
    assert "7+5+1=13" not in cut
    assert truncate_thinking(tok, prompt, resp, full) == resp


class _Oom(TrainerCallback):
    def on_step_begin(self, *a, **kw):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")


def test_failing_runs_end_failed_with_a_message_and_the_next_run_succeeds(workspace):
    r = JobRunner(workspace)
    cases = [
        (RewardJobConfig(model="/nonexistent/reward-base", **SHORT), (), "No model at /nonexistent/reward-base"),
        (RewardJobConfig(max_steps=6, learning_rate=1e30, **SHORT), (), "Lower the learning rate"),
        (RewardJobConfig(max_steps=3, **SHORT), (_Oom(),), "per_device_train_batch_size"),
    ]
    for cfg, cbs, expect in cases:
        _, rid, state = _run(workspace, cfg, cbs, runner=r)
        st = read_status(workspace.run_dir(rid))
        assert state == "failed" and expect in st["message"], st
        assert "Traceback" not in st["message"]
    assert "Out of memory" in st["message"] and "max_length" in st["message"] and "4-bit" in st["message"]
    _, rid, state = _run(workspace, RewardJobConfig(max_steps=2, **SHORT), runner=r)
    assert state == "completed"
    assert [row[1] for row in runs_list.runs_rows(workspace)] == ["completed", "failed", "failed", "failed"]


def test_presets_form_yaml_and_cli_are_views_of_one_config(tmp_path):
    for name in KINDS["reward"].preset_names():
        cfg = KINDS["reward"].preset_config(name)
        cfg.validate()
        assert launch_form.config_from_form(launch_form.form_values(cfg)) == cfg
        yml = tmp_path / "c.yaml"
        yml.write_text(launch_form.config_yaml(cfg))
        assert build(RewardJobConfig, yml) == cfg
        sets = [s.split(" ", 1)[1].strip("'") for s in launch_form.cli_command(cfg, "/w").split(" \\\n  ")
                if s.startswith("--set")]
        assert build(RewardJobConfig, None, sets) == cfg
    gpu = KINDS["reward"].preset_config("gpu-16gb")
    assert (gpu.lora.r, gpu.lora.alpha, gpu.learning_rate, gpu.max_length, gpu.optim) == \
        (16, 16, 1e-5, 1024, "adamw_8bit")


def test_bad_form_values_name_the_field():
    values = launch_form.form_values(RewardJobConfig())
    keys = [f.key for f in launch_form.form_fields()]
    for key, bad, words in [("learning_rate", "fast", "learning_rate"), ("over_length", "squash", "over_length"),
                            ("lora.r", 0, "lora.r"), ("eval_fraction", 1.5, "eval_fraction")]:
        v = list(values)
        v[keys.index(key)] = bad
        with pytest.raises(ConfigError, match=words.replace(".", r"\.")):
            launch_form.config_from_form(v)


def test_uncertainty_queue_orders_unlabeled_pairs_by_smallest_margin(workspace):
    from rloo_studio.core.models import load_reward_adapter

    r, rid, state = _run(workspace, RewardJobConfig(max_steps=3, **SHORT))
    assert state == "completed"
    unlabeled = [x["id"] for x in workspace.query(
        "SELECT id FROM pairs WHERE id NOT IN (SELECT pair_id FROM labels WHERE superseded=0)")]
    q = uncertainty.uncertainty_queue(workspace, rid)
    assert sorted(p for p, _, _ in q) == sorted(unlabeled) and len(q) == 80
    margins = [abs(m) for _, m, _ in q]
    assert margins == sorted(margins)
    assert all(s == ("a" if m >= 0 else "b") for _, m, s in q)
    # One pair scored on its own gives the same margin.
    pid, margin, _ = q[-1]
    row = workspace.query("""SELECT p.text AS prompt, ra.text AS a, rb.text AS b FROM pairs pr
        JOIN prompts p ON p.id=pr.prompt_id JOIN responses ra ON ra.id=pr.response_a
        JOIN responses rb ON rb.id=pr.response_b WHERE pr.id=?""", (pid,))[0]
    model, tok = load_reward_adapter(workspace.run_dir(rid) / "adapter")
    sa, sb = uncertainty.score_texts(model, tok, [row["prompt"]] * 2, [row["a"], row["b"]])
    assert abs((sa - sb) - margin) < 1e-4
    some = unlabeled[:5] + [1]  # pair 1 is labeled: never offered
    assert sorted(p for p, _, _ in uncertainty.uncertainty_queue(workspace, rid, some)) == sorted(unlabeled[:5])


def test_cli_train_reward_writes_the_run_folder(tmp_path):
    ws = tmp_path / "ws"
    out = subprocess.run(
        [sys.executable, "-m", "rloo_studio", "train-reward", "--workspace", str(ws), "--demo", "--set", "max_steps=2",
         "--set", "lora.r=4", "--set", "per_device_train_batch_size=8"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    (run,) = (ws / "runs").iterdir()
    for name in ("config.yaml", "status.json", "metrics.jsonl", "log.txt", "preflight.json",
                 "adapter/adapter_config.json"):
        assert (run / name).exists(), name
    assert from_dict(RewardJobConfig, __import__("yaml").safe_load((run / "config.yaml").read_text())).lora.r == 4
    assert read_status(run)["status"] == "completed"


def test_resume_from_half_way_equals_the_uninterrupted_run(workspace, tmp_path):
    import shutil

    from resume_check import assert_same_run

    cfg = RewardJobConfig(max_steps=8, save_steps=4, eval_steps=4, **SHORT)
    r, rid, status = _run(workspace, cfg)
    assert status == "completed", r.status(rid)
    d = workspace.run_dir(rid)
    full = shutil.copytree(d, tmp_path / "uninterrupted")
    # checkpoint-8 as a save cut short by a crash leaves it: weights half written, no trainer_state.json
    # (the Trainer writes it last). Resume must pass it over and continue from checkpoint-4.
    cut = d / "checkpoints" / "checkpoint-8"
    (cut / "trainer_state.json").unlink()
    weights = cut / "adapter_model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    shutil.rmtree(d / "adapter")
    assert r.submit("reward", cfg, train_reward, run_id=rid) == rid
    assert r.wait(rid, 900) == "completed", r.status(rid)
    assert_same_run(d, full, from_step=4)


def test_preflight_counts_what_training_leaves_out_as_training_resolves_labels(workspace):
    """People's labels override imported ones (label.store.decided_pairs): an imported pair that a person
    labeled the other way is trained on, not counted as a split vote; ties, skips and even splits are."""
    from rloo_studio.label import store as L

    before = preflight(workspace, RewardJobConfig())
    imported = [p["pair_id"] for p in L.preference_pairs(workspace)][:4]
    shown = lambda pid: L.Shown(pid, "", "", "", True, "demo-pairs", None, None)  # noqa: E731  (left = a)
    L.save_label(workspace, shown(imported[0]), "ann", "s", "right")  # overrides the import: still a preference
    L.save_label(workspace, shown(imported[1]), "ann", "s", "tie")
    L.save_label(workspace, shown(imported[2]), "ann", "s", "skip")
    L.save_label(workspace, shown(imported[3]), "ann", "s", "left")
    L.save_label(workspace, shown(imported[3]), "bob", "s", "right")  # one each way: an even split
    pf = preflight(workspace, RewardJobConfig())
    assert (pf["ties"], pf["skips"], pf["split_votes"]) == (before["ties"] + 1, before["skips"] + 1,
                                                             before["split_votes"] + 1)
    assert pf["pairs"] == before["pairs"] - 3 and pf["labeled"] == before["labeled"]


def test_a_sampled_preflight_says_so_and_estimates_what_the_full_one_counts(workspace):
    """The page's pre-flight tokenizes at most `sample` pairs (a million pairs took 9 minutes when it tokenized them
    all): it counts every pair and label, reads the lengths of a seeded random sample, scales the over-length count to
    all pairs and says so on the page; with fewer pairs than the sample it is the full pre-flight."""
    cfg = RewardJobConfig(max_length=70)
    full = preflight(workspace, cfg)
    part = preflight(workspace, cfg, sample=100)
    assert full["sampled"] is None and part["sampled"] == 100
    assert {k: part[k] for k in ("pairs", "labeled", "ties", "skips", "split_votes", "train", "held_out")} == \
        {k: full[k] for k in ("pairs", "labeled", "ties", "skips", "split_votes", "train", "held_out")}
    assert 0 < full["over_length"] < full["pairs"]
    assert abs(part["over_length"] - full["over_length"]) <= 0.25 * full["over_length"] + 5, (part, full)
    assert abs(part["after"] - full["after"]) <= 0.25 * full["after"] + 5, (part, full)
    text = format_preflight(part)
    assert "in a random sample of 100 pairs" in text and "about **" in text, text
    assert "random sample" not in format_preflight(full)
    assert preflight(workspace, cfg, sample=10_000) == full  # fewer pairs than the sample: all of them, the same
