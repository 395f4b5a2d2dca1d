"""Playground tab in the real app, driven in Chromium: after an RLOO run, a typed prompt is answered by the
base model and by base + adapter, side by side, with different text, reasoning apart, rewards shown."""

import pytest
from browser import open_page, screenshot
from playwright.sync_api import expect
from rloo_run_fixture import PLAY_PROMPT


@pytest.fixture(scope="module")
def app(trained_app):
    return trained_app


def test_base_and_adapter_answer_side_by_side_with_different_text(app):
    with open_page(app.url) as page:
        page.get_by_role("tab", name="Playground").click()
        expect(page.locator("#playground-run input")).to_have_value(f"{app.run_id} (completed)", timeout=30_000)
        page.locator("#playground-prompt textarea").fill(PLAY_PROMPT)
        page.locator("#playground-go").click()
        base, adapter = page.locator("#playground-base"), page.locator("#playground-adapter")
        expect(base).to_contain_text("done", timeout=120_000)
        expect(adapter).to_contain_text("weighted total", timeout=120_000)
        expect(base).to_contain_text("weighted total")
        for side in (base, adapter):
            expect(side.locator(".pg-think")).to_contain_text("thinking")
            expect(side).to_contain_text("correctness")
            assert "</think>" not in side.locator(".pg-answer").inner_text()
        b, a = base.locator(".pg-answer").inner_text(), adapter.locator(".pg-answer").inner_text()
        assert b and a and (b != a
                            or base.locator(".pg-think").inner_text() != adapter.locator(".pg-think").inner_text())
        expect(page.locator("#playground-msg")).to_have_text("")
        screenshot(page, "playground")
        # an empty prompt gets a plain message, and the page keeps working
        page.locator("#playground-prompt textarea").fill("")
        page.locator("#playground-go").click()
        expect(page.locator("#playground-msg")).to_contain_text("Type a prompt first", timeout=30_000)
        assert "Error" not in page.locator("body").inner_text()
