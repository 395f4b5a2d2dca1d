"""Nonsense settings through the RLOO and reward tabs: a clear message on the page, no run started."""
import pytest
from browser import fill, open_page, reveal
from playwright.sync_api import expect

from rloo_studio.core.workspace import Workspace


@pytest.fixture(scope="module")
def app(demo_app):
    return demo_app


def run_ids(app) -> set[str]:
    return {r["id"] for r in Workspace(app.ws_dir).runs()}


CASES = [
    ("rloo-learning-rate", "-1", "learning_rate must be positive"),
    ("rloo-max-completion-length", "0", "max_completion_length must be"),
    ("rloo-model", "{ws}/models/none", "No model at {ws}/models/none"),  # inside the workspace, missing
    ("rloo-model", "/etc", "is outside the folders this app may read"),
]


def test_rloo_tab_refuses_nonsense_and_keeps_serving(app):
    before = run_ids(app)
    with open_page(app.url) as page:
        page.get_by_role("tab", name="RLOO").click()
        expect(page.locator("#rloo-status")).to_contain_text("No RLOO run yet", timeout=120000)
        for elem, bad, message in CASES:
            bad, message = bad.format(ws=app.ws_dir), message.format(ws=app.ws_dir)
            good = page.locator(f"#{elem} input").first.input_value()
            fill(page, elem, bad)
            page.locator("#rloo-launch").click()
            expect(page.locator("#rloo-check")).to_contain_text(message, timeout=60000)
            fill(page, elem, good)
        page.locator("#rloo-validate").click()
        expect(page.locator("#rloo-check")).to_contain_text("Settings are valid", timeout=60000)
        # the reward tab: max length 0
        page.get_by_role("tab", name="Reward model").click()
        fill(page, "reward-max-length", 0)
        page.locator("#reward-launch").click()
        expect(page.locator("#reward-check")).to_contain_text("max_length must be", timeout=60000)
    assert run_ids(app) == before  # no run started


def test_model_code_runs_only_after_the_trust_box_is_ticked(app):
    from custom_model import make_custom_code_model

    folder = app.ws_dir / "models" / "custom"
    marker = make_custom_code_model(folder)
    before = run_ids(app)
    with open_page(app.url) as page:
        page.get_by_role("tab", name="RLOO").click()
        reveal(page, "rloo-trust-remote-code")
        trust = page.locator("#rloo-trust-remote-code input[type=checkbox]")
        expect(trust).not_to_be_checked(timeout=120000)  # off unless the user ticks it
        fill(page, "rloo-model", folder)
        page.locator("#rloo-launch").click()
        expect(page.locator("#rloo-check")).to_contain_text("ships its own Python code", timeout=60000)
        trust.check()
        expect(page.locator("#rloo-check")).to_contain_text("trust_remote_code is on", timeout=60000)
        page.locator("#rloo-validate").click()
        expect(page.locator("#rloo-check")).to_contain_text("Settings are valid", timeout=60000)
        expect(page.locator("#rloo-check")).to_contain_text("trust_remote_code is on", timeout=60000)
        # the reward tab: the same box, off, and its warning in the pre-flight once ticked
        page.get_by_role("tab", name="Reward model").click()
        reveal(page, "reward-trust-remote-code")
        rtrust = page.locator("#reward-trust-remote-code input[type=checkbox]")
        expect(rtrust).not_to_be_checked()
        rtrust.check()
        expect(page.locator("#reward-preflight")).to_contain_text("trust_remote_code is on", timeout=60000)
    assert not marker.exists()  # checking settings never ran the model's code
    assert run_ids(app) == before
