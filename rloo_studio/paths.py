"""Fixed locations inside the repository."""
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ASSETS = REPO / "assets"
DEMO_MODEL = ASSETS / "demo-model"
DEMO_DATA = ASSETS / "demo-data"
DEFAULT_WORKSPACE = REPO / "workspace"  # git-ignored; seeded from assets on first start
