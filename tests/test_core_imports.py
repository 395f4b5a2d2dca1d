import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE = [
    "rloo_studio", "rloo_studio.workspace", "rloo_studio.thinking", "rloo_studio.models", "rloo_studio.rewards",
    "rloo_studio.sampling", "rloo_studio.labels", "rloo_studio.prompts", "rloo_studio.config", "rloo_studio.cli",
    "rloo_studio.studio", "rloo_studio.evaluate", "rloo_studio.jobs.runner", "rloo_studio.jobs.rloo",
    "rloo_studio.jobs.reward", "rloo_studio.jobs.callback", "rloo_studio.scoring", "rloo_studio.importing",
    "rloo_studio.exporting", "rloo_studio.generate", "rloo_studio.memory", "rloo_studio.runs", "rloo_studio.repro",
    "rloo_studio.standalone", "rloo_studio.launch", "rloo_studio.reward_view", "rloo_studio.rloo_view",
]


def test_core_never_imports_gradio():
    code = "import sys\n" + "".join(f"import {m}\n" for m in CORE) + "print('gradio' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "False"


def test_bootstrap_imports_unsloth_before_transformers():
    code = (
        "import sys\nfrom rloo_studio import bootstrap\n"
        "print(bootstrap.UNSLOTH_VERSION is not None, 'unsloth' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.stdout.strip().splitlines()[-1] == "True True", out.stderr[-2000:]
