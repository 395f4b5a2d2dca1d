"""A hybrid Qwen3 model (the real Qwen3 tokenizer and Unsloth's hybrid `qwen3` template, tests/qwen3_fixture.py)
through the page: picked in the RLOO tab's model field, enable_thinking switched off, trained for two steps; the
run trains as set, and what the policy read for a completion is the template's empty think block, opened and
closed once in the prompt."""
import re

import pytest
import yaml
from playwright.sync_api import expect

from browser import fill, open_page, running_app, screenshot
from rloo_studio.core.workspace import Workspace

LONG = 900_000
THINK, END_THINK = 151667, 151668  # <think>, </think> in the real Qwen3 vocabulary


@pytest.fixture(scope="module")
def app(tmp_path_factory, qwen3_hybrid_model):
    with running_app(tmp_path_factory.mktemp("qwen3-ui") / "ws", "--allow-path", str(qwen3_hybrid_model)) as a:
        a.model = qwen3_hybrid_model
        yield a


def test_rloo_on_a_hybrid_qwen3_with_thinking_off(app):
    ws = Workspace(app.ws_dir)
    with open_page(app.url) as page:
        page.get_by_role("tab", name="RLOO").click()
        fill(page, "rloo-model", app.model)
        page.locator("#rloo-backend input").click()
        page.get_by_role("option", name="transformers", exact=True).click()
        page.locator("#rloo-enable-thinking input[type=checkbox]").uncheck()
        page.get_by_text("Checkpoints and before/after").click()
        fill(page, "rloo-eval-prompts", 0)
        fill(page, "rloo-num-generations", 2)
        fill(page, "rloo-per-device-train-batch-size", 4)
        fill(page, "rloo-max-completion-length", 16)
        fill(page, "rloo-max-steps", 2)
        page.locator("#rloo-launch").click()
        expect(page.locator("#rloo-check")).to_contain_text("Launched rloo-", timeout=LONG)
        (run,) = ws.runs("rloo")
        expect(page.locator("#rloo-status")).to_contain_text(re.compile(run["id"] + ".*completed"), timeout=LONG)
        cfg = yaml.safe_load((ws.run_dir(run["id"]) / "config.yaml").read_text())
        assert cfg["enable_thinking"] is False and cfg["model"] == str(app.model) and cfg["backend"] == "transformers"

        rows = page.locator("#rloo-completions").get_by_role("row").filter(has_text=re.compile(r"\d+ · k=\d+"))
        expect(rows.first).to_be_visible(timeout=LONG)
        rows.first.get_by_role("gridcell").nth(2).click()  # a row's prompt cell picks that completion
        view = page.locator("#rloo-model-view [data-testid=model-view]")
        expect(view).to_have_count(1, timeout=LONG)
        # the hybrid template with enable_thinking=False ends the prompt with an empty, closed think block
        expect(view.locator(".mv-text")).to_contain_text("<|im_start|>assistant\n<think>\n\n</think>\n\n")
        opened = view.locator(f".mv-tok[data-id='{THINK}']")
        expect(opened).to_have_count(1)
        assert opened.get_attribute("title").endswith(" · prompt")
        closed = view.locator(f".mv-tok[data-id='{END_THINK}']")
        assert closed.count() >= 1 and closed.first.get_attribute("title").endswith(" · prompt")
        view.scroll_into_view_if_needed()
        screenshot(page, "qwen3-rloo-no-thinking")
