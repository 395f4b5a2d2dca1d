import pytest

from rloo_studio.core.errors import ConfigError
from rloo_studio.label import store as L
from rloo_studio.label.generate import GenerateConfig, generate_candidates
from rloo_studio.runs.runner import JobRunner


def test_generate_pairs_from_the_demo_model(workspace):
    r = JobRunner(workspace)
    before = L.progress(workspace)["total"]
    rid = r.submit("generate", GenerateConfig(prompt_set="demo-heldout", limit=6, k=3, max_new_tokens=64),
                   generate_candidates)
    assert r.wait(rid, 300) == "completed", r.status(rid)
    made = workspace.query("SELECT COUNT(*) FROM pairs WHERE source=?", (f"generated:{rid}",))[0][0]
    assert made > 0 and L.progress(workspace)["total"] == before + made
    assert r.status(rid)["message"].startswith(f"{made} new pairs from 6 prompts")
    # The new pairs keep the prompt set's answer column and are queued for labeling.
    row = workspace.query("SELECT pr.extra FROM pairs p JOIN prompts pr ON pr.id=p.prompt_id WHERE p.source=?",
                          (f"generated:{rid}",))[0]
    assert '"answer"' in row[0]
    progress = [m for m in r.feed(rid) if "pairs" in m]
    assert progress and progress[-1]["pairs"] == made


def test_generate_typed_prompts_and_validation(workspace):
    r = JobRunner(workspace)
    rid = r.submit("generate", GenerateConfig(prompts=["What is 111 + 222?"], k=4, max_new_tokens=48),
                   generate_candidates)
    assert r.wait(rid, 300) == "completed"
    with pytest.raises(ConfigError, match="k must be between 2 and 8"):
        GenerateConfig(k=1).validate()
    bad = r.submit("generate", GenerateConfig(model="/no/such/model"), generate_candidates)
    assert r.wait(bad, 60) == "failed"
    assert "No model at /no/such/model" in r.status(bad)["message"]
