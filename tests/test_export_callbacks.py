"""The Runs tab's export action refuses, in plain words and before any job starts, what cannot be exported: no
run picked, a reward-model run, an RLOO run that saved no adapter or is still running, a busy folder.
(The export itself, from the page, is tests/test_export_ui.py.)"""
from rloo_studio.reward.config import RewardJobConfig
from rloo_studio.rloo.config import RlooJobConfig
from rloo_studio.runs.export_model import default_out, resolve_out
from rloo_studio.runs.runner import prepare_run
from rloo_studio.studio import Studio
from rloo_studio.ui.runs_tab import start_export


def _run(ws, kind, config, status):
    rid = prepare_run(ws, kind, config).run_id
    ws.upsert_run(rid, status=status)
    return rid


def test_what_cannot_be_exported_is_refused_in_plain_words_and_starts_no_job(tmp_path):
    studio = Studio(tmp_path / "ws", seed_demo=False)
    ws = studio.ws
    reward = _run(ws, "reward", RewardJobConfig(), "completed")
    failed = _run(ws, "rloo", RlooJobConfig(), "failed")
    running = _run(ws, "rloo", RlooJobConfig(), "running")
    before = {r["id"] for r in ws.runs()}

    def refused(selected, out=""):
        job, msg = start_export(studio, selected, out, True)
        assert job == "" and "Traceback" not in msg
        return msg

    assert "Select an RLOO run first" in refused([])
    assert f"{reward} is a reward-model run: only an RLOO run's trained policy can be exported" in refused([reward])
    assert f"Run {failed} saved no adapter" in refused([failed])
    assert f"Run {running} is still running: export it once it has finished" in refused([running])
    assert "is not a run id" in refused(["../../etc"])
    assert {r["id"] for r in ws.runs()} == before  # no export job was queued
    assert not any(ws.exports_dir.iterdir())


def test_export_folders_a_bare_name_goes_under_exports_and_the_default_is_never_a_busy_folder(tmp_path):
    studio = Studio(tmp_path / "ws", seed_demo=False)
    ws = studio.ws
    assert resolve_out(ws, "served") == ws.exports_dir / "served"
    assert resolve_out(ws, str(tmp_path / "abs")) == tmp_path / "abs"
    first = default_out(ws, "rloo-1", merged=True)
    assert first == ws.exports_dir / "rloo-1-merged"
    first.mkdir()
    assert default_out(ws, "rloo-1", merged=True) == first  # empty: fine to write into
    (first / "model.safetensors").write_text("taken")
    assert default_out(ws, "rloo-1", merged=True) == ws.exports_dir / "rloo-1-merged-2"
    assert default_out(ws, "rloo-1", merged=False) == ws.exports_dir / "rloo-1-adapter"
