"""`make test`'s two workers keep a group together (tests/conftest.py): a module's tests, and the modules that share
a running app, run on one worker, so that each shared app starts once. Checked on a real two-worker run of two
modules: each module's tests all on one worker."""
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_each_group_runs_on_one_worker():
    out = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v", "-p",
                          "no:cacheprovider", "tests/test_config.py", "tests/test_tail.py"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:]
    ran = re.findall(r"^\[(gw\d)\] .*?(?:PASSED|FAILED|SKIPPED) (tests/\w+\.py)::", out.stdout, re.M)
    workers: dict[str, set] = {}
    for worker, module in ran:
        workers.setdefault(module, set()).add(worker)
    assert set(workers) == {"tests/test_config.py", "tests/test_tail.py"}
    assert all(len(w) == 1 for w in workers.values()), workers
