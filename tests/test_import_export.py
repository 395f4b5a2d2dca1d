import json

import pandas as pd
import pytest

from rloo_studio import labels as L
from rloo_studio.errors import DataError
from rloo_studio.exporting import export
from rloo_studio.importing import import_file
from rloo_studio.prompts import load_prompt_set

STD = [
    {"prompt": "What is 1+1?", "chosen": "<think>1+1=2</think>2", "rejected": "3"},
    {"prompt": "Name a color.", "chosen": "Blue.", "rejected": "Seven."},
    {"prompt": "Say hi", "chosen": "Hi!", "rejected": "No."},
]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def snapshot(ws):
    return {t: ws.query(f"SELECT COUNT(*) FROM {t}")[0][0] for t in ("prompts", "responses", "pairs", "labels")}


def pairs_of(ws):
    return sorted((p["prompt"], p["chosen"], p["rejected"]) for p in L.preference_pairs(ws))


def conv(rows):
    return [{"prompt": [{"role": "user", "content": r["prompt"]}],
             "chosen": [{"role": "assistant", "content": r["chosen"]}],
             "rejected": [{"role": "assistant", "content": r["rejected"]}]} for r in rows]


@pytest.mark.parametrize("fmt", ["standard", "conversational"])
@pytest.mark.parametrize("suffix", [".jsonl", ".parquet", ""])
def test_round_trip_every_format(empty_workspace, tmp_path, fmt, suffix):
    src = write_jsonl(tmp_path / "in.jsonl", STD if fmt == "standard" else conv(STD))
    res = import_file(empty_workspace, src)
    assert (res.kind, res.rows, res.pairs) == ("preference", 3, 3)
    out = tmp_path / f"out{suffix or '_ds'}"
    export(empty_workspace, out, fmt=fmt)
    from rloo_studio.workspace import Workspace

    ws2 = Workspace(tmp_path / "ws2")
    import_file(ws2, out)
    assert pairs_of(ws2) == pairs_of(empty_workspace) == sorted((r["prompt"], r["chosen"], r["rejected"]) for r in STD)
    if suffix == ".jsonl":
        rows = [json.loads(x) for x in out.read_text().splitlines()]
        if fmt == "conversational":
            assert rows[0]["prompt"][0]["role"] == "user" and rows[0]["chosen"][0]["role"] == "assistant"
        else:
            assert set(rows[0]) == {"prompt", "chosen", "rejected"}


def test_csv_and_implicit_prompt_hh_style(empty_workspace, tmp_path):
    pd.DataFrame(STD).to_csv(tmp_path / "p.csv", index=False)
    assert import_file(empty_workspace, tmp_path / "p.csv").pairs == 3
    hh = [{"chosen": "\n\nHuman: hi there\n\nAssistant: Hello! How can I help?",
           "rejected": "\n\nHuman: hi there\n\nAssistant: Go away."}]
    import_file(empty_workspace, write_jsonl(tmp_path / "hh.jsonl", hh))
    got = [p for p in L.preference_pairs(empty_workspace) if "Human" in p["prompt"]][0]
    assert got["prompt"] == "\n\nHuman: hi there\n\nAssistant:"
    assert got["chosen"] == " Hello! How can I help?" and got["rejected"] == " Go away."


def test_implicit_conversational_prompt(empty_workspace, tmp_path):
    rows = [{"chosen": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}],
             "rejected": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "5"}]}]
    import_file(empty_workspace, write_jsonl(tmp_path / "c.jsonl", rows))
    assert pairs_of(empty_workspace) == [("2+2?", "4", "5")]


def test_prompt_sets_and_candidates(empty_workspace, tmp_path):
    res = import_file(empty_workspace, write_jsonl(tmp_path / "ps.jsonl", [{"prompt": "p1", "answer": "1"},
                                                                          {"prompt": "p2", "answer": "2"}]))
    assert res.kind == "prompts"
    assert load_prompt_set(empty_workspace, "ps.jsonl") == [{"prompt": "p1", "answer": "1"}, {"prompt": "p2", "answer": "2"}]
    res = import_file(empty_workspace, write_jsonl(tmp_path / "cand.jsonl",
                                                   [{"prompt": "q", "responses": ["r1", "r2", "r3"]}]))
    assert (res.kind, res.pairs) == ("candidates", 3)
    pd.DataFrame([{"prompt": "q2", "response_1": "x", "response_2": "y"}]).to_csv(tmp_path / "c.csv", index=False)
    assert import_file(empty_workspace, tmp_path / "c.csv").pairs == 1
    assert L.preference_pairs(empty_workspace) == []  # candidates arrive unlabeled
    s = L.next_pair(empty_workspace, "ann", "s")
    assert s.prompt in ("q", "q2")


BAD = [
    ("trunc.jsonl", lambda p: p.write_text(json.dumps(STD[0]) + "\n" + '{"prompt": "x", "chosen": "a", "rej'),
     "trunc.jsonl line 2: not valid JSON"),
    ("missing.jsonl", lambda p: write_jsonl(p, [STD[0], {"prompt": "x", "chosen": "a"}]),
     "missing.jsonl line 2: missing field 'rejected'"),
    ("misnamed.jsonl", lambda p: write_jsonl(p, [{"question": "x", "good": "a", "bad": "b"}]),
     "misnamed.jsonl: no usable columns. Found: bad, good, question"),
    ("same.jsonl", lambda p: write_jsonl(p, [STD[0], {"prompt": "x", "chosen": "a", "rejected": "a"}]),
     "same.jsonl line 2: 'chosen' is identical to 'rejected'"),
    ("empty_resp.jsonl", lambda p: write_jsonl(p, [{"prompt": "x", "chosen": "  ", "rejected": "b"}]),
     "empty_resp.jsonl line 1, field 'chosen': empty text"),
    ("types.jsonl", lambda p: write_jsonl(p, [{"prompt": "x", "chosen": 5, "rejected": "b"}]),
     "types.jsonl line 1, field 'chosen': expected text, got int"),
    ("latin1.jsonl", lambda p: p.write_bytes(json.dumps(STD[0]).encode() + b'\n{"prompt": "caf\xe9", "chosen": "a", "rejected": "b"}\n'),
     "latin1.jsonl line 2: not UTF-8 text"),
    ("empty.jsonl", lambda p: p.write_text(""), "empty.jsonl: the file is empty"),
    ("other.csv", lambda p: p.write_text("query,answer_good,answer_bad\nx,a,b\n"),
     "other.csv: no usable columns. Found: answer_bad, answer_good, query"),
    ("huge.jsonl", lambda p: write_jsonl(p, [{"prompt": "x", "chosen": "y" * (10 * 2**20), "rejected": "b"}]),
     "huge.jsonl line 1, field 'chosen': 10,485,760 characters, over the 1,000,000 limit"),
    ("csvtypes.csv", lambda p: p.write_text("prompt,chosen,rejected\nx,a,b\ny,,b\n"),
     "csvtypes.csv row 3, field 'chosen': empty text"),
    ("notes.txt", lambda p: p.write_text("hello"), "notes.txt: unknown file type .txt"),
    ("badconv.jsonl", lambda p: write_jsonl(p, [{"prompt": [{"role": "user", "content": "x"}],
                                                 "chosen": [{"role": "bot", "content": "a"}],
                                                 "rejected": [{"role": "assistant", "content": "b"}]}]),
     "badconv.jsonl line 1, field 'chosen', message 1: unknown role 'bot'"),
]


@pytest.mark.parametrize("name,make,message", BAD, ids=[b[0] for b in BAD])
def test_bad_input_names_file_row_field_and_changes_nothing(workspace, tmp_path, name, make, message):
    path = tmp_path / name
    make(path)
    before = snapshot(workspace)
    with pytest.raises(DataError) as e:
        import_file(workspace, path)
    assert str(e.value).startswith(message), str(e.value)
    assert "Traceback" not in str(e.value)
    assert snapshot(workspace) == before


def test_large_file_all_or_nothing_with_progress(empty_workspace, tmp_path):
    rows = [{"prompt": f"p{i}", "chosen": f"good {i}", "rejected": f"bad {i}"} for i in range(50_000)]
    good = write_jsonl(tmp_path / "big.jsonl", rows)
    # The same file with one broken row at the very end: nothing may be written.
    bad = tmp_path / "big_bad.jsonl"
    bad.write_text(good.read_text() + '{"prompt": "x", "chosen": "same", "rejected": "same"}\n')
    with pytest.raises(DataError, match="line 50001"):
        import_file(empty_workspace, bad)
    assert snapshot(empty_workspace)["pairs"] == 0
    seen = []
    res = import_file(empty_workspace, good, progress=lambda f, msg: seen.append(f))
    assert res.pairs == 50_000 and snapshot(empty_workspace)["labels"] == 50_000
    assert len(seen) > 5 and seen == sorted(seen) and seen[-1] <= 1.0


def test_export_ties_apart_split_and_datasets_dict(workspace, tmp_path):
    s = L.next_pair(workspace, "ann", "s")
    L.save_label(workspace, s, "ann", "s", "tie")
    t = L.next_pair(workspace, "ann", "s")
    L.save_label(workspace, t, "ann", "s", "skip")
    n = len(L.preference_pairs(workspace))
    res = export(workspace, tmp_path / "e.jsonl", ties_apart=True, test_fraction=0.2)
    names = sorted(p.name for p in res.paths)
    assert names == ["e.test.jsonl", "e.ties.jsonl", "e.train.jsonl"]
    train = (tmp_path / "e.train.jsonl").read_text().splitlines()
    test = (tmp_path / "e.test.jsonl").read_text().splitlines()
    assert len(train) + len(test) == n == res.rows and len(test) == int(n * 0.2)
    assert res.ties == 1 and res.skipped == 1
    from datasets import load_from_disk

    export(workspace, tmp_path / "dd", test_fraction=0.1)
    dd = load_from_disk(str(tmp_path / "dd"))
    assert set(dd) == {"train", "test"} and dd["train"].num_rows + dd["test"].num_rows == n


def test_export_with_nothing_labeled(empty_workspace, tmp_path):
    with pytest.raises(DataError, match="no labeled pairs"):
        export(empty_workspace, tmp_path / "x.jsonl")
