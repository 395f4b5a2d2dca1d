"""Fixed locations inside the repository, and the check of a path a person typed."""
from pathlib import Path

from rloo_studio.core.errors import DataError

PACKAGE = Path(__file__).resolve().parents[1]  # rloo_studio/, installed or in the repository
REPO = PACKAGE.parent  # the repository, in a source checkout (git commit of a run: runs/record.py)
ASSETS = PACKAGE / "assets"  # package data: found the same way after `pip install .` and `pip install -e .`
DEMO_MODEL = ASSETS / "demo-model"
DEMO_DATA = ASSETS / "demo-data"
DEMO_SLIPPY_MODEL = ASSETS / "demo-slippy-model"  # the demo policy that slips in its steps (scripts/build_slippy.py)
MODEL_SHAPES = ASSETS / "model-shapes"  # <org>/<name>/config.json of the models presets name: plans before a download
DEFAULT_WORKSPACE = Path("workspace").resolve()  # ./workspace where the studio starts (in the repository:
# git-ignored); seeded from the assets on first start

MAX_NAME = 200  # bytes in one file or folder name: file systems refuse past 255, and tags such as ".train" are added
MAX_PATH = 1024


def typed_path(text, what: str = "path") -> Path:
    """A path a person typed (an export file or folder), or a DataError that says what to change, before the
    operating system is asked anything about it (a name past 255 bytes makes even `exists()` raise)."""
    t = str(text or "").strip()
    if not t:
        raise DataError(f"No {what} given: type one.")
    shown = t if len(t) <= 60 else t[:60] + f"… ({len(t)} characters)"
    if "\x00" in t:
        raise DataError(f"The {what} {shown!r} contains a NUL character: type it again without it.")
    longest = max((len(part.encode()) for part in Path(t).parts), default=0)
    if longest > MAX_NAME or len(t.encode()) > MAX_PATH:
        raise DataError(f"The {what} {shown!r} is too long: each file or folder name may have at most {MAX_NAME} "
                        f"characters (this one has {longest}) and the whole path {MAX_PATH}. Type a shorter name.")
    return Path(t).expanduser()


# Set by the app (not the CLI, whose user owns the machine): the folders a page may read or write on the server's
# disk (the workspace, the studio's assets, --allow-path, the Hugging Face cache). None: no restriction.
ALLOWED_ROOTS: list[Path] | None = None


def restrict_to(roots: list[str | Path]) -> None:
    """Limit the paths a page may use to these folders and the Hugging Face cache."""
    from huggingface_hub.constants import HF_HUB_CACHE

    global ALLOWED_ROOTS
    ALLOWED_ROOTS = [Path(r).expanduser().resolve() for r in [*roots, HF_HUB_CACHE]]


def outside_allowed(p: Path) -> str | None:
    """None when p (links followed) lies in a folder the app may use or nothing is restricted; else those folders,
    as a message names them."""
    if ALLOWED_ROOTS is None:
        return None
    real = Path(p).expanduser().resolve()
    if any(real == r or r in real.parents for r in ALLOWED_ROOTS):
        return None
    return ", ".join(str(r) for r in ALLOWED_ROOTS)
