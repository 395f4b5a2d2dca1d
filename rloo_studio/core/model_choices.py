"""The models a user can pick without typing: the bundled ones (the demo model first), then local folders and
Hugging Face cache entries that hold a causal LM, each with its size and whether it ships its own code.

Discovery only reads what is on disk (config.json, file sizes, huggingface_hub's scan_cache_dir); it
never downloads. No gradio, no torch."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from rloo_studio.core.errors import ModelLoadError
from rloo_studio.core.paths import ASSETS, DEMO_MODEL, DEMO_SLIPPY_MODEL

CAUSAL_SUFFIXES = ("ForCausalLM", "LMHeadModel")
SKIP_DIRS = {"runs", "checkpoints", "uploads", "node_modules", "__pycache__", "blobs", "snapshots", "refs"}
MAX_DEPTH = 3  # folders below a root that are looked into (workspace/exports/<model> is depth 2)
MAX_DIRS = 2000  # folders visited per root at most: a huge tree is not searched to the end


@dataclass(frozen=True)
class ModelChoice:
    value: str  # what goes into the config: a folder path or a hub id
    name: str  # what the list shows
    size: int  # bytes on disk
    where: str  # "bundled", "folder" or "HF cache"
    ships_code: bool  # auto_map in its config: it needs trust_remote_code
    architecture: str = ""

    @property
    def label(self) -> str:
        return " · ".join([self.name, human_size(self.size), self.where]
                          + (["ships its own code"] if self.ships_code else []))


def human_size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


def _read_json(path: Path) -> dict:
    try:
        d = json.loads(path.read_text())
        return d if isinstance(d, dict) else {}
    except (OSError, ValueError, UnicodeDecodeError):
        return {}


def causal_architecture(folder: Path) -> str | None:
    """The causal-LM class a model folder's config.json names ('' for one known only through auto_map),
    None when the folder holds no causal LM (a classifier, an encoder, an adapter, no config)."""
    cfg = _read_json(folder / "config.json")
    for arch in cfg.get("architectures") or []:
        if isinstance(arch, str) and arch.endswith(CAUSAL_SUFFIXES):
            return arch
    auto = cfg.get("auto_map")
    if isinstance(auto, dict) and "AutoModelForCausalLM" in auto:
        return ""
    return None


def ships_code(folder: Path) -> bool:
    """auto_map in config.json or tokenizer_config.json (as core.models.ships_code reads it)."""
    return any(_read_json(folder / n).get("auto_map") for n in ("config.json", "tokenizer_config.json"))


def folder_size(folder: Path) -> int:
    total = 0
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for f in files:
            try:
                total += (Path(root) / f).stat().st_size
            except OSError:
                pass
    return total


def _choice(folder: Path, value: str, name: str, where: str) -> ModelChoice | None:
    arch = causal_architecture(folder)
    if arch is None:
        return None
    return ModelChoice(value, name, folder_size(folder), where, ships_code(folder), arch)


def demo_choice() -> ModelChoice:
    return ModelChoice(str(DEMO_MODEL), "demo model", folder_size(DEMO_MODEL), "bundled",
                       False, causal_architecture(DEMO_MODEL) or "")


def bundled_choices() -> list[ModelChoice]:
    """The demo model, then the demo's slipping policy (the process reward model's demo) where it is bundled."""
    slippy = [ModelChoice(str(DEMO_SLIPPY_MODEL), "demo slipping policy", folder_size(DEMO_SLIPPY_MODEL), "bundled",
                          False, causal_architecture(DEMO_SLIPPY_MODEL) or "")] \
        if (DEMO_SLIPPY_MODEL / "config.json").exists() else []
    return [demo_choice(), *slippy]


def local_folders(roots: list[Path]) -> list[ModelChoice]:
    """Causal-LM folders under `roots` (each root itself and up to MAX_DEPTH levels down; hidden folders,
    run folders and caches skipped), by name."""
    out, seen = [], {Path(DEMO_MODEL).resolve(), Path(DEMO_SLIPPY_MODEL).resolve()}
    for root in roots:
        root = Path(root).expanduser()
        if not root.is_dir():
            continue
        visited, stack = 0, [(root, 0)]
        while stack and visited < MAX_DIRS:
            folder, depth = stack.pop()
            visited += 1
            real = folder.resolve()
            if real in seen:
                continue
            seen.add(real)
            if (folder / "config.json").is_file():
                name = str(folder.relative_to(root)) if folder != root else folder.name
                c = _choice(folder, str(real), f"{root.name}/{name}" if folder != root else name, "folder")
                if c:
                    out.append(c)
                    continue  # a model's own sub-folders hold no other model
            if depth < MAX_DEPTH:
                try:
                    subs = sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")
                                  and p.name not in SKIP_DIRS)
                except OSError:
                    continue
                stack.extend((p, depth + 1) for p in reversed(subs))
    return sorted(out, key=lambda c: c.name.lower())


def cache_entries(cache_dir: str | Path | None = None) -> list[ModelChoice]:
    """Models in the Hugging Face cache whose newest snapshot holds a causal LM (huggingface_hub's
    scan_cache_dir: reads the cache folder, never the network), by repo id."""
    from huggingface_hub import scan_cache_dir

    try:
        info = scan_cache_dir(cache_dir)
    except Exception:  # noqa: BLE001 — no cache folder yet, or one that cannot be read: nothing cached
        return []
    out = []
    for repo in info.repos:
        if repo.repo_type != "model" or not repo.revisions:
            continue
        rev = max(repo.revisions, key=lambda r: ("main" in r.refs, r.last_modified))
        snap = Path(rev.snapshot_path)
        arch = causal_architecture(snap)
        if arch is None:
            continue
        out.append(ModelChoice(repo.repo_id, repo.repo_id, int(repo.size_on_disk), "HF cache", ships_code(snap), arch))
    return sorted(out, key=lambda c: c.name.lower())


def default_roots(workspace_root: str | Path | None = None) -> list[Path]:
    """Where local models are looked for: the folders the app may read (workspace, assets, --allow-path;
    core.paths.ALLOWED_ROOTS without the HF cache, which cache_entries reads), else the workspace."""
    from huggingface_hub.constants import HF_HUB_CACHE

    from rloo_studio.core import paths

    cache = Path(HF_HUB_CACHE).expanduser().resolve()
    roots = [Path(r) for r in (paths.ALLOWED_ROOTS or []) if Path(r).resolve() != cache]
    if workspace_root is not None and Path(workspace_root).resolve() not in [r.resolve() for r in roots]:
        roots.insert(0, Path(workspace_root))
    return [r for r in roots if r.resolve() != Path(ASSETS).resolve()]  # the demo model is listed first anyway


def model_choices(workspace_root: str | Path | None = None, roots: list[Path] | None = None,
                  cache_dir: str | Path | None = None) -> list[ModelChoice]:
    """The bundled models (the demo model first), then local causal-LM folders, then cached hub models."""
    roots = default_roots(workspace_root) if roots is None else roots
    return [*bundled_choices(), *local_folders(roots), *cache_entries(cache_dir)]


def dropdown_choices(workspace_root: str | Path | None = None, **kw) -> list[tuple[str, str]]:
    """(label, value) pairs for a dropdown."""
    return [(c.label, c.value) for c in model_choices(workspace_root, **kw)]


def availability(value: str) -> str | None:
    """None when `value` names a model this machine has (a folder, a cached hub id); else the plain
    reason it cannot be loaded (not cached: download it first), said before anything starts."""
    from rloo_studio.core.models import resolve

    try:
        resolve(value)
    except ModelLoadError as exc:
        return str(exc)
    return None
