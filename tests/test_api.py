"""The scripting API of the running app, driven through gradio_client as a team's script would."""
import json
import os

os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")  # gradio_client reports each Client to the Hub otherwise

import pytest  # noqa: E402
from browser import running_app  # noqa: E402
from gradio_client import Client, handle_file  # noqa: E402
from gradio_client.exceptions import AppError, AuthenticationError  # noqa: E402
from reward_run_fixture import seeded_reward_run  # noqa: E402

from rloo_studio.core.workspace import Workspace  # noqa: E402
from rloo_studio.label.demo_data import open_workspace  # noqa: E402

ENDPOINTS = {"/score", "/next_pair", "/label", "/import_file", "/list_runs", "/run_metrics"}
RESPONSE = "<think>\n4+0+0=4\n\n2+3+0=5\n\n8+6+0=14\n</think>\n\nThe answer is 1454."
RID = "reward-api"


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """The app on a demo workspace with a reward run (a seeded adapter and two logged steps)."""
    ws_dir = tmp_path_factory.mktemp("api") / "ws"
    ws = open_workspace(ws_dir, demo=True)
    seeded_reward_run(ws, RID)
    (ws.run_dir(RID) / "metrics.jsonl").write_text(
        "".join(json.dumps({"step": s, "loss": 0.7 - 0.1 * s, "accuracy": 0.5 + 0.1 * s}) + "\n" for s in (1, 2)))
    with running_app(ws_dir, seed=False) as a:
        a.client = Client(a.url, verbose=False)
        yield a


def plain_error(call) -> str:
    """The message of the error the app sends back (gradio_client raises it as an AppError)."""
    with pytest.raises(AppError) as e:
        call()
    msg = str(e.value)
    assert "Traceback" not in msg and 'File "' not in msg, msg
    return msg


def test_view_api_lists_only_the_named_endpoints(app):
    info = app.client.view_api(print_info=False, return_format="dict")
    assert set(info["named_endpoints"]) == ENDPOINTS
    assert not info["unnamed_endpoints"]
    label = {p["parameter_name"]: p for p in info["named_endpoints"]["/label"]["parameters"]}
    assert list(label) == ["annotator", "pair_id", "choice", "comment"]
    assert "next_pair" in label["pair_id"]["python_type"]["description"]  # each parameter says what it is
    # the page's own events (about 200: clicks, loads, timers) are private, and gradio_client refuses them
    page = [d for d in app.client.config["dependencies"] if "/" + str(d.get("api_name")) not in ENDPOINTS]
    assert len(page) > 100 and {d["api_visibility"] for d in page} == {"private"}
    with pytest.raises(ValueError, match="Invalid function index"):
        app.client.predict(fn_index=page[0]["id"])


def test_score_gives_total_and_step_scores(app):
    out = app.client.predict("Add 820 and 634.", RESPONSE, RID, "blank", api_name="/score")
    assert isinstance(out["total"], float) and out["trained"] is True
    assert [s["text"].strip() for s in out["steps"]] == ["4+0+0=4", "2+3+0=5", "8+6+0=14"]
    assert all(isinstance(s["score"], float) for s in out["steps"])


def test_next_pair_and_label_are_stored_for_the_annotator(app):
    c = app.client
    pair = c.predict("api-ann", api_name="/next_pair")
    assert pair["pair_id"] >= 1 and pair["left"] and pair["right"] and pair["prompt"]
    assert c.predict("api-ann", api_name="/next_pair")["pair_id"] == pair["pair_id"]  # held until labeled
    got = c.predict("api-ann", pair["pair_id"], "left", "from a script", api_name="/label")
    row = Workspace(app.ws_dir).query(
        "SELECT l.choice, l.a_shown_left, l.comment, r.text AS a_text FROM labels l "
        "JOIN annotators n ON n.id = l.annotator_id JOIN pairs p ON p.id = l.pair_id "
        "JOIN responses r ON r.id = p.response_a WHERE n.name = 'api-ann' AND l.pair_id = ? AND l.superseded = 0",
        (pair["pair_id"],))
    assert len(row) == 1 and row[0]["comment"] == "from a script" and row[0]["choice"] == got["choice"]
    # 'left' is the response the script was shown on the left: stored as that response being better
    assert (row[0]["choice"] == "a") == (row[0]["a_text"] == pair["left"])
    assert c.predict("api-ann", api_name="/next_pair")["pair_id"] != pair["pair_id"]


def test_label_of_a_pair_not_handed_out_is_a_plain_error(app):
    c = app.client
    held = c.predict("api-other", api_name="/next_pair")["pair_id"]
    msg = plain_error(lambda: c.predict("api-other", held + 1, "left", api_name="/label"))
    assert f"Pair {held + 1} is not the pair handed to api-other" in msg and "/next_pair" in msg
    msg = plain_error(lambda: c.predict("api-other", held, "better", api_name="/label"))
    assert "choice must be 'left', 'right', 'tie' or 'skip'" in msg
    assert not Workspace(app.ws_dir).query(
        "SELECT 1 FROM labels l JOIN annotators n ON n.id = l.annotator_id WHERE n.name = 'api-other'")


def test_import_an_uploaded_file_and_a_path(app, tmp_path):
    rows = [{"prompt": f"API question {i}?", "chosen": f"right {i}", "rejected": f"wrong {i}"} for i in range(3)]
    f = tmp_path / "api-pairs.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = app.client.predict(handle_file(str(f)), "", False, api_name="/import_file")
    assert (out["kind"], out["rows"], out["pairs"]) == ("preference", 3, 3)
    stored = Workspace(app.ws_dir).query(
        "SELECT pr.text FROM pairs p JOIN prompts pr ON pr.id = p.prompt_id WHERE p.source = 'api-pairs.jsonl'")
    assert sorted(r["text"] for r in stored) == [r["prompt"] for r in rows]
    # a file already on the app's machine, inside the workspace: the same rows, so all skipped
    inside = app.ws_dir / "exports" / "api-pairs.jsonl"
    inside.parent.mkdir(exist_ok=True)
    inside.write_text(f.read_text())
    again = app.client.predict(None, str(inside), False, api_name="/import_file")
    assert (again["pairs"], again["skipped"]) == (0, 3)
    # a path outside the folders the app may read is refused in words, and nothing is read
    msg = plain_error(lambda: app.client.predict(None, str(f), False, api_name="/import_file"))
    assert "inside the folders this app may read" in msg and "handle_file" in msg


def test_list_runs_and_a_runs_metrics(app):
    runs = app.client.predict(api_name="/list_runs")
    assert [(r["id"], r["kind"], r["status"]) for r in runs] == [(RID, "reward", "completed")]
    m = app.client.predict(RID, api_name="/run_metrics")
    assert [r["step"] for r in m["metrics"]] == [1, 2] and m["last"]["accuracy"] == pytest.approx(0.7)
    msg = plain_error(lambda: app.client.predict("no-such-run", api_name="/run_metrics"))
    assert "no-such-run" in msg


def test_with_auth_a_client_needs_the_password(tmp_path):
    with running_app(tmp_path / "ws", "--auth", "ann:pw-123", seed=False) as a:
        with pytest.raises(AuthenticationError, match="credentials were not provided"):
            Client(a.url, verbose=False)
        with pytest.raises((AuthenticationError, ValueError), match="Could not login"):  # a wrong password
            Client(a.url, auth=("ann", "wrong"), verbose=False)
        c = Client(a.url, auth=("ann", "pw-123"), verbose=False)
        assert set(c.view_api(print_info=False, return_format="dict")["named_endpoints"]) == ENDPOINTS
        assert c.predict(api_name="/list_runs") == []
        assert c.predict("ann", api_name="/next_pair") is None  # a new workspace: nothing to label
