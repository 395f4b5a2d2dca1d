"""Records view of the labels: search, filters, sort and pages over the demo store; relabel from a row."""
import pytest
from reward_run_fixture import seeded_reward_run

from rloo_studio.core.errors import DataError
from rloo_studio.label import store as labels
from rloo_studio.label.records import SORTS, current_labels, query, relabel


def test_search_filter_sort_and_pages(workspace):
    ws = workspace
    everything = query(ws, per_page=200)
    assert everything.total == labels.progress(ws)["total"] and everything.pages == -(-everything.total // 200)
    hit = everything.rows[5]
    found = query(ws, search=hit["prompt"].upper())  # case does not matter
    assert hit["pair_id"] in [r["pair_id"] for r in found.rows]
    assert all(hit["prompt"].lower() in (r["prompt"] + r["a"] + r["b"]).lower() for r in found.rows)
    assert query(ws, search="no such text anywhere").total == 0
    for literal in ("%", "_", "\\", "1%0"):  # typed text is looked for as it is, wildcards of SQL included
        every = [r for k in range(1, everything.pages + 1) for r in query(ws, per_page=200, page=k).rows]
        want = sum(any(literal.lower() in t.lower() for t in (r["prompt"], r["a"], r["b"])) for r in every)
        assert query(ws, search=literal).total == want, literal
    for src in labels.sources(ws):
        page = query(ws, source=src, per_page=200)
        assert page.total and all(r["source"] == src for r in page.rows)
    assert sum(query(ws, source=s).total for s in labels.sources(ws)) == everything.total
    # label filters split the store; imported labels are by 'import'
    unl, lab_a = query(ws, label="unlabeled"), query(ws, label="a", annotator="import")
    assert unl.total + lab_a.total == everything.total and all(r["labels"] is None for r in unl.rows)
    assert all(r["labels"] == "import: a" for r in lab_a.rows)
    # paging covers every pair once, in the chosen order
    seen = [r["pair_id"] for p in range(1, 5) for r in query(ws, sort="oldest", page=p, per_page=80).rows]
    assert seen == sorted(seen) and len(set(seen)) == everything.total
    assert query(ws, page=999, per_page=50).page == query(ws, per_page=50).pages  # past the end: the last page
    for s in SORTS:
        assert query(ws, sort=s).total == everything.total
    by_prompt = [r["prompt"].lower() for r in query(ws, sort="prompt", per_page=200).rows]
    assert by_prompt == sorted(by_prompt)
    assert_search_as_by_hand(ws, "compute")


def assert_search_as_by_hand(ws, word):
    """A search's count and pages are those of the same search done by hand, in each order; a page past the end
    is the last."""
    everything = query(ws, per_page=200)
    every = [r for k in range(1, everything.pages + 1) for r in query(ws, per_page=200, page=k).rows]
    want = {r["pair_id"] for r in every if any(word.lower() in t.lower() for t in (r["prompt"], r["a"], r["b"]))}
    for s in SORTS:
        first = query(ws, search=word, sort=s, per_page=7)
        assert first.total == len(want) and first.pages == max(1, -(-len(want) // 7)), (word, s)
        pages = [r["pair_id"] for k in range(1, first.pages + 1)
                 for r in query(ws, search=word, sort=s, per_page=7, page=k).rows]
        assert sorted(pages) == sorted(want), (word, s)
        ids = [r["pair_id"] for k in range(1, everything.pages + 1)
               for r in query(ws, sort=s, per_page=200, page=k).rows]
        assert [i for i in ids if i in want] == pages, (word, s)
        past = query(ws, search=word, sort=s, per_page=7, page=999)
        assert past.page == first.pages and [r["pair_id"] for r in past.rows] == pages[(first.pages - 1) * 7:], s
    return want


@pytest.mark.parametrize("few, parts", [(100_000, 4), (40, 4), (3, 4), (3, 64)])
def test_every_way_a_search_reads_the_texts_finds_the_same_pairs(workspace, monkeypatch, few, parts):
    """A search finds the pairs by the ids of the texts that match when they are few (up to FEW), else by a mask of
    those ids, the texts read in few parts or many: each gives the pairs found by hand, in every order."""
    from rloo_studio.label import records, text_search

    monkeypatch.setattr(text_search, "FEW", few)
    monkeypatch.setattr(text_search, "PARTS", {"prompts": 2, "responses": parts})
    ways, real = set(), text_search.text_search

    def noted(ws, text):
        found = real(ws, text)
        ways.add("mask" if found.most else "ids")
        return found

    monkeypatch.setattr(records, "text_search", noted)
    sizes = [len(assert_search_as_by_hand(workspace, w)) for w in ("compute", "think", "e", "The answer", "1", "zq#")]
    assert sizes[-1] == 0 and sizes[2] > sizes[0] > 7
    assert ways == ({"ids"} if few > 1000 else {"ids", "mask"}), ways


def test_the_prompt_order_walks_its_index_or_sorts_and_both_give_the_same_pages(workspace, monkeypatch):
    """'prompt' walks the prompt index when most pairs match and sorts the matches when few do: same pages."""
    from rloo_studio.label import records

    ws = workspace
    pages = lambda **kw: [[r["pair_id"] for r in query(ws, sort="prompt", page=p, per_page=30, **kw).rows]  # noqa
                          for p in (1, 2, 5)]
    walked, walked_a = pages(), pages(label="a")
    monkeypatch.setattr(records, "WALK_ROWS", 0)  # never walk: sort every match
    assert pages() == walked and pages(label="a") == walked_a and walked[0]


def test_label_filters_find_the_same_pages_by_walking_or_by_their_pair_ids(workspace, monkeypatch):
    """An annotator filter's page walks the order's index, looking up each pair's labels (many matches), or starts
    from the labels' pair ids (few); a label by anyone is read from each pair's counts of its labels (kept by
    triggers, core/workspace.py). Each gives the pairs a look at every row finds, in the viewer's letters, in
    every order."""
    import random

    from rloo_studio.label import records

    ws, rng = workspace, random.Random(3)
    for k in range(40):  # ann labels on the Label tab, in the A/B order drawn for her; bob from the rows
        shown = labels.next_pair(ws, "ann", "browser-1", rng=rng)
        labels.save_label(ws, shown, "ann", "browser-1", ["left", "right", "tie", "skip"][k % 4])
    for r in query(ws, per_page=15, page=3).rows:
        relabel(ws, r["pair_id"], "bob", rng.choice(["a", "b", "tie"]))
    for r in query(ws, annotator="ann", label="tie", per_page=4).rows:  # ann changes her mind: the tie no longer counts
        relabel(ws, r["pair_id"], "ann", "a")
    for viewer in ("", "ann", "bob"):
        rows = [r for k in range(1, 3) for r in query(ws, per_page=200, page=k, viewer=viewer).rows]
        for who in ("", "ann", "bob", "nobody"):
            for label in ("any", "a", "b", "tie", "skip"):
                want = {r["pair_id"] for r in rows
                        if any((not who or v["name"] == who) and label in ("any", v["choice"])
                               for v in r["votes"])} if who or label != "any" else None
                for s in SORTS:
                    pages = {}
                    for by_ids in (0, 10**9):
                        monkeypatch.setattr(records, "PAGE_BY_IDS", by_ids)
                        kw = dict(annotator=who, label=label, viewer=viewer, sort=s, per_page=200)
                        got = query(ws, **kw)
                        pages[by_ids] = [r["pair_id"] for k in range(1, got.pages + 1)
                                         for r in query(ws, page=k, **kw).rows]
                    assert pages[0] == pages[10**9], (viewer, who, label, s)
                    assert want is None or (set(pages[0]) == want and got.total == len(want)), (viewer, who, label, s)
    assert query(ws, annotator="ann", label="tie").total == 6 and query(ws, annotator="bob").total == 15


def test_relabel_from_a_row_changes_the_label_in_the_store(workspace):
    ws = workspace
    row = query(ws, search="Compute", label="unlabeled").rows[0]
    pid = row["pair_id"]
    relabel(ws, pid, "ann", "b")
    assert current_labels(ws, pid) == {"ann": "b"}
    [pref] = [p for p in labels.preference_pairs(ws) if p["pair_id"] == pid]
    assert (pref["chosen"], pref["rejected"]) == (row["b"], row["a"])
    assert pid in [r["pair_id"] for r in query(ws, annotator="ann", label="b").rows]
    relabel(ws, pid, "ann", "a")  # changing one's mind supersedes the earlier label
    assert current_labels(ws, pid) == {"ann": "a"}
    assert query(ws, annotator="ann", label="b").total == 0 and query(ws, annotator="ann").total == 1
    labels.flag_for_relabel(ws, pid, "check")
    assert [r["pair_id"] for r in query(ws, flagged="flagged").rows] == [pid]
    relabel(ws, pid, "bob", "tie")
    assert current_labels(ws, pid) == {"ann": "a", "bob": "tie"}
    assert query(ws, sort="most labels").rows[0]["pair_id"] == pid
    assert [r["pair_id"] for r in query(ws, label="tie").rows] == [pid]  # tie and skip filter too
    relabel(ws, pid, "bob", "skip")
    assert [r["pair_id"] for r in query(ws, label="skip", annotator="bob").rows] == [pid]
    assert query(ws, label="tie").total == 0


def test_bad_input_says_so_and_changes_nothing(workspace):
    ws = workspace
    before = ws.query("SELECT COUNT(*) FROM labels")[0][0]
    pid = query(ws).rows[0]["pair_id"]
    for args, msg in [((pid, "", "a"), "enter your name first"), ((pid, "import", "a"), "reserved"),
                      ((pid, "ann", "maybe"), "Unknown label"), (("", "ann", "a"), "Pick a pair"),
                      ((99999, "ann", "a"), "There is no pair 99999")]:
        with pytest.raises(DataError, match=msg):
            relabel(ws, *args)
    with pytest.raises(DataError, match="Unknown order"):
        query(ws, sort="random")
    with pytest.raises(DataError, match="Unknown label filter"):
        query(ws, label="good")
    with pytest.raises(DataError, match="Rows per page"):
        query(ws, per_page=0)
    assert ws.query("SELECT COUNT(*) FROM labels")[0][0] == before


def _reward_run(ws, rid="reward-seeded"):
    return seeded_reward_run(ws, rid)


def test_filter_pairs_the_reward_model_disagrees_with(workspace):
    from rloo_studio.inspect.dataset import dataset_view, disagreements
    from rloo_studio.inspect.scoring import load_scorer

    ws = workspace
    rid = _reward_run(ws)
    view = dataset_view(load_scorer(ws, reward_run=rid), ws, top=10_000)
    expected = {p.pair_id for p in view.pairs if p.margin < 0}
    assert 0 < len(expected) < len(view.pairs)
    ids = disagreements(ws, rid)
    assert set(ids) == expected
    page = query(ws, pair_ids=ids, per_page=200)
    assert page.total == len(expected) and {r["pair_id"] for r in page.rows} == expected
    assert query(ws, pair_ids=ids, source="demo-candidates").total == 0  # combined with other filters
    # relabeling one of them the other way: it no longer disagrees
    pid = ids[0]
    pref = next(p for p in view.pairs if p.pair_id == pid)
    row = query(ws, pair_ids=[pid]).rows[0]
    relabel(ws, pid, "ann", "a" if row["a"] == pref.rejected else "b")
    assert pid not in disagreements(ws, rid)
    with pytest.raises(DataError, match="There is no reward-model run nope"):
        disagreements(ws, "nope")


def test_as_seen_puts_texts_and_every_label_in_the_viewers_letters():
    from rloo_studio.label.records import as_seen

    row = {"pair_id": 7, "prompt": "p", "a": "stored a", "b": "stored b"}
    votes = [{"name": "import", "choice": "a", "comment": ""}, {"name": "ann", "choice": "a", "comment": "too long"},
             {"name": "bob", "choice": "tie", "comment": ""}]
    r = as_seen(row, votes, a_first=False, viewer="ann")  # ann saw stored b as A
    assert (r["a"], r["b"], r["a_first"]) == ("stored b", "stored a", False)
    assert r["yours"] == "b" and r["labels"] == "import: b; ann: b; bob: tie" and r["comments"] == "ann: too long"
    assert r["chosen"] == "b"  # people's labels decide (one b, one tie), in ann's letters
    same = as_seen(row, votes, a_first=True, viewer="")  # no viewer: the stored order, nobody's own label
    assert (same["a"], same["yours"], same["chosen"], same["labels"]) == ("stored a", None, "a",
                                                                          "import: a; ann: a; bob: tie")
    bare = as_seen(row, [], a_first=True, viewer="ann")
    assert (bare["yours"], bare["chosen"], bare["labels"], bare["comments"]) == (None, None, None, None)
    split = as_seen(row, [{"name": "ann", "choice": "a", "comment": ""}, {"name": "bob", "choice": "b", "comment": ""}],
                    a_first=False, viewer="bob")
    assert (split["yours"], split["chosen"]) == ("a", "tie")  # an even split decides nothing


def test_records_show_a_pair_as_the_viewer_labeled_it_on_the_label_tab(workspace):
    import random

    ws = workspace

    class Right:  # draws 'response_a on the right' for the A/B order
        def random(self):
            return 0.9

    shown = labels.next_pair(ws, "ann", "browser-1", rng=Right())
    assert not shown.a_shown_left
    labels.save_label(ws, shown, "ann", "browser-1", "right", "B reasons better")  # "B is better", as ann saw it
    pid = shown.pair_id
    assert current_labels(ws, pid) == {"ann": "a"}  # stored: response_a, which ann saw as B
    mine = query(ws, pair_ids=[pid], viewer="ann").rows[0]
    assert (mine["a"], mine["b"]) == (shown.left, shown.right)
    assert (mine["yours"], mine["chosen"], mine["comments"]) == ("b", "b", "ann: B reasons better")
    stored = query(ws, pair_ids=[pid]).rows[0]  # no viewer: the stored order
    assert (stored["a"], stored["yours"], stored["chosen"]) == (shown.right, None, "a")
    # the label filter reads the viewer's letters
    assert pid in [r["pair_id"] for r in query(ws, annotator="ann", label="b", viewer="ann", per_page=200).rows]
    assert query(ws, annotator="ann", label="a", viewer="ann").total == 0
    assert query(ws, annotator="ann", label="a").total == 1
    # a label given from the row is in the same letters, and the Label tab shows the same order again
    relabel(ws, pid, "ann", "a")
    assert current_labels(ws, pid) == {"ann": "b"}
    assert query(ws, pair_ids=[pid], viewer="ann").rows[0]["yours"] == "a"
    back = labels.next_pair(ws, "ann", "browser-2", filter="labeled", prefer=[pid], rng=random.Random(0))
    assert back.pair_id == pid and back.left == shown.left and back.current == "b"
    # another annotator who was never shown the pair sees the stored order, and ann's label in it
    relabel(ws, pid, "bob", "a")
    seen_by_bob = query(ws, pair_ids=[pid], viewer="bob").rows[0]
    assert seen_by_bob["a"] == shown.right and seen_by_bob["labels"] == "ann: b; bob: a"
    assert seen_by_bob["chosen"] == "tie"
