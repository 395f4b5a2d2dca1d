"""Runs saved before the demo assets moved into the package (until 2026-12-07: <repo>/assets/demo-model) name the demo
models by their old path, in config.yaml and in their adapter's base: those paths still find the bundled models,
and no other path is touched."""
from pathlib import Path

import pytest

from rloo_studio.core.errors import ModelLoadError
from rloo_studio.core.models import resolve
from rloo_studio.core.paths import DEMO_MODEL, DEMO_SLIPPY_MODEL, REPO


@pytest.mark.parametrize("model", [DEMO_MODEL, DEMO_SLIPPY_MODEL])
def test_a_demo_model_by_its_old_path_is_the_bundled_one(model):
    old = REPO / "assets" / model.name
    assert not old.exists() and resolve(str(old)) == str(model.resolve())


def test_other_missing_paths_are_still_refused(tmp_path):
    with pytest.raises(ModelLoadError, match="the folder does not exist"):
        resolve(str(tmp_path / "assets" / "my-model"))
    with pytest.raises(ModelLoadError):
        resolve(str(Path("/nowhere/assets/demo-model-2")))
