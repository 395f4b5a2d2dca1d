import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_job_config_classes_import_no_torch():
    """Forms, YAML and --help read the config classes: importing them must not load torch or Unsloth (~10 s)."""
    code = ("import sys\nimport rloo_studio.rloo.config, rloo_studio.reward.config, rloo_studio.core.model_options\n"
            "print(sorted(m for m in ('torch', 'unsloth', 'transformers', 'peft', 'trl') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"
