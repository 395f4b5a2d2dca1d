import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "rloo_studio"
# every module of the package outside ui/ (and the entry point), found on disk so a new one is never missed
CORE = sorted(
    ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
    for p in PKG.rglob("*.py") if "ui" not in p.relative_to(PKG).parts and p.name != "__main__.py"
)


def test_core_never_imports_gradio():
    code = "import sys\n" + "".join(f"import {m}\n" for m in CORE) + "print('gradio' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "False"


def test_bootstrap_imports_unsloth_before_transformers():
    code = (
        "import sys\nfrom rloo_studio.core import bootstrap\n"
        "print(bootstrap.UNSLOTH_VERSION is not None, 'unsloth' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.stdout.strip().splitlines()[-1] == "True True", out.stderr[-2000:]
