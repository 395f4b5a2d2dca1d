"""A job kind is its registry entry (runs/jobs.py): a kind added there alone gets its CLI command, its per-step
files rewound on resume, its tab with the job section and run panel, and its run folder's records."""
import json

import pytest

from rloo_studio.runs.jobs import KINDS, JobKind
from rloo_studio.runs.runner import JobRunner, read_jsonl

TOY = JobKind("toy", "toy", train="toy_kind:train_toy", config="toy_kind:ToyConfig", cli="train-toy",
              cli_help="count steps, headless",
              key_metrics=(("loss", "loss"),), resumable=True, step_files=("metrics.jsonl", "toy.jsonl"),
              tab_title="Toy", tab_after="Inspect")  # no tab module: the default job tab


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setitem(KINDS, "toy", TOY)
    return TOY


def write_presets(ws_root) -> None:
    """The toy kind's presets, as a user keeps their own: YAML files in the workspace (core/presets.py)."""
    folder = ws_root / "presets" / "toy"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "small.yaml").write_text("description: two steps\nconfig:\n  steps: 2\n")
    (folder / "default.yaml").write_text("description: the defaults\nconfig: {}\n")


def rows_by_step(path) -> dict[int, int]:
    out: dict[int, int] = {}
    for r in read_jsonl(path):
        out[r["step"]] = out.get(r["step"], 0) + 1
    return out


def test_the_cli_trains_and_resumes_a_kind_it_was_never_told_of(toy, tmp_path, capsys, monkeypatch):
    from rloo_studio.cli import build_parser, main

    ws = str(tmp_path / "ws")
    write_presets(tmp_path / "ws")
    help_text = build_parser().format_help()
    assert "train-toy" in help_text and "count steps, headless" in help_text
    with pytest.raises(SystemExit):
        main(["train-toy", "--help"])
    assert "items (default: 3)" in capsys.readouterr().out  # the settings, from the config class
    monkeypatch.setenv("TOY_CRASH_AFTER", "3")
    assert main(["train-toy", "--workspace", ws]) == 1  # ends after step 3
    monkeypatch.delenv("TOY_CRASH_AFTER")
    from rloo_studio.core.workspace import Workspace

    (run,) = Workspace(ws).runs("toy")
    d = Workspace(ws).run_dir(run["id"])
    assert rows_by_step(d / "toy.jsonl") == {1: 3, 2: 3, 3: 3}
    assert "train-toy" in (d / "command.txt").read_text()
    assert main(["train-toy", "--workspace", ws, "--resume", run["id"]]) == 0  # from checkpoint-2, as saved
    assert rows_by_step(d / "toy.jsonl") == {1: 3, 2: 3, 3: 3, 4: 3}  # step 3 once: rewound to the checkpoint
    assert [m["step"] for m in read_jsonl(d / "metrics.jsonl") if "loss" in m] == [1, 2, 3, 4]
    assert main(["train-toy", "--workspace", ws, "--preset", "small"]) == 0
    capsys.readouterr()
    assert main(["runs", "show", run["id"], "--workspace", ws]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["status"] == "completed" and shown["last"]["loss"] == 0.25


def test_the_runner_rewinds_every_per_step_file_of_the_kind(toy, empty_workspace, monkeypatch):
    from toy_kind import ToyConfig, train_toy

    r = JobRunner(empty_workspace)
    monkeypatch.setenv("TOY_CRASH_AFTER", "5")
    rid = r.submit("toy", ToyConfig(steps=6), train_toy)
    assert r.wait(rid, 30) == "failed"
    monkeypatch.delenv("TOY_CRASH_AFTER")
    d = empty_workspace.run_dir(rid)
    assert rows_by_step(d / "toy.jsonl") == {s: 3 for s in range(1, 6)}
    assert r.submit("toy", ToyConfig(steps=6), train_toy, run_id=rid) == rid
    assert r.wait(rid, 30) == "completed"
    assert rows_by_step(d / "toy.jsonl") == {s: 3 for s in range(1, 7)}  # from checkpoint-4: 5 and 6 once


def test_the_app_gives_the_kind_its_tab_section_and_run_panel(toy, empty_workspace):
    import gradio as gr

    from rloo_studio.runs import lifecycle
    from rloo_studio.studio import Studio
    from rloo_studio.ui import app, job_section, run_panel

    titles = [t for t, _ in app.tabs()]
    assert titles.index("Toy") == titles.index("RLOO") + 1  # after Inspect, behind the kind registered before it
    assert ".live-toy" in run_panel.css()
    write_presets(empty_workspace.root)
    studio = Studio(empty_workspace.root)
    demo = app.build_ui(studio)
    ids = {getattr(b, "elem_id", None) for b in demo.blocks.values()}
    assert {"toy-preset", "toy-steps", "toy-validate", "toy-launch", "toy-stop", "toy-resume", "toy-check",
            "toy-status", "toy-failure", "toy-runs"} <= ids
    assert isinstance(demo, gr.Blocks)
    rid = lifecycle.start(studio.ws, studio.runner, "toy", lifecycle.new_run(studio.ws, "toy", toy.config_class()()))
    assert studio.runner.wait(rid, 30) == "completed" and rid.startswith("toy-")
    headers, rows = job_section.runs_rows(studio.ws, "toy")  # the default tab's runs list: its kind's runs only
    assert [r[:2] for r in rows] == [[rid, "completed"]] and headers[0] == "run"


def test_the_python_api_trains_and_resumes_the_kind_from_its_entry(toy, empty_workspace, monkeypatch):
    import rloo_studio as rs

    write_presets(empty_workspace.root)
    monkeypatch.setenv("TOY_CRASH_AFTER", "3")
    run = rs.train("toy", empty_workspace.root, preset="default", steps=5)
    with pytest.raises(rs.StudioError, match="killed after step 3"):  # the API says a failed run in words
        run.wait(30, progress=False)
    monkeypatch.delenv("TOY_CRASH_AFTER")
    run.resume()
    assert run.wait(30, progress=False) == "completed"
    assert rows_by_step(empty_workspace.run_dir(run.id) / "toy.jsonl") == {s: 3 for s in range(1, 6)}
    assert run.metrics()["loss"].dropna().tolist()[-1] == 0.2


def test_score_with_a_run_that_gives_no_scorer_says_so_in_a_line(empty_workspace, capsys):
    """An RLOO run's adapter is a policy: `score --reward-run` refuses it in words (exit 2), before loading anything."""
    from rloo_studio.cli import main
    from rloo_studio.rloo.config import RlooJobConfig
    from rloo_studio.runs.runner import prepare_run

    rid = prepare_run(empty_workspace, "rloo", RlooJobConfig()).run_id
    code = main(["score", "--workspace", str(empty_workspace.root), "--reward-run", rid, "--prompt", "Add 1 and 2.",
                 "--response", "<think>\n1+2=3\n</think>\n\nThe answer is 3.", "--json"])
    out = capsys.readouterr()
    assert code == 2 and out.out == ""
    assert out.err.count("\n") == 1 and "Traceback" not in out.err
    assert f"Run {rid} is an RLOO run: it gives a policy, not a reward model" in out.err
    assert "Choose a reward-model or a process-reward run" in out.err
