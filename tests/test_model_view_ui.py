"""What the model sees and bring your own model, in the real app driven in Chromium: the model fields list
the demo model first and a model of the Hugging Face cache (a fake cache given to the app); a GPU preset
whose model is not cached says so at once; Inspect and the RLOO completions show the exact templated text
with each token's id on hover."""
import re

import pytest
from browser import fill, open_page, screenshot
from playwright.sync_api import expect
from test_model_choices import HUB_ID

LONG = 120_000
HUB_RE = HUB_ID.replace("/", r"\/")  # Playwright hands a regex to the page as /source/: escape the slash


@pytest.fixture(scope="module")
def app(trained_app):
    return trained_app  # its flags: --allow-path to a tiny Qwen3, a fake HF cache (tests/conftest.py)


def test_model_dropdowns_list_the_demo_first_and_the_cache(app):
    with open_page(app.url) as page:
        page.get_by_role("tab", name="RLOO").click()
        page.locator("#rloo-model input").click()
        options = page.get_by_role("option")
        expect(options.first).to_contain_text("demo model · ", timeout=LONG)
        expect(page.get_by_role("option", name=re.compile(f"^{HUB_RE} · .* MB · HF cache"))).to_be_visible()
        screenshot(page, "model-dropdown")
        page.get_by_role("option", name=re.compile(f"^{HUB_RE} ")).click()
        page.locator("#rloo-validate").click()  # a cached hub id passes the checks like a folder
        expect(page.locator("#rloo-check")).to_contain_text("Settings are valid", timeout=LONG)
        # a GPU preset whose model is not cached says so before anything is pressed
        page.locator("#rloo-preset input").click()
        page.get_by_role("option", name="gpu-24gb").click()
        expect(page.locator("#rloo-check")).to_contain_text("is not in the local Hugging Face cache", timeout=LONG)
        page.get_by_role("tab", name="Reward model").click()
        page.locator("#reward-model input").click()
        expect(page.get_by_role("option").first).to_contain_text("demo model · ", timeout=LONG)
        # every other model field says it too, as soon as such a model is typed (here: Generate, Label tab)
        page.get_by_role("tab", name="Label").click()
        page.get_by_text("Generate candidates").first.click()
        box = page.locator("#lbl-gen-model input")
        box.fill("Qwen/Qwen3-4B-Thinking-2507")
        box.press("Tab")
        expect(page.get_by_text(re.compile("is not in the local Hugging Face cache")).filter(visible=True).first
               ).to_be_visible(timeout=LONG)


def test_inspect_shows_what_the_policy_and_the_reward_model_read(app):
    with open_page(app.url) as page:
        page.get_by_role("tab", name="Inspect").click()
        page.locator("#inspect-score").click()
        views = page.locator("#inspect-model-view [data-testid=model-view]")
        expect(views).to_have_count(2, timeout=LONG)
        expect(views.nth(0)).to_contain_text("Policy")
        expect(views.nth(1)).to_contain_text("Reward model")
        rm = views.nth(1)
        expect(rm.locator(".mv-text")).to_contain_text("<|im_start|>user\nAdd 820 and 634.<|im_end|>")
        special = rm.locator(".mv-special")
        expect(special.first).to_have_text("<|im_start|>")
        assert re.fullmatch(r"token 0 · id \d+ · '<\|im_start\|>' · prompt", special.first.get_attribute("title"))
        think = rm.locator(".mv-special", has_text=re.compile(r"^<think>$"))
        expect(think).to_have_count(1)  # the response's own tag; the demo template opens none
        assert think.get_attribute("title").split(" · ")[3] == "response"
        special.first.hover()
        page.wait_for_timeout(300)
        screenshot(page, "inspect-model-view")


def test_rloo_completion_picker_shows_the_templated_text(app):
    with open_page(app.url) as page:
        page.get_by_role("tab", name="RLOO").click()
        table = page.locator("#rloo-completions")
        rows = table.get_by_role("row").filter(has_text=re.compile(r"\d+ · k=\d+"))
        expect(rows.first).to_be_visible(timeout=LONG)
        rows.nth(1).get_by_role("gridcell").nth(2).click()  # a row's prompt cell
        pick = page.locator("#rloo-pick input")
        expect(pick).to_have_value(re.compile(r"^step \d+ · group \d+ · #\d+$"), timeout=LONG)
        view = page.locator("#rloo-model-view [data-testid=model-view]")
        expect(view).to_have_count(1, timeout=LONG)  # the run has no reward-model reward: the policy only
        expect(view).to_contain_text("Policy")
        toks = view.locator(".mv-tok")
        assert toks.count() > 10
        assert re.fullmatch(r"token 0 · id \d+ · '<\|im_start\|>' · prompt", toks.first.get_attribute("title"))
        assert view.locator(".mv-response").count() > 0
        view.scroll_into_view_if_needed()
        screenshot(page, "rloo-model-view")


def test_inspect_on_a_qwen3_thinking_model_shows_one_think_token(app):
    """The real Qwen3 tokenizer and Qwen3-Thinking template (tests/qwen3_fixture.py): the template opens
    <think> (151667) in the prompt, so a response written as Qwen3 writes it, or with its own leading tag,
    shows the tag exactly once, in the prompt."""
    with open_page(app.url) as page:
        page.get_by_role("tab", name="Inspect").click()
        fill(page, "inspect-base", app.qwen3)
        page.locator("#inspect-response textarea").fill("<think>\n4+0+0=4\n\n2+3+0=5\n</think>\n\nThe answer is 54.")
        page.locator("#inspect-score").click()
        views = page.locator("#inspect-model-view [data-testid=model-view]")
        expect(views).to_have_count(2, timeout=LONG)
        for k in range(2):  # the policy and the reward model
            think = views.nth(k).locator(".mv-tok[data-id='151667']")
            expect(think).to_have_count(1)
            assert think.get_attribute("title").endswith(" · id 151667 · '<think>' · prompt")
            expect(views.nth(k).locator(".mv-tok[data-id='151668']")).to_have_count(1)
        expect(views.nth(1).locator(".mv-text")).to_contain_text("<|im_start|>assistant\n<think>\n4+0+0=4")
        screenshot(page, "inspect-model-view-qwen3")
