import os
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
if os.environ.get("RLOO_STUDIO_TEST_NO_BOOTSTRAP") != "1":
    from rloo_studio import bootstrap  # noqa: F401  (unsloth before transformers, as in the app)

import pytest  # noqa: E402

from rloo_studio.paths import DEMO_DATA  # noqa: E402


@pytest.fixture
def workspace(tmp_path):
    from rloo_studio.workspace import Workspace

    return Workspace(tmp_path / "ws", seed_demo=True)


@pytest.fixture
def empty_workspace(tmp_path):
    from rloo_studio.workspace import Workspace

    return Workspace(tmp_path / "ws")


@pytest.fixture(scope="session")
def demo_data():
    return DEMO_DATA


@pytest.fixture
def copy_tree(tmp_path):
    def _copy(src, name):
        dst = tmp_path / name
        shutil.copytree(src, dst)
        return dst

    return _copy
