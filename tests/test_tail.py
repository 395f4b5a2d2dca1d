"""runs/tail.py: a run's JSON-lines files read from where the last read stopped, and read again from the start
when a resume rewinds them (runner.rewind), so a live page shows what the file holds."""
import json
import os

from rloo_studio.runs import tail as T
from rloo_studio.runs.runner import RunContext, read_jsonl, rewind


def append(path, *records, end="\n"):
    with open(path, "a") as f:
        f.write("".join(json.dumps(r) + end for r in records))


def test_reads_what_was_appended_since_the_last_read(tmp_path):
    path = tmp_path / "metrics.jsonl"
    t = T.Tail(path)
    assert t.read()[0] == []  # no file yet
    append(path, {"step": 1, "loss": 1.0}, {"step": 2, "loss": 0.5})
    recs, v1 = t.read()
    assert recs == read_jsonl(path)
    assert t.read() == (recs, v1)  # nothing new: the same records, the same version
    append(path, {"step": 3, "loss": 0.25})
    recs, v2 = t.read()
    assert [r["step"] for r in recs] == [1, 2, 3] and v2 != v1
    assert t._offset == path.stat().st_size  # the next read starts at the end, it does not re-parse


def test_a_line_being_written_waits_for_its_newline_and_a_cut_line_is_skipped(tmp_path):
    path = tmp_path / "metrics.jsonl"
    append(path, {"step": 1})
    with open(path, "a") as f:
        f.write('{"step": 2, "lo')  # the writer is mid-line
    t = T.Tail(path)
    assert [r["step"] for r in t.read()[0]] == [1]
    with open(path, "a") as f:
        f.write('ss": 0.5}\n')
    assert t.read()[0] == [{"step": 1}, {"step": 2, "loss": 0.5}]
    with open(path, "a") as f:
        f.write('{"step": 3, "cut by a cra\n')  # a crash cut this line; the job wrote on after a restart
    append(path, {"step": 3})
    assert t.read()[0] == read_jsonl(path) == [{"step": 1}, {"step": 2, "loss": 0.5}, {"step": 3}]


def test_a_resume_rewind_is_read_from_the_start(tmp_path):
    """runner.rewind replaces the file with a shorter one; the resumed part then appends its own steps 3..."""
    ctx = RunContext(None, "r", tmp_path)
    path = tmp_path / "metrics.jsonl"
    append(path, *({"step": s, "loss": 1.0} for s in range(1, 6)))
    t = T.Tail(path)
    assert len(t.read()[0]) == 5
    rewind(ctx, 2)
    assert [r["step"] for r in t.read()[0]] == [1, 2]
    # the same again, but the resumed part writes more than was forgotten before the page looks
    append(path, *({"step": s, "loss": 0.5} for s in range(3, 6)))
    t.read()
    rewind(ctx, 2)
    append(path, *({"step": s, "loss": 0.1} for s in range(3, 12)))
    assert path.stat().st_size > t._offset  # larger than what was read: only the inode says it is new
    assert t.read()[0] == read_jsonl(path)
    assert [r["loss"] for r in t.read()[0]][2:4] == [0.1, 0.1]


def test_a_file_rewritten_in_place_or_deleted_is_read_again(tmp_path):
    path = tmp_path / "metrics.jsonl"
    append(path, {"step": 1, "loss": 1.0}, {"step": 2, "loss": 1.0})
    t = T.Tail(path)
    t.read()
    with open(path, "r+") as f:  # the same inode, other bytes, then more lines
        f.write(json.dumps({"step": 1, "loss": 7.0}) + "\n" + json.dumps({"step": 2, "loss": 7.0}) + "\n")
    append(path, {"step": 3, "loss": 7.0})
    assert [r["loss"] for r in t.read()[0]] == [7.0, 7.0, 7.0]
    os.remove(path)
    recs, version = t.read()
    assert recs == [] and version
    append(path, {"step": 1})
    assert t.read()[0] == [{"step": 1}]


def test_last_steps_keeps_the_latest_steps_only(tmp_path):
    path = tmp_path / "samples.jsonl"
    t = T.Tail(path, last_steps=2)
    append(path, *({"step": s, "i": i} for s in (1, 2, 3) for i in range(3)))
    assert {r["step"] for r in t.read()[0]} == {2, 3} and len(t.read()[0]) == 6
    append(path, {"step": 4, "i": 0})
    assert [(r["step"], r["i"]) for r in t.read()[0]] == [(3, 0), (3, 1), (3, 2), (4, 0)]


def test_one_shared_tail_per_file_and_versions_never_repeat(tmp_path):
    a, b = tmp_path / "a" / "metrics.jsonl", tmp_path / "b" / "metrics.jsonl"
    for p in (a, b):
        p.parent.mkdir()
        append(p, {"step": 1})
    assert T.tail(a) is T.tail(str(a)) and T.tail(a) is not T.tail(b)
    assert T.tail(a) is not T.tail(a, last_steps=5)
    (ra, va), (rb, vb) = T.records(a.parent), T.records(b.parent)
    assert ra == rb and va != vb  # a version names one state of one file: a page's "drawn" key stays exact
    for i in range(T.KEPT + 1):  # only the most recently used are kept
        T.tail(tmp_path / f"x{i}.jsonl")
    assert len(T._tails) == T.KEPT
