import json

import pandas as pd
import pytest

from rloo_studio.core.errors import DataError
from rloo_studio.label import store as L
from rloo_studio.label.exporting import export
from rloo_studio.label.importing import import_file
from rloo_studio.label.prompts import load_prompt_set

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
    from rloo_studio.core.workspace import Workspace

    ws2 = Workspace(tmp_path / "ws2")
    import_file(ws2, out)
    assert pairs_of(ws2) == pairs_of(empty_workspace) == sorted((r["prompt"], r["chosen"], r["rejected"]) for r in STD)
    if suffix == ".jsonl":
        from trl.data_utils import is_conversational, maybe_extract_prompt

        rows = [json.loads(x) for x in out.read_text().splitlines()]
        if fmt == "conversational":
            assert rows[0]["prompt"][0]["role"] == "user" and rows[0]["chosen"][0]["role"] == "assistant"
        else:
            assert set(rows[0]) == {"prompt", "chosen", "rejected"}
        # TRL reads every exported row as its own preference format: explicit prompt, of the kind asked for
        assert all(is_conversational(r) == (fmt == "conversational") and maybe_extract_prompt(r) == r for r in rows)


def test_csv_and_implicit_prompt(empty_workspace, tmp_path):
    pd.DataFrame(STD).to_csv(tmp_path / "p.csv", index=False)
    assert import_file(empty_workspace, tmp_path / "p.csv").pairs == 3
    rows = [{"chosen": "Question: what is 2+2?\nAnswer: 4", "rejected": "Question: what is 2+2?\nAnswer: 5"}]
    import_file(empty_workspace, write_jsonl(tmp_path / "implicit.jsonl", rows))
    got = [p for p in L.preference_pairs(empty_workspace) if "2+2" in p["prompt"]][0]
    assert (got["prompt"], got["chosen"], got["rejected"]) == ("Question: what is 2+2?\n", "Answer: 4", "Answer: 5")


def stored(ws):
    """Every imported pair as stored: (prompt text, prompt extra, chosen, rejected, label choice, annotator)."""
    return [(r["text"], json.loads(r["extra"]), r["a"], r["b"], r["choice"], r["name"]) for r in ws.query(
        """SELECT pr.text, pr.extra, ra.text AS a, rb.text AS b, l.choice, an.name FROM pairs p
           JOIN prompts pr ON pr.id = p.prompt_id JOIN responses ra ON ra.id = p.response_a
           JOIN responses rb ON rb.id = p.response_b JOIN labels l ON l.pair_id = p.id
           JOIN annotators an ON an.id = l.annotator_id ORDER BY p.id""")]


def ultrafeedback(prompt, good, bad, conv_prompt=None, pid="p0"):
    """A row of HuggingFaceH4/ultrafeedback_binarized: whole conversations that repeat the prompt."""
    user = [{"role": "user", "content": conv_prompt or prompt}]
    chosen = user + [{"role": "assistant", "content": good}]
    return {"prompt": prompt, "prompt_id": pid, "chosen": chosen,
            "rejected": user + [{"role": "assistant", "content": bad}],
            "messages": chosen, "score_chosen": 8.5, "score_rejected": 3.0}


UF = [ultrafeedback("How many legs has a spider?", "Eight.", "Six.", pid="a1"),
      ultrafeedback("Name a prime.", "7", "8", pid="b2")]


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_ultrafeedback_binarized_keeps_the_reply_and_the_columns(empty_workspace, tmp_path, suffix):
    path = tmp_path / f"uf{suffix}"
    write_jsonl(path, UF) if suffix == ".jsonl" else pd.DataFrame(UF).to_parquet(path)
    res = import_file(empty_workspace, path)
    assert (res.kind, res.rows, res.pairs, res.skipped) == ("preference", 2, 2, 0)
    assert res.columns == ("prompt_id", "score_chosen", "score_rejected")
    cols = {"score_chosen": 8.5, "score_rejected": 3.0}
    assert stored(empty_workspace) == [
        ("How many legs has a spider?", {"prompt_id": "a1", **cols}, "Eight.", "Six.", "a", "import"),
        ("Name a prime.", {"prompt_id": "b2", **cols}, "7", "8", "a", "import")]
    # exported conversational, the prompt is the user turn alone and the replies the assistant turns alone
    export(empty_workspace, tmp_path / "out.jsonl", fmt="conversational")
    row = json.loads((tmp_path / "out.jsonl").read_text().splitlines()[0])
    assert row["prompt"] == [{"role": "user", "content": "How many legs has a spider?"}]
    assert row["chosen"] == [{"role": "assistant", "content": "Eight."}]


def test_a_messages_column_that_is_not_the_chosen_conversation_is_kept_apart(empty_workspace, tmp_path):
    row = {**UF[0], "messages": [{"role": "user", "content": "something else"}]}
    import_file(empty_workspace, write_jsonl(tmp_path / "m.jsonl", [row]))
    (_, extra, *_), = stored(empty_workspace)
    assert extra["file_messages"] == row["messages"] and "messages" not in extra  # never taken for prompt turns


HH_MULTI = ("\n\nHuman: I want to bake bread.\n\nAssistant: What kind of bread?"
            "\n\nHuman: Sourdough. How long should it rise?\n\nAssistant: ")


def test_anthropic_hh_text_becomes_prompt_turns_and_replies(empty_workspace, tmp_path):
    rows = [{"chosen": "\n\nHuman: What is the capital of France?\n\nAssistant: Paris.",
             "rejected": "\n\nHuman: What is the capital of France?\n\nAssistant: London, I think."},
            {"chosen": HH_MULTI + "About 4 to 12 hours, until it has doubled.", "rejected": HH_MULTI + "Ten minutes."}]
    res = import_file(empty_workspace, write_jsonl(tmp_path / "hh.jsonl", rows))
    assert (res.kind, res.pairs) == ("preference", 2)
    turns = [{"role": "user", "content": "I want to bake bread."},
             {"role": "assistant", "content": "What kind of bread?"},
             {"role": "user", "content": "Sourdough. How long should it rise?"}]
    assert stored(empty_workspace) == [
        ("What is the capital of France?", {}, "Paris.", "London, I think.", "a", "import"),
        ("Sourdough. How long should it rise?", {"messages": turns}, "About 4 to 12 hours, until it has doubled.",
         "Ten minutes.", "a", "import")]
    # the turns are what a conversational export writes as the prompt; the standard export says what it cuts
    export(empty_workspace, tmp_path / "c.jsonl", fmt="conversational")
    assert json.loads((tmp_path / "c.jsonl").read_text().splitlines()[1])["prompt"] == turns
    res = export(empty_workspace, tmp_path / "s.jsonl")
    assert "1 pairs have a prompt of several messages" in res.summary()
    # the Label tab is handed the turns of the multi-turn prompt (and none for a single-turn one)
    seen = {}
    while (s := L.next_pair(empty_workspace, "reader", "s1")) and s.pair_id not in seen:
        seen[s.pair_id] = s.turns
        L.save_label(empty_workspace, s, "reader", "s1", "left")
    assert sorted(seen.values(), key=bool) == [None, turns]


def test_hh_with_a_separate_prompt_column(empty_workspace, tmp_path):
    rows = [{"prompt": HH_MULTI, "chosen": " About 4 to 12 hours.", "rejected": " Ten minutes."}]
    import_file(empty_workspace, write_jsonl(tmp_path / "hhp.jsonl", rows))
    (prompt, extra, chosen, rejected, *_), = stored(empty_workspace)
    assert prompt == "Sourdough. How long should it rise?" and len(extra["messages"]) == 3
    assert (chosen, rejected) == (" About 4 to 12 hours.", " Ten minutes.")


def test_implicit_conversational_prompt(empty_workspace, tmp_path):
    rows = [{"chosen": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}],
             "rejected": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "5"}]}]
    import_file(empty_workspace, write_jsonl(tmp_path / "c.jsonl", rows))
    assert pairs_of(empty_workspace) == [("2+2?", "4", "5")]


def test_prompt_sets_and_candidates(empty_workspace, tmp_path):
    res = import_file(empty_workspace, write_jsonl(tmp_path / "ps.jsonl", [{"prompt": "p1", "answer": "1"},
                                                                          {"prompt": "p2", "answer": "2"}]))
    assert res.kind == "prompts"
    assert load_prompt_set(empty_workspace, "ps.jsonl") == [{"prompt": "p1", "answer": "1"},
                                                            {"prompt": "p2", "answer": "2"}]
    res = import_file(empty_workspace, write_jsonl(tmp_path / "cand.jsonl",
                                                   [{"prompt": "q", "responses": ["r1", "r2", "r3"]}]))
    assert (res.kind, res.pairs) == ("candidates", 3)
    pd.DataFrame([{"prompt": "q2", "response_1": "x", "response_2": "y"}]).to_csv(tmp_path / "c.csv", index=False)
    assert import_file(empty_workspace, tmp_path / "c.csv").pairs == 1
    assert L.preference_pairs(empty_workspace) == []  # candidates arrive unlabeled
    s = L.next_pair(empty_workspace, "ann", "s")
    assert s.prompt in ("q", "q2")


def test_importing_the_same_file_twice_adds_nothing_the_second_time(empty_workspace, tmp_path):
    ws, src = empty_workspace, write_jsonl(tmp_path / "std.jsonl", STD)
    assert import_file(ws, src).pairs == 3
    before = snapshot(ws)
    res = import_file(ws, src)
    assert (res.rows, res.pairs, res.skipped) == (3, 0, 3)
    assert "skipped 3 rows already in the workspace" in res.summary()
    assert snapshot(ws) == before
    # under another name: the same comparisons with the same labels, still skipped
    assert import_file(ws, src, name="other").skipped == 3 and snapshot(ws) == before
    # on purpose: every row again, as new pairs
    res = import_file(ws, src, keep_duplicates=True)
    assert (res.pairs, res.skipped) == (3, 0) and snapshot(ws)["pairs"] == 6


def labels_per_pair(ws) -> dict[tuple[str, str, str], list[tuple[str, str]]]:
    """(prompt, response A, response B) -> the current labels of that pair, as (annotator, choice)."""
    out = {}
    for r in ws.query("""SELECT pr.text, ra.text, rb.text, a.name, l.choice FROM pairs p
            JOIN prompts pr ON pr.id = p.prompt_id JOIN responses ra ON ra.id = p.response_a
            JOIN responses rb ON rb.id = p.response_b
            LEFT JOIN labels l ON l.pair_id = p.id AND l.superseded = 0 LEFT JOIN annotators a ON a.id = l.annotator_id
            ORDER BY p.id, l.id"""):
        out.setdefault(tuple(r[:3]), []).extend([(r[3], r[4])] if r[3] else [])
    return out


def test_a_preference_row_for_an_unlabeled_pair_adds_its_label_to_that_pair(empty_workspace, tmp_path):
    ws = empty_workspace
    cands = [{"prompt": r["prompt"], "responses": [r["rejected"], r["chosen"]]} for r in STD]  # B is the chosen one
    assert import_file(ws, write_jsonl(tmp_path / "cand.jsonl", cands)).pairs == 3
    before = snapshot(ws)
    res = import_file(ws, write_jsonl(tmp_path / "std.jsonl", STD))
    assert (res.pairs, res.labeled, res.split, res.skipped) == (0, 3, 0, 0)
    assert "3 rows matched pairs already here: their labels were added" in res.summary()
    assert snapshot(ws) == {**before, "labels": 3}  # no pair, prompt or response written: three labels
    assert labels_per_pair(ws) == {(r["prompt"], r["rejected"], r["chosen"]): [("import", "b")] for r in STD}
    assert pairs_of(ws) == sorted((r["prompt"], r["chosen"], r["rejected"]) for r in STD)
    # the same rows again: those pairs have those labels, so the rows are true duplicates
    again = import_file(ws, tmp_path / "std.jsonl")
    assert (again.labeled, again.skipped) == (0, 3) and snapshot(ws) == {**before, "labels": 3}
    assert "skipped 3 rows already in the workspace" in again.summary()


def test_a_row_with_chosen_and_rejected_swapped_adds_the_opposite_label(empty_workspace, tmp_path):
    ws, src = empty_workspace, write_jsonl(tmp_path / "std.jsonl", STD)
    import_file(ws, src)
    before = snapshot(ws)
    swapped = write_jsonl(tmp_path / "swapped.jsonl", [{**r, "chosen": r["rejected"], "rejected": r["chosen"]}
                                                        for r in STD[:2]])
    res = import_file(ws, swapped)
    assert (res.pairs, res.labeled, res.split, res.skipped) == (0, 2, 2, 0)
    assert "2 rows matched pairs already here: their labels were added (2 the opposite of the label imported " \
           "before, so those pairs show a split vote)" in res.summary()
    assert snapshot(ws) == {**before, "labels": 5}
    got = labels_per_pair(ws)
    for r in STD[:2]:  # a split vote: one imported label each way
        assert got[(r["prompt"], r["chosen"], r["rejected"])] == [("import", "a"), ("import", "b")]
    assert got[(STD[2]["prompt"], STD[2]["chosen"], STD[2]["rejected"])] == [("import", "a")]
    assert pairs_of(ws) == [(STD[2]["prompt"], STD[2]["chosen"], STD[2]["rejected"])]  # a split counts as a tie
    # both of its labels are there now: the swapped file again is a true duplicate, and so is the original
    assert import_file(ws, swapped).skipped == 2 and import_file(ws, src).skipped == 3
    assert snapshot(ws) == {**before, "labels": 5}


def test_a_row_and_its_swap_in_one_file_make_one_pair_with_a_split_vote(empty_workspace, tmp_path):
    row = STD[0]
    res = import_file(empty_workspace, write_jsonl(tmp_path / "both.jsonl", [
        row, {**row, "chosen": row["rejected"], "rejected": row["chosen"]}, row]))
    assert (res.pairs, res.labeled, res.split, res.skipped, res.repeated) == (1, 1, 1, 1, 1)
    assert "split vote" in res.summary() and "skipped 1 repeated in the file" in res.summary()
    assert labels_per_pair(empty_workspace) == {(row["prompt"], row["chosen"], row["rejected"]):
                                                [("import", "a"), ("import", "b")]}


def test_repeats_within_one_file_are_counted_apart(empty_workspace, tmp_path):
    res = import_file(empty_workspace, write_jsonl(tmp_path / "rep.jsonl", [STD[0], STD[1], STD[0]]))
    assert (res.pairs, res.skipped, res.repeated) == (2, 1, 1)
    assert "skipped 1 repeated in the file" in res.summary()


def test_candidates_and_prompt_sets_are_idempotent(empty_workspace, tmp_path):
    ws = empty_workspace
    cand = write_jsonl(tmp_path / "cand.jsonl", [{"prompt": "q", "responses": ["r1", "r2", "r3"]}])
    assert import_file(ws, cand).pairs == 3
    again = import_file(ws, cand)
    assert (again.pairs, again.skipped) == (0, 1)
    # one more candidate: only its pairs with the others are new
    more = write_jsonl(tmp_path / "more.jsonl", [{"prompt": "q", "responses": ["r1", "r2", "r3", "r4"]}])
    assert (import_file(ws, more).pairs, snapshot(ws)["pairs"]) == (3, 6)
    assert import_file(ws, cand, keep_duplicates=True).pairs == 3
    ps = write_jsonl(tmp_path / "ps.jsonl", [{"prompt": "p1", "answer": "1"}, {"prompt": "p2", "answer": "2"}])
    assert import_file(ws, ps).prompts == 2
    res = import_file(ws, ps)
    assert (res.prompts, res.skipped) == (0, 2)
    assert res.summary() == ("Imported 0 prompts into prompt set 'ps.jsonl'. Skipped 2 prompts already in that "
                             "prompt set.")
    assert len(load_prompt_set(ws, "ps.jsonl")) == 2


def test_a_prompt_set_is_imported_again_only_when_asked(empty_workspace, tmp_path):
    ws = empty_workspace
    ps = write_jsonl(tmp_path / "ps.jsonl", [{"prompt": "p1", "answer": "1"}, {"prompt": "p2", "answer": "2"}])
    import_file(ws, ps)
    ids = ws.query("SELECT id, text FROM prompts ORDER BY id")
    fixed = write_jsonl(tmp_path / "fixed.jsonl", [{"prompt": "p1", "answer": "1"}, {"prompt": "p2", "answer": "22"},
                                                   {"prompt": "p3", "answer": "3"}])
    res = import_file(ws, fixed, name="ps.jsonl")  # by default: the two prompts there are skipped, and counted
    assert (res.prompts, res.skipped, res.differ, res.replaced) == (1, 2, 1, 0)
    assert res.summary() == ("Imported 1 prompts into prompt set 'ps.jsonl'. Skipped 2 prompts already in that "
                             "prompt set (1 with other column values than the file's; import again, keeping "
                             "duplicates, to take the file's).")
    assert load_prompt_set(ws, "ps.jsonl") == [{"prompt": "p1", "answer": "1"}, {"prompt": "p2", "answer": "2"},
                                               {"prompt": "p3", "answer": "3"}]
    res = import_file(ws, fixed, name="ps.jsonl", keep_duplicates=True)  # on purpose: every row written again
    assert (res.prompts, res.skipped, res.replaced) == (3, 0, 3)
    assert "Imported 3 prompts into prompt set 'ps.jsonl' (3 already there: a prompt set holds each prompt " \
           "once, so they took the file's columns)." == res.summary()
    assert load_prompt_set(ws, "ps.jsonl") == [{"prompt": "p1", "answer": "1"}, {"prompt": "p2", "answer": "22"},
                                               {"prompt": "p3", "answer": "3"}]
    assert ws.query("SELECT id, text FROM prompts ORDER BY id")[:2] == ids  # the same prompts, kept in place


def test_pairs_already_in_a_seeded_workspace_are_found(workspace, demo_data):
    """Pairs written before keys existed (the demo seed) are recognised too."""
    before = snapshot(workspace)
    res = import_file(workspace, demo_data / "pairs.jsonl")
    assert res.pairs == 0 and res.skipped == res.rows > 200
    assert snapshot(workspace) == before


def test_a_workspace_from_before_the_duplicate_check_is_migrated(tmp_path):
    """A store written by the previous schema (no dedup_key) opens, and its pairs are recognised on import."""
    import sqlite3

    from rloo_studio.core.workspace import SCHEMA, Workspace

    (tmp_path / "old").mkdir()
    con = sqlite3.connect(tmp_path / "old" / "studio.db")
    for i, step in enumerate(SCHEMA[:2]):
        con.executescript(step)
        con.execute(f"PRAGMA user_version={i + 1}")
    con.executescript("""INSERT INTO prompt_sets VALUES (1, 'std.jsonl', 'import:std.jsonl', 0);
        INSERT INTO prompts VALUES (1, 1, 'Say hi', '{}');
        INSERT INTO responses VALUES (1, 1, 'Hi!', 'import:std.jsonl', 0), (2, 1, 'No.', 'import:std.jsonl', 0);
        INSERT INTO pairs (id, prompt_id, response_a, response_b, source, created)
            VALUES (1, 1, 1, 2, 'std.jsonl', 0);""")
    con.commit()
    con.close()
    ws = Workspace(tmp_path / "old")
    assert ws.schema_version() == len(SCHEMA)
    res = import_file(ws, write_jsonl(tmp_path / "std.jsonl", STD))
    # the old unlabeled pair is recognised: no pair again, the row's label is added to it
    assert (res.pairs, res.labeled, res.skipped) == (2, 1, 0) and snapshot(ws)["pairs"] == 3
    assert labels_per_pair(ws)[("Say hi", "Hi!", "No.")] == [("import", "a")]


def test_cli_import_skips_duplicates_unless_asked(empty_workspace, tmp_path, capsys):
    from rloo_studio.cli import main

    src, ws = write_jsonl(tmp_path / "std.jsonl", STD), str(empty_workspace.root)
    assert main(["import", str(src), "--workspace", ws]) == 0
    assert main(["import", str(src), "--workspace", ws]) == 0
    assert "skipped 3 rows already in the workspace" in capsys.readouterr().out
    assert main(["import", str(src), "--workspace", ws, "--keep-duplicates"]) == 0
    assert "Imported 3 rows" in capsys.readouterr().out and snapshot(empty_workspace)["pairs"] == 6


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
    ("latin1.jsonl", lambda p: p.write_bytes(json.dumps(STD[0]).encode()
                                             + b'\n{"prompt": "caf\xe9", "chosen": "a", "rejected": "b"}\n'),
     "latin1.jsonl line 2: not UTF-8 text"),
    ("empty.jsonl", lambda p: p.write_text(""), "empty.jsonl: the file is empty"),
    ("other.csv", lambda p: p.write_text("query,answer_good,answer_bad\nx,a,b\n"),
     "other.csv: no usable columns. Found: answer_bad, answer_good, query"),
    ("huge.jsonl", lambda p: write_jsonl(p, [{"prompt": "x", "chosen": "y" * (10 * 2**20), "rejected": "b"}]),
     "huge.jsonl line 1, field 'chosen': 10,485,760 characters, over the 1,000,000 limit"),
    ("csvtypes.csv", lambda p: p.write_text("prompt,chosen,rejected\nx,a,b\ny,,b\n"),
     "csvtypes.csv row 3, field 'chosen': empty text"),
    ("notes.txt", lambda p: p.write_text("hello"), "notes.txt: unknown file type .txt"),
    ("uf_mismatch.jsonl",
     lambda p: write_jsonl(p, [UF[0], ultrafeedback("Name a prime.", "7", "8", conv_prompt="Name a color.")]),
     "uf_mismatch.jsonl line 2, field 'chosen': the conversation's prompt 'Name a color.' differs from the 'prompt' "
     "field 'Name a prime.'"),
    ("uf_empty.jsonl", lambda p: write_jsonl(p, [UF[0], ultrafeedback("Name a prime.", "7", " ")]),
     "uf_empty.jsonl line 2, field 'rejected', message 2: the assistant turn is empty"),
    ("hh_no_assistant.jsonl",
     lambda p: write_jsonl(p, [{"chosen": "\n\nHuman: hi\n\nAssistant: hello",
                                "rejected": "\n\nHuman: hi\n\nAssistant: go"},
                               {"chosen": "\n\nHuman: hi there", "rejected": "\n\nHuman: hi you"}]),
     "hh_no_assistant.jsonl line 2, field 'chosen': a Human/Assistant transcript without an 'Assistant:' turn"),
    ("hh_empty.jsonl", lambda p: write_jsonl(p, [{"chosen": HH_MULTI + "Soon.", "rejected": HH_MULTI}]),
     "hh_empty.jsonl line 1, field 'rejected': the 'Assistant:' turn (turn 4) is empty"),
    ("hh_forked.jsonl",
     lambda p: write_jsonl(p, [{"chosen": "\n\nHuman: a\n\nAssistant: b\n\nHuman: c\n\nAssistant: d",
                                "rejected": "\n\nHuman: a\n\nAssistant: x\n\nHuman: c\n\nAssistant: d"}]),
     "hh_forked.jsonl line 1: 'chosen' and 'rejected' differ before the final assistant reply"),
    ("cut_string.jsonl", lambda p: p.write_text('{"prompt": "x", "chosen": "a", "rejected": "b"}\n'
                                                '{"prompt": "x", "chosen": "a", "rejected": "b'),
     "cut_string.jsonl line 2: not valid JSON: Unterminated string starting at column 44 (the line looks cut off)"),
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
    again = import_file(empty_workspace, good)  # a retried import
    assert (again.pairs, again.skipped) == (0, 50_000) and snapshot(empty_workspace)["labels"] == 50_000


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


def test_export_refuses_a_file_name_too_long_in_plain_words_and_writes_nothing(workspace, tmp_path):
    from rloo_studio.core.errors import explain
    from rloo_studio.label.exporting import export

    with pytest.raises(DataError, match=r"at most 200 characters \(this one has 306\)"):
        export(workspace, tmp_path / ("a" * 300 + ".jsonl"))
    assert not list(tmp_path.glob("a*"))
    # Whatever still reaches the file system too long is said in words, with no mention of a run.
    msg = explain(OSError(36, "File name too long", "x" * 300))
    assert msg.startswith("That file name is too long") and "log.txt" not in msg
    assert "log.txt" not in explain(ValueError("odd")) and "log.txt" in explain(ValueError("odd"), in_run=True)


def test_a_datasets_folder_in_numpy_format_imports_its_texts_as_texts(empty_workspace, tmp_path):
    """load_from_disk restores a saved numpy format: its cells are numpy strings and floats. They are kept as the
    texts and numbers they are (the checked rows wait in a temporary file between the passes: that file keeps
    their types), as a prompt set and as preference pairs."""
    from datasets import Dataset

    ws = empty_workspace
    prompts = Dataset.from_list([{"prompt": "p1", "score": 0.5}, {"prompt": "p2", "score": 1.5}])
    prompts.set_format("numpy")
    prompts.save_to_disk(tmp_path / "prompts")
    assert import_file(ws, tmp_path / "prompts").prompts == 2
    assert load_prompt_set(ws, "prompts") == [{"prompt": "p1", "score": 0.5}, {"prompt": "p2", "score": 1.5}]
    pairs = Dataset.from_list([{"prompt": "q", "chosen": "right", "rejected": "wrong"}])
    pairs.set_format("numpy")
    pairs.save_to_disk(tmp_path / "pairs")
    assert import_file(ws, tmp_path / "pairs").pairs == 1
    assert [(p["prompt"], p["chosen"], p["rejected"]) for p in L.preference_pairs(ws)] == [("q", "right", "wrong")]


def test_a_prompt_holding_a_nul_character_is_found_again(empty_workspace, tmp_path):
    """A prompt already in the set is found by its text, a NUL character in it included: a second file with the
    same prompt and other responses adds its pair to that prompt."""
    ws = empty_workspace
    for k, (a, b) in enumerate([("x", "y"), ("u", "v")]):
        f = tmp_path / f"f{k}.jsonl"
        f.write_text(json.dumps({"prompt": "say a\u0000b", "chosen": a, "rejected": b}) + "\n")
        assert import_file(ws, f, name="set").pairs == 1
    assert [tuple(r) for r in ws.query("SELECT text FROM prompts")] == [("say a\u0000b",)]
    assert ws.query("SELECT COUNT(*) FROM pairs")[0][0] == 2
