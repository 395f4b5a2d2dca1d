"""The studio from Python (rloo_studio/python_api.py): the same functions as the tabs and the CLI. Data work loads no
torch; a refused call says what the tab says. Jobs started from Python, waited for, with their metrics, charts,
completions and before/after: tests/test_quickstart_notebook.py, through the example notebook."""
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


def test_a_refused_call_raises_the_tabs_words(empty_workspace):
    import rloo_studio as rs

    with pytest.raises(rs.StudioError, match="Only 0 labeled pairs with a preference"):
        rs.train_reward(empty_workspace)
    with pytest.raises(rs.StudioError, match="unknown preset 'huge'; choose one of"):
        rs.train_rloo(empty_workspace, preset="huge")
    with pytest.raises(rs.StudioError, match="unknown key lr"):
        rs.train_rloo(empty_workspace, lr=1)
    assert empty_workspace.runs() == []
