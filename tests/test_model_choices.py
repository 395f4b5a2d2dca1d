"""Bring your own model (core/model_choices.py): the demo model first, then local folders and Hugging Face
cache entries that hold a causal LM, with their size and whether they ship their own code. A fake hub
cache (the real layout: blobs, refs, snapshots of symlinks) holds the demo model saved under a hub id."""
import hashlib
import json
import shutil
from pathlib import Path

import pytest

from rloo_studio.core.paths import DEMO_MODEL

HUB_ID = "acme/tiny-thinker"


def cache_model(cache: Path, repo_id: str, folder: Path, config: dict | None = None, repo_type: str = "models") -> int:
    """Put `folder`'s files into a hub cache as huggingface_hub lays them out; returns the blobs' bytes."""
    repo = cache / f"{repo_type}--{repo_id.replace('/', '--')}"
    commit = hashlib.sha1(repo_id.encode()).hexdigest()
    snap = repo / "snapshots" / commit
    (repo / "blobs").mkdir(parents=True)
    snap.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    total = 0
    for f in sorted(folder.iterdir()):
        if not f.is_file():
            continue
        data = json.dumps(config).encode() if (config is not None and f.name == "config.json") else f.read_bytes()
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        (snap / f.name).symlink_to(Path("../../blobs") / blob.name)
        total += len(data)
    return total


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """A hub cache holding the demo model as acme/tiny-thinker, an encoder and a dataset; used as the cache."""
    import huggingface_hub.constants as C

    cache = tmp_path / "hub"
    size = cache_model(cache, HUB_ID, DEMO_MODEL)
    cfg = json.loads((DEMO_MODEL / "config.json").read_text())
    cache_model(cache, "acme/encoder", DEMO_MODEL, {**cfg, "architectures": ["BertModel"]})
    cache_model(cache, "acme/pairs", DEMO_MODEL, repo_type="datasets")
    monkeypatch.setattr(C, "HF_HUB_CACHE", str(cache))
    return cache, size


def test_discovery_lists_demo_first_then_folders_then_the_cache(hub, tmp_path):
    from rloo_studio.core.model_choices import human_size, model_choices

    cache, size = hub
    local = tmp_path / "models"
    shutil.copytree(DEMO_MODEL, local / "my-policy")
    coded = local / "nested" / "coded"
    shutil.copytree(DEMO_MODEL, coded)
    cfg = json.loads((coded / "config.json").read_text())
    (coded / "config.json").write_text(json.dumps({**cfg, "auto_map": {"AutoModelForCausalLM": "m.MyLM"}}))
    (local / "not-a-model").mkdir()
    (local / "not-a-model" / "config.json").write_text("{broken")

    got = model_choices(roots=[local], cache_dir=cache)
    assert got[0].value == str(DEMO_MODEL) and got[0].name == "demo model" and got[0].where == "bundled"
    assert got[1].name == "demo slipping policy" and got[1].where == "bundled"
    assert [c.name for c in got[2:]] == ["models/my-policy", "models/nested/coded", HUB_ID]  # no encoder, no dataset
    mine, coded_c, cached = got[2:]
    assert mine.value == str((local / "my-policy").resolve()) and not mine.ships_code
    assert coded_c.ships_code and "ships its own code" in coded_c.label
    assert cached.value == HUB_ID and cached.where == "HF cache" and cached.size == size > 1_000_000
    assert cached.architecture == "Qwen3ForCausalLM"
    assert cached.label == f"{HUB_ID} · {human_size(size)} · HF cache"


def test_a_cached_entry_is_usable_and_an_uncached_one_is_said(hub):
    from rloo_studio.core.model_choices import availability
    from rloo_studio.inspect.model_input import tokenizer

    assert availability(HUB_ID) is None
    assert tokenizer(HUB_ID).convert_tokens_to_ids("</think>") == 321  # loads from the cache, no download
    said = availability("Qwen/Qwen3-4B-Thinking-2507")
    assert "not in the local Hugging Face cache" in said and "hf download Qwen/Qwen3-4B-Thinking-2507" in said


def test_no_cache_folder_lists_the_demo_model(tmp_path):
    from rloo_studio.core.model_choices import model_choices

    got = model_choices(roots=[tmp_path / "nothing"], cache_dir=tmp_path / "no-cache")
    assert [c.name for c in got] == ["demo model", "demo slipping policy"]
