"""The studio from Python (rloo_studio/python_api.py): the same functions as the tabs and the CLI. Data work loads no
torch; a job started from Python trains, waits, gives its metrics and charts; a refused call says what the tab says."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_data_work_from_python_loads_no_torch(tmp_path):
    """Open a workspace, import, label the pair handed out, export: in a fresh process, without torch."""
    src = tmp_path / "pairs.jsonl"
    src.write_text("".join(json.dumps({"prompt": f"q{i}", "chosen": f"good {i}", "rejected": f"bad {i}"}) + "\n"
                           for i in range(3)))
    script = f"""
import sys
import rloo_studio as rs
ws = rs.open_workspace({str(tmp_path / 'ws')!r})
print(rs.import_file(ws, {str(src)!r}).summary())
pair = rs.next_pair(ws, "ana")
assert rs.next_pair(ws, "ana") == pair  # held for her until she labels it
rs.label_pair(ws, "ana", pair["pair_id"], "left")
print(rs.export(ws, {str(tmp_path / 'out.jsonl')!r}).summary())
print("torch" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.strip().splitlines()
    assert lines[0].startswith("Imported 3 rows") and lines[-1] == "False"
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 3


def test_a_reward_model_trained_from_python(workspace):
    import pandas as pd

    import rloo_studio as rs

    run = rs.train_reward(workspace, preset="demo (CPU)", max_steps=4, eval_steps=2, save_steps=100)
    assert run.wait(600, progress=False) == "completed" and run.kind == "reward"
    m = run.metrics()
    assert isinstance(m, pd.DataFrame) and m["loss"].notna().sum() == 4
    figs = run.plot(show=False)
    assert len(figs) == 4 and all(any(len(t.x) for t in f.data) for f in figs)  # each chart has a line
    scored = rs.score(workspace, run.id, "Add 820 and 634.",
                      "<think>\n0+4+0=4\n\n2+3+0=5\n\n8+6+0=14\n</think>\n\nThe answer is 1454.")
    assert len(scored["steps"]) == 3 and isinstance(scored["total"], float)
    assert rs.list_runs(workspace)["id"].tolist() == [run.id]
    assert rs.run(workspace, run.id).status == "completed"


def test_a_refused_call_raises_the_tabs_words(empty_workspace):
    import rloo_studio as rs

    with pytest.raises(rs.StudioError, match="Only 0 labeled pairs with a preference"):
        rs.train_reward(empty_workspace)
    with pytest.raises(rs.StudioError, match="unknown preset 'huge'; choose one of"):
        rs.train_rloo(empty_workspace, preset="huge")
    with pytest.raises(rs.StudioError, match="unknown key lr"):
        rs.train_rloo(empty_workspace, lr=1)
    assert empty_workspace.runs() == []
