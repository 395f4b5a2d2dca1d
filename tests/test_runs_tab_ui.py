"""The Runs tab in Chromium at 1400x1000, read as a person reads it, on run folders written as their jobs leave them
(tests/runs_tab_fixture.py: a reward-model run, a 2,000-step process-reward run, an RLOO run rewarded by it with
eval.json, an RLOO run rewarded by the reward model): each row's result (held-out accuracy before -> after, pair
accuracy, step accuracy), the run that rewarded an RLOO run named in its row and the RLOO run named in the
rewarder's row, a click on a row picking its run (shaded, no cell editor) and a second click putting it back, and a
process-reward run with an RLOO run giving one chart per kind, each titled in the job tabs' words with a legend
that reads its run whole. Screenshots go to test-artifacts/ (runs-tab-*.png)."""
import re

import pytest
from browser import open_page, running_app, screenshot
from playwright.sync_api import expect
from runs_tab_fixture import runs_workspace
from test_charts_ui import add_curve, assert_headers_whole, chart_state, check_chart, inside

T = 60_000
PICKED_RGB = "rgb(219, 234, 254)"  # runs_tab.PICKED, as the browser computes it


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    from rloo_studio.label.demo_data import open_workspace

    ws_dir = tmp_path_factory.mktemp("runs-tab") / "ws"
    ids = runs_workspace(open_workspace(ws_dir, demo=True))
    with running_app(ws_dir, seed=False) as a:
        a.ids = ids
        yield a


def row(page, rid: str):
    return page.locator("#runs-table").get_by_role("row").filter(
        has=page.get_by_role("gridcell", name=rid, exact=True))


def shaded(page, rid: str) -> bool:
    page.mouse.move(5, 995)  # a hovered row has its own colour
    cell = row(page, rid).get_by_role("gridcell").first
    return cell.evaluate("e => getComputedStyle(e).backgroundColor") == PICKED_RGB


def click_row(page, rid: str, column: int = 2):
    row(page, rid).get_by_role("gridcell").nth(column).click()


def chart_title(page, elem_id: str) -> str:
    st = chart_state(page, elem_id)
    title, box = st["title"]
    assert inside(box, st["block"]), f"{elem_id}: its title {title!r} {box} is cut by the chart {st['block']}"
    return title


def no_error_on_page(page):
    text = page.locator("body").inner_text()
    assert "Traceback" not in text and not re.search(r"\bError\b", text), text[-2000:]


def test_rows_read_results_and_links_and_a_click_picks_a_run(app):
    ids = app.ids
    with open_page(app.url) as page:
        page.get_by_role("tab", name="Runs").click()
        rloo = row(page, ids["rloo_prm"])
        expect(rloo).to_contain_text("held-out accuracy 50.5% → 90.0% (+39.5 points)", timeout=T)
        expect(rloo).to_contain_text(f"rewarded by {ids['prm']} (process reward model)")
        expect(row(page, ids["prm"])).to_contain_text("held-out step accuracy 84.0% · first wrong step found 62.0%")
        expect(row(page, ids["prm"])).to_contain_text(f"rewarded {ids['rloo_prm']}")
        expect(row(page, ids["reward"])).to_contain_text("held-out pair accuracy 87.5%")
        expect(row(page, ids["reward"])).to_contain_text(f"rewarded {ids['rloo_rm']}")
        expect(row(page, ids["rloo_rm"])).to_contain_text(f"rewarded by {ids['reward']} (reward model)")
        assert_headers_whole(page, "Runs tab")
        expect(page.locator("#runs-overlay-note")).to_contain_text("Click rows of the table")  # no empty axes
        expect(page.locator("#runs-overlay")).to_be_hidden()
        screenshot(page, "runs-tab-rows")

        click_row(page, ids["prm"])  # a click on a row picks its run: no cell editor opens
        expect(page.locator("#runs-pick")).to_contain_text(ids["prm"], timeout=T)
        expect(page.locator("#runs-overlay")).to_be_visible(timeout=T)
        assert page.locator("#runs-table input, #runs-table textarea").filter(visible=True).count() == 0
        expect(page.locator("#runs-details")).to_contain_text(ids["prm"], timeout=T)
        for _ in range(40):  # the row is shaded once the table comes back from the pick
            if shaded(page, ids["prm"]):
                break
            page.wait_for_timeout(250)
        assert shaded(page, ids["prm"]) and not shaded(page, ids["rloo_prm"])
        click_row(page, ids["prm"], column=5)  # a second click puts it back
        expect(page.locator("#runs-pick")).not_to_contain_text(ids["prm"], timeout=T)
        expect(page.locator("#runs-overlay")).to_be_hidden(timeout=T)
        no_error_on_page(page)


def test_a_process_reward_run_and_an_rloo_run_get_a_chart_each(app):
    ids = app.ids
    prm, rloo = ids["prm"], ids["rloo_prm"]
    with open_page(app.url) as page:
        page.get_by_role("tab", name="Runs").click()
        expect(row(page, prm)).to_be_visible(timeout=T)
        click_row(page, prm)
        expect(page.locator("#runs-pick")).to_contain_text(prm, timeout=T)
        click_row(page, rloo, column=0)
        expect(page.locator("#runs-pick")).to_contain_text(rloo, timeout=T)
        # each kind's headline curve, a chart each, without asking, in the order the runs were picked
        expect(page.locator("#runs-overlay-2")).to_be_visible(timeout=T)
        expect(page.locator("#runs-overlay-3")).to_be_hidden()
        assert chart_title(page, "runs-overlay") == "process-reward › held-out step accuracy › all steps"
        check_chart(page, "runs-overlay", [prm])
        assert chart_title(page, "runs-overlay-2") == "RLOO › reward: total and each reward › reward (weighted total)"
        check_chart(page, "runs-overlay-2", [rloo])
        page.locator("#runs-pick").scroll_into_view_if_needed()
        page.mouse.move(5, 995)
        screenshot(page, "runs-tab-overlay")

        # both losses: two charts, never one axis (0.6 -> 0.01 over 2,000 steps beside about 1e-8 over 160)
        add_curve(page, "process-reward › loss (lower is better) › training batches")
        add_curve(page, "RLOO › loss (RLOO)")
        expect(page.locator("#runs-overlay-4")).to_be_visible(timeout=T)
        titles = {chart_title(page, e): e for e in ("runs-overlay-3", "runs-overlay-4")}
        assert set(titles) == {"process-reward › loss (lower is better) › training batches", "RLOO › loss (RLOO)"}
        check_chart(page, titles["RLOO › loss (RLOO)"], [rloo])
        check_chart(page, titles["process-reward › loss (lower is better) › training batches"], [prm])
        for elem_id in titles.values():
            names = [t["name"] for t in chart_state(page, elem_id)["traces"]]
            assert len(names) == 1, f"{elem_id}: two kinds on one axis: {names}"
        expect(page.locator(f"#{titles['RLOO › loss (RLOO)']}")).to_contain_text("Near zero by design")
        page.locator(f"#{titles['RLOO › loss (RLOO)']}").scroll_into_view_if_needed()
        page.mouse.move(5, 995)
        screenshot(page, "runs-tab-losses")
        # only what the job tabs chart is offered: none of the Trainer's bookkeeping
        page.locator("#runs-metric input").click()
        offered = page.get_by_role("option").all_inner_texts()
        page.keyboard.press("Escape")
        assert offered and not [o for o in offered if re.search(r"flos|runtime|per_second|epoch|samples", o)], offered
        no_error_on_page(page)
