"""Big imports and exports stream: memory does not grow with the file, importing it again adds nothing,
and rows written in several chunks count as they do in one. bench/million.py measures the 1M-pair figures."""
import json
import subprocess
import sys
import textwrap
from dataclasses import asdict
from pathlib import Path

import pytest

from rloo_studio.core.workspace import Workspace
from rloo_studio.label import import_store, importing

ROOT = Path(__file__).resolve().parent.parent
ROWS = 120_000

# In a fresh process: write a ROWS-row preference file, import it, import it again; print the peak RSS growth of
# each import (VmHWM after, minus VmRSS before) and the store's counts. The SQLite page cache of the import is set
# to SQLite's default, so that the growth measured is what the import keeps of the file.
CHILD = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    from rloo_studio.core.workspace import Workspace
    from rloo_studio.label import importing

    def vm(key):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024

    tmp, rows = Path(sys.argv[2]), int(sys.argv[3])
    src = tmp / "big.jsonl"
    with open(src, "w") as f:
        for i in range(rows):
            f.write(json.dumps({"prompt": f"Problem {i}: what is {i} + {2 * i}? Show the steps.",
                                "chosen": f"<think>\\n{i} + {2 * i} = {3 * i}\\n</think>\\n\\nThe answer is {3 * i}.",
                                "rejected": f"<think>\\n{i} + {2 * i}\\n</think>\\n\\nThe answer is {3 * i + 1}.",
                                "answer": str(3 * i)}) + "\\n")
    importing.IMPORT_CACHE_KIB = 2000
    ws = Workspace(tmp / "ws")
    def counts():
        return [ws.query(f"SELECT COUNT(*) FROM {t}")[0][0] for t in ("pairs", "labels", "prompts", "responses")]
    out = {}
    for step in ("first", "again"):
        before, rss = counts(), vm("VmRSS")
        res = importing.import_file(ws, src)
        out[step] = {"growth_mb": (vm("VmHWM") - rss) / 2 ** 20, "before": before, "after": counts(),
                     "pairs": res.pairs, "skipped": res.skipped, "rows": res.rows}
    print(json.dumps(out))
""")


def test_a_big_file_streams_through_import_and_export_with_bounded_memory_and_imports_again_as_nothing(tmp_path):
    p = subprocess.run([sys.executable, "-c", CHILD, str(ROOT), str(tmp_path), str(ROWS)], capture_output=True,
                       text=True, timeout=1800)
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    first, again = out["first"], out["again"]
    assert first["rows"] == first["pairs"] == ROWS and first["after"] == [ROWS, ROWS, ROWS, 2 * ROWS]
    # Holding the rows (dicts, then checked rows) costs well over 1.5 KB a row: about 250 MB here, as the import
    # did before it streamed (434 MB peak at 200,000 rows). Streaming holds one chunk of 20,000 rows.
    assert first["growth_mb"] < 120, out
    assert again["growth_mb"] < 120, out
    assert again["pairs"] == 0 and again["skipped"] == ROWS and again["after"] == again["before"], out
    # The export streams too: in a fresh process, every labeled pair written, memory not growing with them.
    p = subprocess.run([sys.executable, "-c", EXPORT_CHILD, str(ROOT), str(tmp_path)], capture_output=True,
                       text=True, timeout=1800)
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["rows"] == out["lines"] == ROWS and out["first"] == {
        "prompt": "Problem 0: what is 0 + 0? Show the steps.",
        "chosen": "<think>\n0 + 0 = 0\n</think>\n\nThe answer is 0.",
        "rejected": "<think>\n0 + 0\n</think>\n\nThe answer is 1."}, out
    # Holding the resolved pairs (and the rows written from them) took about 1 KB a pair before it streamed.
    assert out["growth_mb"] < 40, out


# In a fresh process: export the workspace CHILD imported; print the peak RSS growth and what was written.
EXPORT_CHILD = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    from rloo_studio.core.workspace import Workspace
    from rloo_studio.label.exporting import export

    def vm(key):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024

    tmp = Path(sys.argv[2])
    ws = Workspace(tmp / "ws")
    ws.query("SELECT COUNT(*) FROM pairs")  # opened before the baseline
    rss = vm("VmRSS")
    res = export(ws, tmp / "out.jsonl")
    growth = (vm("VmHWM") - rss) / 2 ** 20
    with open(tmp / "out.jsonl") as f:
        first, lines = json.loads(f.readline()), 1 + sum(1 for _ in f)
    print(json.dumps({"growth_mb": growth, "rows": res.rows, "lines": lines, "first": first}))
""")


def _rows(n_repeat: int) -> list[dict]:
    base = [{"prompt": f"q{i}", "chosen": f"right {i}", "rejected": f"wrong {i}"} for i in range(6)]
    swapped = {"prompt": "q1", "chosen": "wrong 1", "rejected": "right 1"}  # the opposite label: a split vote
    return base + [base[0], swapped, base[4]] * n_repeat


@pytest.mark.parametrize("aside", [False, True], ids=["key index", "keys in memory"])
@pytest.mark.parametrize("kind", ["preference", "candidates"])
def test_rows_written_in_several_chunks_count_as_in_one(tmp_path, monkeypatch, kind, aside):
    """A row repeating an earlier row of the file is 'repeated' whether that row was written in the same chunk or
    an earlier one; a row already in the workspace before the import is 'skipped' and not 'repeated'. The same
    when a big import finds the pairs by key in memory (the key index set aside)."""
    monkeypatch.setattr(import_store, "SET_ASIDE_ROWS", 1 if aside else 10 ** 9)
    if kind == "preference":
        rows = _rows(2)
    else:
        rows = [{"prompt": f"q{i}", "responses": [f"r{i}a", f"r{i}b", f"r{i}c"]} for i in range(6)]
        rows += [rows[0], rows[4], rows[0]]
    src = tmp_path / "f.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    old = tmp_path / "old.jsonl"
    old.write_text(json.dumps(rows[2]) + "\n")  # one row already in the workspace before the big import

    def run(chunk: int) -> tuple[dict, list]:
        monkeypatch.setattr(importing, "CHUNK_ROWS", chunk)
        ws = Workspace(tmp_path / f"ws{chunk}")
        trigger = ws.query("SELECT sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name")
        importing.import_file(ws, old)
        res = asdict(importing.import_file(ws, src))
        labels = [tuple(r) for r in ws.query("SELECT pair_id, choice FROM labels ORDER BY id")]
        # The import counts its new pairs' labels itself (the counting trigger is off meanwhile): each pair's
        # counts are those of its labels, and the triggers are as they were.
        assert ws.query("SELECT sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name") == trigger
        assert counted(ws) == recounted(ws) and sum(n for _, n, *_ in counted(ws)) == len(labels)
        return res, labels

    whole, in_chunks = run(1000), run(2)
    assert in_chunks == whole
    res = whole[0]
    assert res["skipped"] >= 1 and res["repeated"] == res["skipped"] - 1
    if kind == "preference":
        assert res["labeled"] == res["split"] == 1


def test_a_workspace_of_schema_4_migrates_and_finds_one_annotators_labels_by_pair_and_pages_by_index(tmp_path):
    """Schema 5 replaces labels_pair by labels_pair_who: an existing workspace keeps its labels, and "the pairs this
    annotator labeled" looks each pair's label up by pair and annotator (not the annotator's labels once per pair)."""
    import sqlite3

    from rloo_studio.core.workspace import SCHEMA, statements

    (tmp_path / "old").mkdir()
    con = sqlite3.connect(tmp_path / "old" / "studio.db")
    for i, step in enumerate(SCHEMA[:4]):
        for stmt in statements(step):
            con.execute(stmt)
        con.execute(f"PRAGMA user_version={i + 1}")
    con.executescript("""INSERT INTO prompt_sets VALUES (1, 's', 's', 0);
        INSERT INTO prompts VALUES (1, 1, 'Say hi', '{}');
        INSERT INTO responses VALUES (1, 1, 'Hi!', 's', 0), (2, 1, 'No.', 's', 0);
        INSERT INTO pairs (id, prompt_id, response_a, response_b, source, created) VALUES (1, 1, 1, 2, 's', 0);
        INSERT INTO annotators VALUES (1, 'ann', 0);
        INSERT INTO labels (pair_id, annotator_id, choice, created) VALUES (1, 1, 'a', 0);""")
    con.commit()
    con.close()
    ws = Workspace(tmp_path / "old")
    assert ws.schema_version() == len(SCHEMA) == 10
    indexes = {r[0] for r in ws.query("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert "labels_pair_who" in indexes and "labels_pair" not in indexes
    assert ws.query("SELECT n_human FROM pairs")[0][0] == 1  # the counts' triggers still hold
    plan = " ".join(r[3] for r in ws.query(
        "EXPLAIN QUERY PLAN SELECT COUNT(*) FROM pairs p WHERE EXISTS (SELECT 1 FROM labels l JOIN annotators an "
        "ON an.id = l.annotator_id WHERE l.pair_id = p.id AND l.superseded = 0 AND an.name = 'ann')"))
    assert "labels_pair_who (pair_id=? AND superseded=? AND annotator_id=?)" in plan, plan
    from rloo_studio.label import records

    assert [r["pair_id"] for r in records.query(ws, annotator="ann").rows] == [1]
    newest = " ".join(r[3] for r in ws.query(  # the Records tab's first page: pairs in index order, no sort
        "EXPLAIN QUERY PLAN SELECT p.id FROM pairs p JOIN prompts pr ON pr.id = p.prompt_id "
        "ORDER BY p.created DESC, p.id DESC LIMIT 20"))
    assert "pairs_created" in newest and "TEMP B-TREE" not in newest, newest
    most = " ".join(r[3] for r in ws.query(  # schema 7: 'most labels' walks its index too
        f"EXPLAIN QUERY PLAN SELECT p.id FROM pairs p ORDER BY {records.SORTS['most labels']} LIMIT 20"))
    assert "pairs_n_labels" in most and "TEMP B-TREE" not in most, most
    assert [r["pair_id"] for r in records.query(ws, sort="prompt").rows] == [1]  # the prompt walk's page
    # schema 8: the pair counts its label for response_a, and the new triggers count a label given after
    assert [tuple(r) for r in ws.query("SELECT n_a, n_b FROM pairs")] == [(1, 0)]
    assert [r["pair_id"] for r in records.query(ws, label="a").rows] == [1] and not records.query(ws, label="b").rows
    records.relabel(ws, 1, "bob", "b")
    assert [tuple(r) for r in ws.query("SELECT n_a, n_b, n_human FROM pairs")] == [(1, 1, 2)]
    assert [r["pair_id"] for r in records.query(ws, label="b").rows] == [1]


def counted(ws) -> list[tuple]:
    return [tuple(r)
            for r in ws.query("SELECT id, n_import, n_human + n_skip + n_tie, n_a, n_b FROM pairs ORDER BY id")]


def recounted(ws) -> list[tuple]:
    return [tuple(r) for r in ws.query(
        """SELECT p.id, (SELECT COUNT(*) FROM labels l JOIN annotators a ON a.id = l.annotator_id WHERE l.pair_id = p.id
                         AND l.superseded = 0 AND l.choice != 'skip' AND a.name = 'import'),
                  (SELECT COUNT(*) FROM labels l JOIN annotators a ON a.id = l.annotator_id WHERE l.pair_id = p.id
                   AND l.superseded = 0 AND a.name != 'import'),
                  (SELECT COUNT(*) FROM labels l WHERE l.pair_id = p.id AND l.superseded = 0 AND l.choice = 'a'),
                  (SELECT COUNT(*) FROM labels l WHERE l.pair_id = p.id AND l.superseded = 0 AND l.choice = 'b')
           FROM pairs p ORDER BY p.id""")]


def test_a_full_disk_mid_import_says_so_and_keeps_the_counting_trigger(tmp_path, monkeypatch):
    """SQLite may end the transaction itself (a full disk): the error seen is that one, not a failed re-creation of
    the trigger or a rollback with no transaction, and the store keeps its triggers."""
    import sqlite3

    monkeypatch.setattr(importing, "CHUNK_ROWS", 500)
    ws = Workspace(tmp_path / "ws")
    triggers = ws.query("SELECT sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name")
    src = tmp_path / "f.jsonl"
    src.write_text("".join(json.dumps({"prompt": f"q{i} " + "x" * 200, "chosen": f"right {i}",
                                       "rejected": f"wrong {i}"}) + "\n" for i in range(3000)))
    con = ws.connect()
    con.execute(f"PRAGMA max_page_count = {con.execute('PRAGMA page_count').fetchone()[0] + 60}")
    with pytest.raises(sqlite3.OperationalError, match="full"):
        importing.import_file(ws, src)
    assert ws.query("SELECT sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name") == triggers
    assert counted(ws) == recounted(ws)


def test_the_label_tab_says_an_import_stopped_by_a_full_disk_kept_what_it_wrote(tmp_path, monkeypatch):
    """Checking finds nothing wrong; the disk fills while the rows are written: the page does not say 'nothing was
    changed' (the chunks committed stay), it says what stopped it and that importing again adds the rest."""
    from rloo_studio.studio import Studio
    from rloo_studio.ui.label_data import ImportInputs, do_import

    monkeypatch.setattr(importing, "CHUNK_ROWS", 100)
    studio = Studio(tmp_path / "ws", seed_demo=False)
    src = tmp_path / "f.jsonl"
    src.write_text("".join(json.dumps({"prompt": f"q{i} " + "x" * 200, "chosen": f"right {i}",
                                       "rejected": f"wrong {i}"}) + "\n" for i in range(3000)))
    con = studio.ws.connect()
    con.execute(f"PRAGMA max_page_count = {con.execute('PRAGMA page_count').fetchone()[0] + 200}")
    said = do_import(studio, ImportInputs(path=str(src)), progress=lambda *a, **k: None)[0]
    written = studio.ws.query("SELECT COUNT(*) FROM pairs")[0][0]
    assert 0 < written < 3000
    assert "The import stopped: The disk is full" in said and "The rows it had written are kept" in said, said
    assert "nothing was changed" not in said and "Traceback" not in said


KILLED_MID_IMPORT = textwrap.dedent("""
    import os, sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    from rloo_studio.core.workspace import Workspace
    from rloo_studio.label import import_store, importing

    importing.CHUNK_ROWS, import_store.SET_ASIDE_ROWS = 100, 1000
    def killed(fraction, text):
        if text.startswith("writing: 1,000 "):
            os._exit(9)  # no finally runs, as when the process is killed
    importing.import_file(Workspace(sys.argv[2]), sys.argv[3], progress=killed)
""")


def test_a_big_import_writes_without_two_indexes_and_leaves_them_there_however_it_ends(tmp_path, monkeypatch):
    """An import of SET_ASIDE_ROWS rows or more drops the prompts' NOCASE index and the pairs' key index while it
    writes: after it ends, is stopped, fails on a full disk or is killed, they are there (the last two: when the
    workspace next opens), the Records tab's prompt order is right, and importing the file again adds nothing."""
    import sqlite3

    from rloo_studio.label import records

    monkeypatch.setattr(importing, "CHUNK_ROWS", 100)
    monkeypatch.setattr(import_store, "SET_ASIDE_ROWS", 1000)
    rows = [{"prompt": f"Q{(i * 7919) % 3000:05d} " + "x" * 200, "chosen": f"right {i}", "rejected": f"wrong {i}"}
            for i in range(3000)]
    src = tmp_path / "f.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))

    def has_index(ws) -> bool:  # both: the prompts' NOCASE index and the pairs' key index
        return len(ws.query("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name IN "
                            "('prompts_text_nocase', 'pairs_dedup_key')")) == 2

    def prompt_order_right(ws) -> bool:
        shown = [r["prompt"] for r in records.query(ws, sort="prompt", per_page=50).rows]
        stored = sorted(r[0] for r in ws.query("SELECT text FROM prompts"))
        return shown == stored[:50]

    seen = []
    ws = Workspace(tmp_path / "ended")
    importing.import_file(ws, src,
                          progress=lambda f, text: seen.append(has_index(ws)) if text.startswith("writing:") else None)
    assert seen and not any(seen)  # set aside while it wrote (what makes the 1M import 5-8% faster)
    assert has_index(ws) and prompt_order_right(ws)
    small = Workspace(tmp_path / "small")  # smaller than SET_ASIDE_ROWS: written with the index kept up
    importing.import_file(small, _head(src, tmp_path / "small.jsonl", 500),
                          progress=lambda f, text: seen.append(has_index(small))
                          if text.startswith("writing:") else None)
    assert seen[-1] and has_index(small)

    stopped = Workspace(tmp_path / "stopped")  # Ctrl-C in the CLI: made again before the stop propagates

    def interrupt(fraction, text):
        if text.startswith("writing: 1,000 "):
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        importing.import_file(stopped, src, progress=interrupt)
    assert has_index(stopped) and prompt_order_right(stopped)

    full = Workspace(tmp_path / "full")  # the error seen is the full disk's; the next open makes the index
    con = full.connect()
    con.execute(f"PRAGMA max_page_count = {con.execute('PRAGMA page_count').fetchone()[0] + 60}")
    with pytest.raises(sqlite3.OperationalError, match="full"):
        importing.import_file(full, src)
    con.execute("PRAGMA max_page_count = 1073741823")
    assert has_index(Workspace(tmp_path / "full")) and prompt_order_right(Workspace(tmp_path / "full"))

    p = subprocess.run([sys.executable, "-c", KILLED_MID_IMPORT, str(ROOT), str(tmp_path / "killed"), str(src)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 9, p.stderr[-3000:]
    probe = sqlite3.connect(tmp_path / "killed" / "studio.db")
    assert 0 < probe.execute("SELECT COUNT(*) FROM pairs").fetchone()[0] < 3000  # killed mid-way
    assert not probe.execute("SELECT 1 FROM sqlite_master WHERE name IN ('prompts_text_nocase', 'pairs_dedup_key')"
                             ).fetchall()
    probe.close()
    killed = Workspace(tmp_path / "killed")
    assert has_index(killed) and prompt_order_right(killed)
    importing.import_file(killed, src)  # the rest, and nothing twice
    assert [killed.query(f"SELECT COUNT(*) FROM {t}")[0][0] for t in ("pairs", "labels")] == [3000, 3000]
    again = importing.import_file(ws, src)
    assert (again.pairs, again.skipped) == (0, 3000) and has_index(ws)


def _head(src: Path, dst: Path, n: int) -> Path:
    dst.write_text("".join(src.read_text().splitlines(keepends=True)[:n]))
    return dst
