"""Records and Label agree, in Chromium at 1400x1000: a pair labeled "B is better" on the Label tab shows on the
Records tab as that person labeled it (their A and B, their label, the text chosen, their comment), under the
name typed on the Label tab; a label given from the row is theirs, in the same letters. And the Label tab's
label buttons are disabled, and look it, while no pair is on the page."""
import pytest
from browser import fill, open_page, screenshot
from playwright.sync_api import expect

from rloo_studio.core.workspace import Workspace
from rloo_studio.label import store
from rloo_studio.label.records import current_labels, query

HEADERS = ["pair", "prompt", "response A", "response B", "your label", "chosen", "labels", "comments", "flag",
           "source"]


@pytest.fixture(scope="module")
def app(demo_app):
    return demo_app  # shared: each test labels under a name of its own


def _words(text: str) -> str:
    return " ".join(text.replace("…", " ").split())


def _row_cells(page, pid) -> list[str]:
    rows = page.locator("#records-table").get_by_role("row").filter(visible=True)
    for i in range(rows.count()):
        cells = rows.nth(i).get_by_role("gridcell")
        if cells.count() and cells.first.inner_text().strip() == str(pid):
            return [cells.nth(j).inner_text().strip() for j in range(cells.count())]
    raise AssertionError(f"pair {pid} is not in the table")


def _swap_order_for(ws: Workspace, name: str) -> None:
    """This person is shown every pair with response_a on the right (the Label tab's order drawn for them), so that
    their A/B differs from the stored order: what Records once showed in place of theirs."""
    with ws.transaction() as con:
        ann = store.annotator_id(con, name)
        con.execute("INSERT OR REPLACE INTO pair_order (pair_id, annotator_id, a_shown_left) "
                    "SELECT id, ?, 0 FROM pairs", (ann,))


def _headers_fit(page) -> list[str]:
    """The table's headers whose text is cut (wider than its cell)."""
    return page.evaluate("""() => [...document.querySelectorAll('#records-table th')].filter(th => th.offsetParent)
        .flatMap(th => [...th.querySelectorAll('*')].filter(e => e.children.length === 0 && e.innerText.trim())
        .filter(e => e.scrollWidth > e.clientWidth + 1
                     || e.getBoundingClientRect().right > th.getBoundingClientRect().right + 1)
        .map(e => e.innerText.trim()))""")


def test_records_show_the_pair_as_the_label_tab_showed_it_to_the_annotator(app):
    ws, name, comment = Workspace(app.ws_dir), "records-viewer", "B shows its work"
    _swap_order_for(ws, name)
    with open_page(app.url) as page:
        expect(page.locator("#lbl-status")).to_contain_text("Enter your name", timeout=30000)
        page.get_by_label("Your name").fill(name)
        page.get_by_label("Your name").press("Enter")
        expect(page.locator("#lbl-status")).to_contain_text("pair #", timeout=30000)
        page.get_by_label("Raw text").check()  # the texts as stored, to compare with the table's
        expect(page.locator("#lbl-left-text pre.raw-response")).to_be_visible()
        pid = page.locator("#lbl-prompt [data-pair]").get_attribute("data-pair")
        left, right = (_words(page.locator(f"#lbl-{s}-text").inner_text()) for s in ("left", "right"))
        page.locator("#lbl-comment textarea").fill(comment)
        page.locator("#lbl-comment textarea").press("Escape")
        page.keyboard.press("2")  # B is better, as this person sees the pair
        page.wait_for_function("b => document.querySelector('#lbl-prompt [data-pair]')?.getAttribute('data-pair') "
                               "!== b", arg=pid, timeout=30000)
        assert current_labels(ws, int(pid)) == {name: "a"}  # stored: response_a, shown to them as B

        page.get_by_role("tab", name="Records").click()
        expect(page.locator("#records-viewer")).to_contain_text(f"Each pair as {name} (the name on the Label tab)",
                                                                 timeout=30000)
        page.locator("#records-annotator").click()
        page.get_by_role("option", name=name, exact=True).click()
        expect(page.locator("#records-count")).to_contain_text("1 pair match", timeout=30000)
        cells = dict(zip(HEADERS, _row_cells(page, pid)))
        assert left.startswith(_words(cells["response A"])[:60]) and right.startswith(_words(cells["response B"])[:60])
        assert (cells["your label"], cells["chosen"]) == ("B is better", "B")
        assert cells["labels"] == f"{name}: B" and cells["comments"] == f"{name}: {comment}"
        page.mouse.move(0, 0)
        screenshot(page, "records-viewer")
        assert _headers_fit(page) == []

        # The row whole: B is the chosen text; a label given here is theirs, in their letters.
        page.locator("#records-table").get_by_role("gridcell", name=pid, exact=True).click()
        detail = page.locator("#records-detail")
        expect(detail).to_contain_text(f"Pair {pid}", timeout=30000)
        expect(detail).to_contain_text("your label: B is better")
        expect(detail.locator("b", has_text="Response B · chosen")).to_be_visible()
        expect(detail.locator("b", has_text="Response A · rejected")).to_be_visible()
        expect(detail).to_contain_text(comment)
        page.locator("#records-a").click()  # changing one's mind from the row: now A is better
        expect(page.locator("#records-msg")).to_contain_text(f"{name} labeled pair {pid} “A is better”", timeout=30000)
        assert current_labels(ws, int(pid)) == {name: "b"}
        expect(page.locator("#records-detail")).to_contain_text("Response A · chosen", timeout=30000)
        page.get_by_role("tab", name="Label").click()  # undo there brings that label's pair back, in the same order
        expect(page.locator("#lbl-status")).to_contain_text("pair #", timeout=30000)
        page.locator("#lbl-progress").click()
        page.keyboard.press("u")
        expect(page.locator("#lbl-status")).to_contain_text(f"Undid your label on pair #{pid}", timeout=30000)
        assert _words(page.locator("#lbl-left-text").inner_text()) == left


def test_records_without_a_name_on_the_label_tab_say_where_to_type_it(app):
    with open_page(app.url) as page:
        expect(page.locator("#lbl-status")).to_contain_text("Enter your name", timeout=30000)
        page.get_by_role("tab", name="Records").click()
        expect(page.locator("#records-viewer")).to_contain_text("Type your name on the Label tab", timeout=30000)
        expect(page.locator("#records-count")).to_contain_text("pairs match", timeout=30000)
        target = query(Workspace(app.ws_dir), label="unlabeled", sort="oldest").rows[0]
        pid, n = target["pair_id"], query(Workspace(app.ws_dir), search=target["prompt"]).total
        fill(page, "records-search", target["prompt"])  # a search finds it
        page.locator("#records-go").click()
        expect(page.locator("#records-count")).to_contain_text(f"{n} pair{'s' * (n != 1)} match", timeout=30000)
        page.locator("#records-table").get_by_role("gridcell", name=str(pid), exact=True).click()
        expect(page.locator("#records-detail")).to_contain_text(f"Pair {pid}", timeout=30000)
        before = current_labels(Workspace(app.ws_dir), pid)
        page.locator("#records-tie").click()
        expect(page.locator("#records-msg")).to_contain_text("Type your name on the Label tab first", timeout=30000)
        assert current_labels(Workspace(app.ws_dir), pid) == before


def test_label_buttons_are_disabled_and_look_it_while_no_pair_is_shown(app):
    keys = ["#lbl-left", "#lbl-right", "#lbl-tie", "#lbl-skip", "#lbl-flag"]
    with open_page(app.url) as page:
        expect(page.locator("#lbl-status")).to_contain_text("Enter your name", timeout=30000)
        for k in keys:
            expect(page.locator(k)).to_be_disabled()
            expect(page.locator(k)).to_have_css("opacity", "0.45")  # faded like every disabled button, unlike Undo
        page.locator("#lbl-progress").click()
        page.keyboard.press("1")  # a key with no pair on the page: said in words, nothing saved
        expect(page.locator("#lbl-busy-text")).to_contain_text("No pair is on screen, so this key saved nothing")
        page.mouse.move(0, 0)
        screenshot(page, "label-no-pair")
        page.get_by_label("Your name").fill("no-pair-yet")
        page.get_by_label("Your name").press("Enter")
        expect(page.locator("#lbl-status")).to_contain_text("pair #", timeout=30000)
        for k in keys:
            expect(page.locator(k)).to_be_enabled()
        expect(page.locator("#lbl-left")).to_have_css("opacity", "1")  # (after the fade)
    assert not Workspace(app.ws_dir).query("SELECT 1 FROM labels l JOIN annotators a ON a.id = l.annotator_id "
                                           "WHERE a.name = 'no-pair-yet'")
