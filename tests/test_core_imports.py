import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "rloo_studio"
# every module of the package outside ui/ (and the entry point), found on disk so a new one is never missed
CORE = sorted(
    ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
    for p in PKG.rglob("*.py") if "ui" not in p.relative_to(PKG).parts and p.name != "__main__.py"
)


@pytest.fixture(scope="module")
def fresh_process() -> list[str]:
    """One new process (the imports of a second one would cost ~10 s): it imports the bootstrap and says whether
    Unsloth came in (it should not: it waits for transformers); imports transformers and says whether Unsloth came
    in first and works; then imports every core module and says whether gradio came in."""
    code = ("import sys\nfrom rloo_studio.core import bootstrap\nprint('unsloth' in sys.modules)\n"
            "import transformers\nnames = list(sys.modules)\n"
            "print(bootstrap.UNSLOTH_VERSION is not None, names.index('unsloth') < names.index('transformers'))\n"
            + "".join(f"import {m}\n" for m in CORE) + "print('gradio' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip().splitlines()[-3:]


def test_core_never_imports_gradio(fresh_process):
    assert fresh_process[2] == "False"


def test_bootstrap_imports_unsloth_just_before_transformers(fresh_process):
    assert fresh_process[:2] == ["False", "True True"]
