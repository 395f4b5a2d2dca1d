import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "RLOO_STUDIO_NO_UNSLOTH": "1"}


def cli(*args):
    return subprocess.run([sys.executable, "-m", "rloo_studio", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env=ENV)


def test_import_export_round_trip_and_errors(tmp_path):
    ws = tmp_path / "ws"
    src = tmp_path / "p.jsonl"
    src.write_text(json.dumps({"prompt": "q", "chosen": "good", "rejected": "bad"}) + "\n")
    r = cli("import", str(src), "--workspace", str(ws))
    assert r.returncode == 0 and "Imported 1 rows" in r.stdout, r.stderr
    out = tmp_path / "out.jsonl"
    r = cli("export", "--workspace", str(ws), "--out", str(out), "--format", "conversational")
    assert r.returncode == 0, r.stderr
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert {"prompt": [{"role": "user", "content": "q"}], "chosen": [{"role": "assistant", "content": "good"}],
            "rejected": [{"role": "assistant", "content": "bad"}]} in rows
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "q", "chosen": "a", "rejected": "a"}\n')
    r = cli("import", str(bad), "--workspace", str(ws))
    assert r.returncode != 0
    assert r.stderr.strip() == "error: bad.jsonl line 1: 'chosen' is identical to 'rejected'; nothing to prefer"


def test_import_shows_its_progress_on_stderr_and_its_summary_on_stdout(tmp_path, capsys, monkeypatch):
    """A long import draws a bar with what it does on stderr (here every call: PROGRESS_EVERY_S = 0), up to 100%;
    stdout holds only the summary. A short one (the default pace) prints no progress at all."""
    from rloo_studio import cli as cli_module
    from rloo_studio import cli_views  # where the CLI's progress printer lives

    src = tmp_path / "p.jsonl"
    src.write_text("".join(json.dumps({"prompt": f"q{i}", "chosen": f"good {i}", "rejected": f"bad {i}"}) + "\n"
                           for i in range(5000)))
    monkeypatch.setattr(cli_views, "PROGRESS_EVERY_S", 0)
    assert cli_module.main(["import", str(src), "--workspace", str(tmp_path / "ws")]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == "Imported 5,000 rows from p.jsonl: 5,000 labeled pairs (annotator 'import'), 5,000 prompts."
    lines = err.strip().splitlines()
    assert any("checking" in x and "reading p.jsonl" in x for x in lines), lines
    assert any("writing: 5,000 / 5,000 rows" in x for x in lines), lines
    assert lines[-1].startswith("[####################] 100%"), lines
    monkeypatch.setattr(cli_views, "PROGRESS_EVERY_S", 2.0)
    assert cli_module.main(["import", str(src), "--workspace", str(tmp_path / "ws2")]) == 0
    assert capsys.readouterr().err == ""


def test_train_cli_rejects_bad_config_with_a_message(tmp_path, capsys):
    from rloo_studio.cli import main  # the same CLI code, in this process: no new process's imports to pay

    assert main(["train-rloo", "--workspace", str(tmp_path / "ws"), "--set", "num_generations=1"]) == 2
    assert "num_generations must be" in capsys.readouterr().err
    assert main(["train-reward", "--workspace", str(tmp_path / "ws"), "--set", "lr=0.1"]) == 2
    err = capsys.readouterr().err
    assert "unknown key lr" in err and "Traceback" not in err


def test_score_json_prints_one_json_object(tmp_path):
    from rloo_studio.core.paths import DEMO_MODEL

    out = subprocess.run([sys.executable, "-m", "rloo_studio", "score", "--workspace", str(tmp_path / "ws"),
                          "--reward-model", str(DEMO_MODEL), "--prompt", "What is 1 + 2?",
                          "--response", "<think>\n1+2+0=3\n\nok\n</think>\n\nThe answer is 3.", "--json"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)  # unsloth on: its banner goes to stderr
    assert out.returncode == 0, out.stderr[-1500:]
    d = json.loads(out.stdout)
    assert {"total", "answer", "thinking", "steps"} <= set(d)
    assert [s["text"] for s in d["steps"]] == ["1+2+0=3", "ok"]
    assert {"text", "start", "end", "score", "delta"} <= set(d["steps"][0])


def test_score_prints_a_cut_response_without_an_answer_score(tmp_path, capsys):
    """The plain-text output of `score` for a response cut before </think>: no answer to score alone."""
    from rloo_studio.cli import main
    from rloo_studio.core.paths import DEMO_MODEL

    assert main(["score", "--workspace", str(tmp_path / "ws"), "--reward-model", str(DEMO_MODEL),
                 "--prompt", "What is 1 + 2?", "--response", "<think>\n1+2+0=3\n\n2+"]) == 0
    out = capsys.readouterr().out
    assert "answer alone —" in out and "truncated" in out and "step  1" in out, out


def test_score_a_file_prints_a_line_per_row_with_the_single_texts_scores(tmp_path, capsys):
    """`score --file`: {prompt, response} rows get their score, {prompt, chosen, rejected} rows both scores and
    the margin, each equal to scoring that text alone; other keys kept; progress on stderr; a bad row refused
    in words before anything is scored."""
    from rloo_studio.cli import main
    from rloo_studio.core.paths import DEMO_MODEL
    from rloo_studio.inspect.scoring import score_json

    good, bad = "<think>\n1+2+0=3\n</think>\n\nThe answer is 3.", "The answer is 4."
    rows = [{"prompt": "What is 1 + 2?", "response": good, "id": "a"},
            {"prompt": "What is 1 + 2?", "chosen": good, "rejected": bad, "id": "b"},
            {"prompt": "What is 20 + 22?", "response": "The answer is 42."}]
    f = tmp_path / "rows.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    base = ["score", "--workspace", str(tmp_path / "ws"), "--reward-model", str(DEMO_MODEL)]
    assert main([*base, "--file", str(f)]) == 0
    cap = capsys.readouterr()
    out = [json.loads(line) for line in cap.out.splitlines()]
    alone = lambda p, r: score_json(None, None, str(DEMO_MODEL), p, r)["total"]  # noqa: E731
    assert [o["id"] for o in out[:2]] == ["a", "b"] and len(out) == 3
    assert out[0]["score"] == pytest.approx(alone(rows[0]["prompt"], good), abs=1e-5)
    assert out[1]["chosen_score"] == pytest.approx(alone(rows[1]["prompt"], good), abs=1e-5)
    assert out[1]["rejected_score"] == pytest.approx(alone(rows[1]["prompt"], bad), abs=1e-5)
    assert out[1]["margin"] == pytest.approx(out[1]["chosen_score"] - out[1]["rejected_score"])
    assert out[2]["score"] == pytest.approx(alone(rows[2]["prompt"], "The answer is 42."), abs=1e-5)
    assert "scored 3 of 3 responses" in cap.err
    f.write_text(json.dumps(rows[0]) + "\n" + json.dumps({"prompt": "q", "chosen": "x"}) + "\n")
    assert main([*base, "--file", str(f)]) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and "Line 2 needs a prompt and a response" in cap.err, cap.err


def test_score_a_model_with_its_own_code_only_with_the_flag(tmp_path):
    from custom_model import make_custom_code_model

    folder = tmp_path / "custom"
    marker = make_custom_code_model(folder)
    args = ["score", "--workspace", str(tmp_path / "ws"), "--reward-model", str(folder), "--prompt", "What is 1 + 2?",
            "--response", "<think>\n1+2+0=3\n</think>\n\nThe answer is 3.", "--json"]
    refused = cli(*args)
    assert refused.returncode == 2 and "ships its own Python code" in refused.stderr, refused.stderr[-1500:]
    assert not marker.exists()
    ok = cli(*args, "--trust-remote-code")
    assert ok.returncode == 0, ok.stderr[-1500:]
    assert json.loads(ok.stdout)["steps"] and marker.exists()


LIGHT = """
import sys
from rloo_studio.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as e:  # --help
    code = e.code
heavy = sorted(m for m in ("torch", "transformers", "trl", "peft", "unsloth", "gradio") if m in sys.modules)
print("HEAVY:" + ",".join(heavy))
sys.exit(code)
"""


@pytest.mark.parametrize("args", [["runs", "list"], ["import", "{file}"], ["export", "--out", "{out}"], ["--help"]])
def test_commands_that_load_no_model_import_no_torch_and_print_no_banner(tmp_path, args):
    src = tmp_path / "pairs.jsonl"
    src.write_text('{"prompt": "p", "chosen": "good", "rejected": "bad"}\n')
    args = [a.format(file=src, out=tmp_path / "out.jsonl") for a in args]
    if args != ["--help"]:
        args += ["--workspace", str(tmp_path / "ws")]
        if args[0] == "export":
            subprocess.run([sys.executable, "-m", "rloo_studio", "import", str(src),
                            "--workspace", str(tmp_path / "ws")], cwd=ROOT, check=True, capture_output=True)
    p = subprocess.run([sys.executable, "-c", LIGHT, *args], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "HEAVY:\n" in p.stdout, p.stdout  # nothing heavy was imported
    assert "Unsloth" not in p.stdout + p.stderr
    if args[:2] == ["runs", "list"]:  # an empty workspace says so, and what starts a run
        assert "No runs in" in p.stdout and "train-reward" in p.stdout
