"""examples/process_reward.ipynb, as a user runs it: every cell in a real Jupyter kernel (nbclient + ipykernel), from
its own folder, on a fresh demo workspace. The notebook in the repository carries no outputs; run, each cell gives
what it says: the demo's step labels and a process reward model that learned them, its charts, its ProcessBench
F1, one response's steps judged with the slipped step doubted and drawn, an RLOO run of the slipping policy rewarded
by it with its charts, and the before/after in steps."""
import ast
from pathlib import Path

from test_quickstart_notebook import figures, run_in_kernel, stored_without_outputs, text_of

from rloo_studio.prm.charts import PLOTS as PRM_PLOTS
from rloo_studio.rloo.charts import PLOTS as RLOO_PLOTS

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "examples" / "process_reward.ipynb"


def result_of(cell) -> str:
    """The plain-text form of the value the cell ended with (not what it printed on the way: progress bars)."""
    return "".join(o["data"].get("text/plain", "") for o in cell.outputs if o.output_type == "execute_result")


def test_the_stored_notebook_has_no_outputs():
    assert stored_without_outputs(NOTEBOOK)


def test_the_process_reward_notebook_runs_the_loop_in_a_kernel(tmp_path):
    folder, cells = run_in_kernel(NOTEBOOK, tmp_path)
    runs, prm_metrics, prm_plot, bench, scored, rloo_metrics, rloo_plot, learned = cells

    assert "Empty DataFrame" in text_of(runs) and (folder / "process-reward-ws").is_dir()
    # the process reward model: step 0 untrained, then evaluations; at its end most held-out steps judged right
    # (400 steps: 0.78 where the untrained model had 0.27, 2026-12-07)
    rows = [line.split() for line in result_of(prm_metrics).splitlines()[1:] if line.strip()]
    first, last = float(rows[0][-2]), float(rows[-1][-2])
    assert len(rows) >= 3 and last >= 0.7 and last >= first + 0.3, result_of(prm_metrics)
    assert len(figures(prm_plot)) == len(PRM_PLOTS)
    assert all(any(len(t.get("x", [])) for t in f["data"]) for f in figures(prm_plot))
    f1 = ast.literal_eval(result_of(bench).strip())
    assert {"f1", "erroneous_accuracy", "correct_accuracy", "threshold", "n"} <= set(f1) and f1["n"] > 0
    assert 0 < f1["f1"] <= 1 and f1["n"] == f1["erroneous"] + f1["correct"], f1
    # the slipped tens column (2+3 written as 6) is the first step it doubts, drawn in red
    (drawn,) = figures(scored)
    assert [p < 0.5 for p in drawn["data"][0]["y"]][:2] == [False, True], drawn["data"][0]["y"]
    assert drawn["data"][0]["marker"]["color"][1] == "#c0392b"
    assert "first step it doubts: 2. 2+3+0=6" in text_of(scored)
    # RLOO: logged steps up to 30, every chart of the tab with lines for loss, reward and KL
    assert "30" in result_of(rloo_metrics).split() and "kl" in result_of(rloo_metrics)
    assert len(figures(rloo_plot)) == len(RLOO_PLOTS)
    assert all(any(len(t.get("x", [])) for t in f["data"]) for f in figures(rloo_plot)[:3])
    said = ast.literal_eval(result_of(learned).strip())
    assert set(said) == {"before", "after"}
    assert {"accuracy", "slip_rate", "wrong_steps_per_answer"} <= set(said["after"]), said
