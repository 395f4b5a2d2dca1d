"""A label acknowledged to the caller survives the process being killed at any moment."""
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from rloo_studio.core.workspace import Workspace
from rloo_studio.label.demo_data import open_workspace

ROOT = Path(__file__).resolve().parent.parent

LABELER = """
import sys
sys.path.insert(0, {root!r})
from rloo_studio.label import store as L
from rloo_studio.core.workspace import Workspace
ws = Workspace({ws!r})
name, sess = sys.argv[1], sys.argv[1]
i = 0
while True:
    s = L.next_pair(ws, name, sess, filter="all")
    lid = L.save_label(ws, s, name, sess, ("left", "right", "tie", "skip")[i % 4], comment=f"n{{i}}")
    print("SAVED", lid, flush=True)  # only after the commit returned
    i += 1
"""


def test_labels_survive_sigkill_at_random_moments(tmp_path):
    ws_dir = tmp_path / "ws"
    open_workspace(ws_dir, demo=True)
    script = tmp_path / "labeler.py"
    script.write_text(LABELER.format(root=str(ROOT), ws=str(ws_dir)))
    rng = random.Random(7)
    acknowledged = set()
    kills = 0
    env = {**os.environ, "RLOO_STUDIO_NO_UNSLOTH": "1"}
    for i in range(24):
        p = subprocess.Popen([sys.executable, str(script), f"worker{i % 3}"], stdout=subprocess.PIPE, text=True,
                             env=env)
        first = p.stdout.readline()  # wait until it is labeling, then kill it at a random moment
        assert first.startswith("SAVED"), first
        acknowledged.add(int(first.split()[1]))
        time.sleep(rng.uniform(0.0, 0.3))
        p.send_signal(signal.SIGKILL)
        out, _ = p.communicate()
        kills += 1
        # A line cut by the kill ("SAVED" with no id or no newline) was never fully acknowledged.
        acknowledged |= {int(m.group(1)) for m in re.finditer(r"^SAVED (\d+)\n", out, re.M)}
        # Every acknowledged label is in the database, readable by a fresh connection.
        ws = Workspace(ws_dir)
        stored = {r[0] for r in ws.query("SELECT id FROM labels")}
        missing = acknowledged - stored
        assert not missing, f"after kill {kills}: {sorted(missing)[:5]} acknowledged but not stored"
    assert kills >= 20 and len(acknowledged) > 50
    ws = Workspace(ws_dir)
    assert ws.connect().execute("PRAGMA integrity_check").fetchone()[0] == "ok"
