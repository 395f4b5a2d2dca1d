"""The studio in a Jupyter notebook: a real notebook run cell by cell in a real kernel (nbclient + ipykernel). The
app shows in the cell's output and serves from the kernel; a second launch says what is running; a job started
from Python in that kernel queues on the app's runner; app.close() stops the server."""
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
from browser import free_port
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent


def outputs(cell) -> tuple[str, str]:
    """(the cell's printed text, its HTML displays)."""
    text = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
    html = "".join(o.get("data", {}).get("text/html", "") for o in cell.outputs if o.output_type == "display_data")
    return text, html


def test_launch_in_a_notebook_cell_then_train_from_python_then_close(tmp_path):
    port, ws = free_port(), tmp_path / "ws"
    cells = [
        f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
        f"import rloo_studio\napp = rloo_studio.launch(workspace={str(ws)!r}, demo=True, port={port}, height=900)",
        f"again = rloo_studio.launch(workspace={str(ws)!r})\nprint(again is app)",
        f"try:\n    rloo_studio.launch(workspace={str(tmp_path / 'other')!r})\nexcept rloo_studio.StudioError as e:\n"
        "    print('refused:', e)",
        "run = rloo_studio.train_reward(app.studio.ws, max_steps=2, eval_steps=100, save_steps=100)\n"
        "print(run.wait(600, progress=False), run.id in app.studio.runner.contexts)",
        "app.close()",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
    text, html = outputs(nb.cells[0])
    assert f"RLOO Studio on http://127.0.0.1:{port}" in text and str(ws) in text
    assert "<iframe" in html and f":{port}" in html and 'height="900' in html  # the app, in the cell
    assert outputs(nb.cells[1])[0].strip().endswith("True") and "already running" in outputs(nb.cells[1])[0]
    assert "refused: RLOO Studio already serves" in outputs(nb.cells[2])[0]
    assert outputs(nb.cells[3])[0].strip().splitlines()[-1] == "completed True"  # the job ran on the app's runner
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5)
        served = True
    except (urllib.error.URLError, OSError):
        served = False
    assert not served  # closed with the notebook's app.close()
