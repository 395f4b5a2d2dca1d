"""A run's warnings are kept with the run (runs/run_warnings.py): after it ended they are still in its folder,
in `runs show`, on the Runs tab's row and the RLOO tab, each with the steps it was seen at."""
import json

import pytest

from rloo_studio.runs import catalog, run_warnings
from rloo_studio.runs.runner import prepare_run


def test_one_warning_per_kind_with_its_latest_figures_and_the_steps_seen(tmp_path):
    assert run_warnings.read(tmp_path) == []
    run_warnings.record(tmp_path, 3, ["80% of recent completions are cut", "In 60% of recent groups every …"])
    run_warnings.record(tmp_path, 4, ["85% of recent completions are cut"])
    kept = run_warnings.record(tmp_path, 9, ["70% of recent completions are cut"])
    assert kept == [{"text": "70% of recent completions are cut", "first_step": 3, "last_step": 9},
                    {"text": "In 60% of recent groups every …", "first_step": 3, "last_step": 3}]
    assert run_warnings.read(tmp_path) == kept
    assert [run_warnings.seen(w) for w in kept] == ["steps 3–9", "step 3"]
    (tmp_path / run_warnings.FILE).write_text("{not json")
    assert run_warnings.read(tmp_path) == []  # a broken file hides nothing else


@pytest.mark.train
def test_an_rloo_run_keeps_its_warnings_after_it_ended(tmp_path, capsys):
    """Completions cut at 8 tokens never close </think>: the run warns, and after it completed the warning is
    in warnings.json, `runs show` and the Runs tab's summary, with the steps it was seen at."""
    from rloo_studio.cli import main
    from rloo_studio.label.demo_data import open_workspace

    ws = open_workspace(tmp_path / "ws", demo=True)
    assert main(["train-rloo", "--workspace", str(ws.root), "--preset", "demo-cpu", "--set", "max_steps=2",
                 "--set", "max_completion_length=2", "--set", "eval_prompts=0",
                 "--set", "per_device_train_batch_size=8"]) == 0
    rid = ws.runs("rloo")[0]["id"]
    assert ws.run(rid)["status"] == "completed"
    kept = run_warnings.read(ws.run_dir(rid))
    cut = [w for w in kept if "cut at max completion length (2 tokens)" in w["text"]]
    assert cut and cut[0]["first_step"] == 1 and cut[0]["last_step"] == 2, kept
    capsys.readouterr()
    assert main(["runs", "show", rid, "--workspace", str(ws.root)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["warnings"] == kept
    row = next(r for r in catalog.summaries(ws) if r["id"] == rid)
    assert row["warnings"] == kept


def test_a_run_without_warnings_shows_none(tmp_path):
    from rloo_studio.core.workspace import Workspace

    ws = Workspace(tmp_path / "ws")
    ctx = prepare_run(ws, "rloo", {"max_steps": 1})
    assert next(r for r in catalog.summaries(ws) if r["id"] == ctx.run_id)["warnings"] == []
