"""Plan for a card from the job tabs, on this machine without a GPU: Check settings says, part by part, whether the
form fits a card of the size typed beside it, and Fit to this card puts the nearest settings that fit into the form,
keeping the effective batch (core/memory_fit.py). Read as a person reads the page at 1400x1000."""
import re

from browser import fill, open_page, reveal, screenshot
from playwright.sync_api import expect

LONG = 120_000


def test_a_preset_planned_for_a_smaller_card_is_fitted_to_it(demo_app):
    with open_page(demo_app.url) as page:
        page.get_by_role("tab", name="RLOO").click()
        page.locator("#rloo-preset input").click()
        page.get_by_role("option", name="gpu-24gb", exact=True).click()
        expect(page.locator("#rloo-max-completion-length input")).to_have_value("2048", timeout=LONG)
        fill(page, "rloo-card", 16)
        page.locator("#rloo-validate").click()
        check = page.locator("#rloo-check")
        # the model is not on this machine: said, not judged, since the plan is for another card
        expect(check).to_contain_text("On this machine: Qwen/Qwen3-4B-Thinking-2507 is not in the local Hugging Face",
                                      timeout=LONG)
        expect(check).to_contain_text(re.compile(r"Estimated peak 17\.\d GiB on a 16 GiB card .*: will not fit\."))
        expect(check).to_contain_text("It fits")
        expect(check).to_contain_text(re.compile(r"generation KV cache \d+\.\d\d GiB"))  # the parts
        assert check.locator(".bad").filter(has_text="will not fit").count() == 1  # in the page's red
        screenshot(page, "gpu-plan-check")

        page.locator("#rloo-fit").click()
        expect(check).to_contain_text(re.compile(r"Fitted to a 16 GiB card \(estimated peak \d+\.\d GiB\): "),
                                      timeout=LONG)
        said = check.inner_text()
        reveal(page, "rloo-per-device-train-batch-size")
        batch = int(page.locator("#rloo-per-device-train-batch-size input").input_value())
        accumulation = int(page.locator("#rloo-gradient-accumulation-steps input").input_value())
        assert batch * accumulation == 32, said  # the same completions per step
        if "4-bit" in said:
            reveal(page, "rloo-load-in-4bit")
            expect(page.locator("#rloo-load-in-4bit input")).to_be_checked()
        page.locator("#rloo-validate").click()  # the form as fitted: it fits, in green
        expect(check).to_contain_text(re.compile(r"on a 16 GiB card .*: fits\."), timeout=LONG)
        screenshot(page, "gpu-plan-fitted")
