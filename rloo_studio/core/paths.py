"""Fixed locations inside the repository."""
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]  # rloo_studio/core/paths.py -> the repository
ASSETS = REPO / "assets"
DEMO_MODEL = ASSETS / "demo-model"
DEMO_DATA = ASSETS / "demo-data"
DEFAULT_WORKSPACE = REPO / "workspace"  # git-ignored; seeded from assets on first start
