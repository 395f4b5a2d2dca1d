"""Export for serving from the Runs tab, in the real app driven in Chromium: a trained RLOO run exported merged
is a folder that plain transformers loads and that generates the same greedy tokens as the run's adapter on top
of its base; a busy folder, or one outside the folders the app may use, is refused in plain words and nothing
is written."""
from pathlib import Path

import pytest
from browser import fill, open_page, screenshot
from playwright.sync_api import expect
from test_export_model import _same_as_adapter_on_base


@pytest.fixture(scope="module")
def app(trained_app):
    return trained_app


def _pick_run(page, rid):
    box = page.locator("#runs-pick input")
    box.fill(rid)
    page.get_by_role("option", name=rid, exact=True).click()
    expect(page.locator("#runs-pick")).to_contain_text(rid, timeout=30_000)
    page.keyboard.press("Escape")


def test_merged_export_from_the_runs_tab_loads_with_transformers_and_answers_as_the_adapter(app, tmp_path):
    exports = Path(app.ws_dir) / "exports"
    busy = exports / "busy"
    busy.mkdir()
    (busy / "keep.txt").write_text("mine")
    with open_page(app.url) as page:
        page.get_by_role("tab", name="Runs").click()
        _pick_run(page, app.run_id)
        page.get_by_role("button", name="Export model: the first selected RLOO run's policy, for serving").click()
        expect(page.locator("#runs-export-merged input")).to_be_checked()
        msg = page.locator("#runs-export-msg")
        # a folder that holds files, or one outside the folders the app may use: refused in plain words,
        # nothing written, no job started
        fill(page, "runs-export-out", str(busy))
        page.locator("#runs-export-go").click()
        expect(msg).to_contain_text("already exists and is not empty", timeout=30_000)
        fill(page, "runs-export-out", str(tmp_path / "elsewhere"))
        page.locator("#runs-export-go").click()
        expect(msg).to_contain_text("is outside the folders this app may write to", timeout=30_000)
        assert [p.name for p in busy.iterdir()] == ["keep.txt"] and not any(tmp_path.iterdir())
        # a bare name: a new folder under exports/; the export runs as a job, then shows the folder it wrote
        fill(page, "runs-export-out", "served")
        page.locator("#runs-export-go").click()
        expect(msg).to_contain_text("Exported run " + app.run_id, timeout=600_000)
        out = (exports / "served").resolve()
        expect(msg).to_contain_text(str(out))
        expect(msg).to_contain_text("merged model")
        # the export is a run of its own in the table, with its result
        expect(page.locator("#runs-table")).to_contain_text("export-", timeout=30_000)
        screenshot(page, "runs-export-merged")
        assert "Traceback" not in page.locator("body").inner_text()
    assert (out / "model.safetensors").exists() and not any(p.name.startswith("adapter") for p in out.iterdir())
    _same_as_adapter_on_base(out, Path(app.ws_dir) / "runs" / app.run_id / "adapter")
