"""Inspect tab in the real app, driven in Chromium: colored steps + plot; dataset view -> open a disagreement."""
import re
import time

import pytest
from playwright.sync_api import expect

from browser import fill, App, open_page, screenshot

RESPONSE = "<think>\n3+4+0=7\n\n2+5+0=7\n\n1+1+0=2\n\n9+0+0=9\n</think>\n\nThe answer is 277."
NUMBER = re.compile(r"[+-]\d+\.\d{4}")


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    ws_dir = tmp_path_factory.mktemp("inspect") / "ws"
    a = App(ws_dir, "--demo")  # a new workspace starts empty unless asked for the demo
    a.wait_ready()
    a.workspace = ws_dir
    yield a
    a.stop()


@pytest.fixture
def page(app):
    with open_page(app.url) as pg:
        pg.get_by_role("tab", name="Inspect").click()
        yield pg


def test_paste_a_response_and_see_colored_steps_and_plot(page):
    page.locator("#inspect-prompt textarea").fill("Add 123 and 154.")
    page.locator("#inspect-response textarea").fill(RESPONSE)
    page.locator("#inspect-score").click()
    steps = page.locator("#inspect-steps .rs-step")
    expect(steps).to_have_count(4, timeout=60_000)
    expect(steps.first).to_have_text("3+4+0=7")
    assert "delta" in steps.first.get_attribute("title")
    assert "background" in steps.nth(1).get_attribute("style")
    expect(page.locator("#inspect-steps .rs-legend")).to_contain_text("step delta")
    expect(page.locator("#inspect-summary")).to_contain_text("Untrained score head")
    assert NUMBER.fullmatch(page.locator("[data-testid=total]").inner_text())
    plot = page.locator("[data-testid=score-plot]")
    expect(plot).to_be_visible()
    expect(plot.locator(".rs-boundary")).to_have_count(4)
    assert plot.locator("circle").count() > 20  # one point per response token
    tip = plot.locator("circle title").nth(5).text_content()
    assert tip.startswith("token 5: '") and "score " in tip  # the token's own text on hover
    assert plot.locator("text[text-anchor=end]").count() >= 5  # labelled y ticks, not just min and max
    answer = page.locator("#inspect-steps .rs-answer")  # the answer coloured like the steps
    expect(answer).to_contain_text("The answer is 277.")
    assert "background" in answer.get_attribute("style") and "adds" in answer.get_attribute("title")
    expect(page.locator("[data-testid=score-meaning]")).to_contain_text("answer alone: the answer scored")
    screenshot(page, "inspect-single")

    # The line split makes the same 4 steps here; the sentence split keeps them too.
    page.get_by_label("line", exact=True).check()
    expect(page.locator("#inspect-steps .rs-step")).to_have_count(4, timeout=60_000)


def test_split_choice_is_remembered(app, page):
    from rloo_studio.core.workspace import Workspace

    ws = Workspace(app.workspace)
    page.get_by_label("sentence", exact=True).check()
    end = time.time() + 60
    while ws.setting("inspect_split", "") != "sentence" and time.time() < end:
        time.sleep(0.2)
    assert ws.setting("inspect_split", "") == "sentence"  # remembered in the workspace
    page.reload()
    page.get_by_role("tab", name="Inspect").click()
    expect(page.get_by_label("sentence", exact=True)).to_be_checked(timeout=60_000)
    other = page.context.browser.new_page()  # a separate browser context: no shared storage
    other.goto(app.url)
    other.get_by_role("tab", name="Inspect").click()
    expect(other.get_by_label("sentence", exact=True)).to_be_checked(timeout=60_000)
    other.close()
    page.get_by_label("blank line", exact=True).check()  # leave the default for the other tests


def test_bad_model_path_is_a_message_not_a_traceback(page):
    fill(page, "inspect-base", "/no/such/model")
    page.locator("#inspect-score").click()
    expect(page.locator("#inspect-summary .rs-error")).to_contain_text("/no/such/model", timeout=30_000)
    expect(page.locator("#inspect-steps .rs-step")).to_have_count(0)  # nothing stale from an earlier score


def test_dataset_view_opens_a_disagreement(page):
    page.get_by_role("tab", name="Dataset").click()
    expect(page.locator("#inspect-dataset-stop")).to_be_disabled()  # Stop: only while the set is being scored
    page.locator("#inspect-dataset").click()
    expect(page.locator("[data-testid=accuracy]")).to_have_text(re.compile(r"\d+\.\d%"), timeout=120_000)
    expect(page.locator("#inspect-dataset-stop")).to_be_disabled()
    expect(page.locator("[data-testid=margin-hist] rect").first).to_be_attached()
    groups = page.locator("[data-testid=groups]")  # accuracy by kind of pair and by source, as a reward run reports it
    expect(groups).to_contain_text("only chosen reasons")
    expect(groups).to_contain_text("both reason")
    expect(groups.locator("tr", has_text="demo-pairs").locator("td").last).to_have_text(re.compile(r"^\d+\.\d%$"))
    first = page.locator("#inspect-disagreements").get_by_role("gridcell").filter(visible=True).first
    expect(first).to_be_visible()
    pair_id = first.inner_text().strip()
    first.click()
    expect(page.locator("#inspect-picked input")).to_have_value(pair_id, timeout=10_000)
    screenshot(page, "inspect-dataset")
    page.locator("#inspect-open").click()
    margin = page.locator("[data-testid=margin]")
    expect(margin).to_have_text(re.compile(r"-\d+\.\d{4}"), timeout=60_000)  # it is a disagreement
    expect(page.locator("#inspect-margin")).to_contain_text("disagrees with the label")
    expect(page.locator("#inspect-chosen")).to_contain_text("Chosen")
    expect(page.locator("#inspect-rejected [data-testid=score-plot]")).to_be_visible()
    ticks = [page.locator(f"#inspect-{side} [data-testid=score-plot] text[text-anchor=end]").all_text_contents()
             for side in ("chosen", "rejected")]
    assert ticks[0][:5] and ticks[0][:5] == ticks[1][:5]  # one y scale (five y ticks; the last label is the x end)
    screenshot(page, "inspect-pair")

    # Send it back to the Label tab.
    page.get_by_role("tab", name="Dataset").click()
    page.locator("#inspect-relabel").click()
    expect(page.locator("#inspect-ds-msg")).to_contain_text(f"Pair {pair_id} sent back", timeout=10_000)


def test_new_reward_runs_appear_when_the_tab_is_opened(app, page):
    """A run finished after the page loaded is offered as soon as the Inspect tab is opened again."""
    from rloo_studio.core.workspace import Workspace

    ws = Workspace(app.workspace)
    rid = ws.new_run_id("reward")
    ws.upsert_run(rid, kind="reward", name="late-rm", status="completed", config={})
    (ws.run_dir(rid) / "adapter").mkdir(parents=True)
    (ws.run_dir(rid) / "adapter" / "adapter_config.json").write_text("{}")
    page.get_by_role("tab", name="Label").click()
    page.get_by_role("tab", name="Inspect").click()
    page.locator("#inspect-model input").click()
    expect(page.get_by_role("option", name="late-rm (completed)")).to_be_visible(timeout=10_000)
