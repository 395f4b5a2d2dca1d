"""The Runs tab's callbacks on run folders as their jobs leave them (tests/runs_tab_fixture.py): a click on a row picks
its run or puts it back, the table shades the picked rows and shows each run's result and links, and the overlay
draws one chart per picked curve with the unused chart places hidden (all of them, and a line that says what to
pick, while there is nothing to draw). (In Chromium: tests/test_runs_tab_ui.py.)"""
import gradio as gr
from runs_tab_fixture import runs_workspace

from rloo_studio.runs import overlays
from rloo_studio.ui import runs_tab


def _click(ws, picked, row_value):
    return runs_tab.pick_row(ws, picked, gr.SelectData(None, {"index": [0, 0], "value": row_value[0],
                                                              "row_value": row_value}))


def test_a_click_on_a_row_picks_its_run_and_a_second_click_puts_it_back(empty_workspace):
    ids = runs_workspace(empty_workspace)
    one = _click(empty_workspace, [], [ids["prm"], "process-reward"])
    assert one["value"] == [ids["prm"]]
    two = _click(empty_workspace, one["value"], [ids["rloo_prm"], "RLOO"])
    assert two["value"] == [ids["prm"], ids["rloo_prm"]]
    assert _click(empty_workspace, two["value"], [ids["prm"]])["value"] == [ids["rloo_prm"]]
    assert isinstance(_click(empty_workspace, [], ["no-such-run"]), type(gr.skip()))


def test_the_table_shows_results_and_links_and_shades_the_picked_rows(empty_workspace):
    ids = runs_workspace(empty_workspace)
    styler = runs_tab._table(empty_workspace, [ids["rloo_prm"]])
    df = styler.data.set_index("run")
    assert list(styler.data.columns) == runs_tab.HEADERS
    assert df.loc[ids["rloo_prm"], "result"] == "held-out accuracy 50.5% → 90.0% (+39.5 points)"
    assert df.loc[ids["rloo_prm"], "linked runs"] == f"rewarded by {ids['prm']} (process reward model)"
    assert df.loc[ids["prm"], "linked runs"] == f"rewarded {ids['rloo_prm']}"
    assert df.loc[ids["prm"], "kind"] == "process-reward"
    styles = gr.Dataframe.get_metadata(styler)["styling"]
    shaded = [row[0] == runs_tab.PICKED for row in styles]
    assert shaded == [rid == ids["rloo_prm"] for rid in styler.data["run"]]


def test_picking_a_prm_and_an_rloo_run_draws_two_charts_and_hides_the_rest(empty_workspace):
    ids = runs_workspace(empty_workspace)
    picked = [ids["prm"], ids["rloo_prm"]]
    curves, details = runs_tab.choose(empty_workspace, picked, None)
    assert curves["value"] == ["rloo:reward", "prm:eval_step_accuracy"]
    assert ("RLOO › loss (RLOO)", "rloo:loss") in curves["choices"] and ids["prm"] in details
    hint, *shown = runs_tab.draw(empty_workspace, picked, curves["value"])
    assert hint == "" and len(shown) == overlays.MAX_CHARTS
    assert [u["visible"] for u in shown] == [True, True] + [False] * (overlays.MAX_CHARTS - 2)
    titles = [u["value"].layout.title.text for u in shown[:2]]
    assert titles == ["<b>RLOO › reward: total and each reward › reward (weighted total)</b>",
                      "<b>process-reward › held-out step accuracy › all steps</b>"]
    legends = [[t.name for t in u["value"].data] for u in shown[:2]]
    assert legends == [[f"{ids['rloo_prm']} · 0.8"], [f"{ids['prm']} · 0.84"]]
    # nothing to draw: no empty axes, a line that says what to do
    hint, *shown = runs_tab.draw(empty_workspace, [], [])
    assert "Click rows of the table" in hint and not any(u["visible"] for u in shown)
    hint, *shown = runs_tab.draw(empty_workspace, picked, [])
    assert hint == "Pick the curves to draw." and not any(u["visible"] for u in shown)
