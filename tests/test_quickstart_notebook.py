"""examples/quickstart.ipynb, as a user runs it: every cell in a real Jupyter kernel (nbclient + ipykernel), from its
own folder, on a fresh demo workspace. The notebook in the repository carries no outputs; run, each cell gives what
it says: a reward model that learned, its charts, one response scored step by step, an RLOO run with its charts,
completions and before/after. The Python API's Run handle is checked here through the notebook."""
import json
import shutil
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from rloo_studio.rloo.charts import PLOTS

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "examples" / "quickstart.ipynb"


def text_of(cell) -> str:
    """What the cell printed and the plain-text form of what it displayed."""
    out = []
    for o in cell.outputs:
        out.append(o.get("text", "") if o.output_type == "stream" else o.get("data", {}).get("text/plain", ""))
    return "".join(out)


def figures(cell) -> list[dict]:
    return [json.loads(o["data"]["application/vnd.plotly.v1+json"]) if isinstance(o["data"].get(
            "application/vnd.plotly.v1+json"), str) else o["data"]["application/vnd.plotly.v1+json"]
            for o in cell.outputs if o.output_type == "display_data" and "application/vnd.plotly.v1+json" in o["data"]]


def stored_without_outputs(notebook: Path) -> bool:
    """The notebook in the repository has code cells, none with outputs or an execution count."""
    code = [c for c in nbformat.read(notebook, as_version=4).cells if c.cell_type == "code"]
    return bool(code) and all(not c.outputs and c.execution_count is None for c in code)


def run_in_kernel(notebook: Path, tmp_path: Path, extra: tuple[str, ...] = ()) -> tuple[Path, list]:
    """(its folder, its code cells run): the notebook copied to a folder of its own with `extra` cells after its
    own, every cell run in a real kernel from that folder, none ending in an error."""
    folder = tmp_path / "examples"
    folder.mkdir()
    shutil.copy(notebook, folder / notebook.name)
    nb = nbformat.read(folder / notebook.name, as_version=4)
    nb.cells.extend(nbformat.v4.new_code_cell(source) for source in extra)
    NotebookClient(nb, timeout=1500, kernel_name="python3", resources={"metadata": {"path": str(folder)}}).execute()
    cells = [c for c in nb.cells if c.cell_type == "code"]
    assert not [o for c in cells for o in c.outputs if o.output_type == "error"]
    return folder, cells


def test_the_stored_notebook_has_no_outputs():
    assert stored_without_outputs(NOTEBOOK)


def test_the_quickstart_runs_the_demo_loop_in_a_kernel(tmp_path):
    folder, cells = run_in_kernel(NOTEBOOK, tmp_path, (  # the test's own last cell: the runs, as the API lists them
        "print(sorted(rs.list_runs(ws)['id']) == sorted([rm.id, policy.id]), rs.run(ws, rm.id).status, "
        "type(rm.metrics()).__name__)",))
    runs, rm_metrics, rm_plot, scored, rloo_metrics, rloo_plot, samples, learned, listed = cells

    assert "Empty DataFrame" in text_of(runs)  # a fresh workspace: no run yet
    assert (folder / "quickstart-ws").is_dir()
    # the reward model's held-out accuracy: step 0 untrained, then evaluations, the last well above chance
    rows = [line.split() for line in text_of(rm_metrics).splitlines()[1:] if line.strip()]
    assert len(rows) >= 3 and float(rows[-1][-1]) >= 0.75, text_of(rm_metrics)  # as tests/test_reward_job.py
    assert len(figures(rm_plot)) == 4 and all(any(len(t.get("x", [])) for t in f["data"]) for f in figures(rm_plot))
    # one response scored: the total and each of its three steps
    assert "'total':" in text_of(scored) and text_of(scored).count("'score':") >= 3, text_of(scored)
    # RLOO: its last logged steps, every chart of the tab (loss, reward, KL with lines), completions with their
    # advantage, before and after
    assert "20" in text_of(rloo_metrics).split() and "kl" in text_of(rloo_metrics)
    assert len(figures(rloo_plot)) == len(PLOTS) and all(any(len(t.get("x", [])) for t in f["data"])
                                                for f in figures(rloo_plot)[:3])
    assert "advantage" in text_of(samples) and "20" in text_of(samples).split()
    said = text_of(learned)
    assert "'before':" in said and "'after':" in said and "'accuracy':" in said, said
    assert text_of(listed).split() == ["True", "completed", "DataFrame"]
