"""Inspect tab in the real app, driven in Chromium: colored steps + plot; dataset view -> open a disagreement; a process
reward run beside the outcome model, both lenses on each step in the first screen."""
import re
import time

import pytest
from browser import ARTIFACTS, App, fill, open_page, screenshot
from playwright.sync_api import expect
from prm_run_fixture import doubting_prm_run
from reward_run_fixture import seeded_reward_run
from test_charts_ui import assert_headers_whole

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
    # no process reward run in this workspace yet: the page says what the outcome lens cannot see, and where to go
    verdict = page.locator("#inspect-summary [data-testid=verdict]")
    expect(verdict).to_contain_text("An outcome model scores whole answers: it cannot tell a slipped step from a right "
                                    "one. Train a process reward model on the Process reward tab to judge each step.")
    expect(page.locator("#inspect-summary [data-testid=outcome-step]")).to_have_count(4)
    expect(plot.locator("xpath=..").locator(".rs-chart-title")).to_have_text("Outcome model: score at each token")
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


SLIPPED = "<think>\n0+4+0=4\n\n2+3+0=6\n\n8+6+0=14\n</think>\n\nThe answer is 1464."  # step 2 adds 2+3 wrongly


def _rgb(css: str) -> tuple[float, ...]:
    return tuple(float(x) for x in re.findall(r"[\d.]+", css)[:3])


def _contrast(a, b) -> float:
    def lum(rgb):
        lin = [c / 255 / 12.92 if c / 255 <= 0.04045 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


# an element's text colour and the colour behind it: its own background, or the nearest ancestor's that is not clear
COLOURS = """el => {
  const clear = b => ['rgba(0, 0, 0, 0)', 'transparent'].includes(getComputedStyle(b).backgroundColor);
  let bg = el; while (bg && clear(bg)) bg = bg.parentElement;
  return [getComputedStyle(el).color, bg ? getComputedStyle(bg).backgroundColor : 'rgb(255, 255, 255)'] }"""


def assert_readable(row) -> None:
    """The doubted step's marker, its process probability and its text each stand out from what is behind them."""
    for part in ("[data-testid=doubt-marker]", "[data-testid=process-step]", ".txt", "[data-testid=outcome-step]"):
        text, back = row.locator(part).evaluate(COLOURS)
        assert _contrast(_rgb(text), _rgb(back)) >= 4.5, (part, text, back)


def test_both_lenses_side_by_side_in_the_first_screen(app):
    """A process reward run finished after the page was built is chosen by itself (the newest of two); a slipped
    response scored: the sentence names the step it doubts, each step's outcome score and process probability are in
    the first screen at 1400x1000, the doubted step's marker reads (contrast of at least 4.5), every chart is titled
    with its lens."""
    from rloo_studio.core.workspace import Workspace

    ws = Workspace(app.workspace)
    seeded_reward_run(ws)
    doubting_prm_run(ws, "Add 820 and 634.", SLIPPED, rid="prm-older")
    doubting_prm_run(ws, "Add 820 and 634.", SLIPPED, doubt=2)  # newest: prm-doubts
    with open_page(app.url) as page:
        page.get_by_role("tab", name="Inspect").click()
        expect(page.locator("#inspect-prm input")).to_have_value("prm-doubts (completed)", timeout=30_000)
        expect(page.locator("#inspect-model input")).to_have_value("reward-seeded (completed)", timeout=30_000)
        page.locator("#inspect-prompt textarea").fill("Add 820 and 634.")
        page.locator("#inspect-response textarea").fill(SLIPPED)
        page.locator("#inspect-score").click()
        verdict = page.locator("#inspect-summary [data-testid=verdict]")
        expect(verdict).to_contain_text("the process model doubts step 2 (p = 0.05)", timeout=120_000)
        rows = page.locator("#inspect-summary [data-testid=lenses] tr[data-step]")
        expect(rows).to_have_count(3)
        marker = page.locator("#inspect-summary [data-testid=doubt-marker]")
        expect(marker).to_have_count(1)
        expect(rows.nth(1).locator("[data-testid=doubt-marker]")).to_have_text("first doubted step")
        expect(rows.nth(1).locator("[data-testid=process-step]")).to_have_text("0.047")
        outcome = rows.nth(1).locator("[data-testid=outcome-step]").inner_text()
        assert re.fullmatch(r"[+-]\d+\.\d{4} \([+-]\d+\.\d{4}\)", outcome)  # the score if it ended here (change)

        page.evaluate("window.scrollTo(0, 0)")
        seen = [verdict, marker] + [rows.nth(k).locator(f"[data-testid={lens}-step]") for k in range(3)
                                    for lens in ("outcome", "process")]
        for el in seen:
            box = el.bounding_box()
            assert box and box["y"] >= 0 and box["y"] + box["height"] <= 1000 and box["x"] + box["width"] <= 1400, box
        assert_readable(rows.nth(1))

        assert_headers_whole(page, "Inspect, both lenses")  # "Outcome model" / "Process model" columns, whole
        titles = page.locator(".rs-chart-title").filter(visible=True).all_inner_texts()
        assert titles == ["Outcome model: how its score moved at each step", "Outcome model: score at each token",
                          "Process model: is each step right?"], titles
        for chart in page.locator(".rs-plot, .rs-hist").filter(visible=True).all():
            expect(chart.locator(".rs-chart-title")).to_have_text(re.compile(r"^(Outcome|Process) model: "))
        screenshot(page, "inspect-lenses")
        page.evaluate("window.scrollTo(0, 0)")
        page.screenshot(path=str(ARTIFACTS / "inspect-lenses-first-screen.png"))
    with open_page(app.url + "?__theme=dark") as page:  # the colours of a doubted step read in the dark theme too
        page.get_by_role("tab", name="Inspect").click()
        expect(page.locator("#inspect-prm input")).to_have_value("prm-doubts (completed)", timeout=30_000)
        page.locator("#inspect-response textarea").fill(SLIPPED)
        page.locator("#inspect-score").click()
        doubted = page.locator("#inspect-summary [data-testid=lenses] tr.doubted")
        expect(doubted.locator("[data-testid=doubt-marker]")).to_be_visible(timeout=120_000)
        assert_readable(doubted)
        page.screenshot(path=str(ARTIFACTS / "inspect-lenses-dark.png"))
