"""The app's scripting API: the few actions a script needs, under stable names (gradio_client).

Each endpoint is a plain function of the studio and typed, JSON-able parameters that calls the same
core function as the tabs and the CLI. `register` serves them with `gr.api` (Gradio derives each
endpoint's parameters from the type hints and its description from the docstring) and turns every
failure into a `gr.Error` whose message says what to change; `hide_the_rest` takes every other event
of the page (the tabs' clicks, loads, timers) off the API, so that `view_api()` lists only these.

    from gradio_client import Client
    c = Client("http://127.0.0.1:7860/")            # auth=("USER", "PASSWORD") with --auth
    c.predict("alice", api_name="/next_pair")
"""
from __future__ import annotations

import functools
import inspect
from pathlib import Path
from typing import Literal

import gradio as gr

from rloo_studio.core import paths
from rloo_studio.core.errors import DataError, StudioError, explain
from rloo_studio.core.paths import outside_allowed
from rloo_studio.label import store as labels
from rloo_studio.label.importing import import_file as import_path
from rloo_studio.label.importing import import_upload
from rloo_studio.runs import catalog
from rloo_studio.runs.runner import read_metrics
from rloo_studio.studio import Studio
from rloo_studio.ui.uploads import discard_upload

API_SESSION = "api:"  # + the annotator's name: the session a script's claims belong to (one per annotator)


# ---------------------------------------------------------------- endpoints

def score(studio: Studio, prompt: str, response: str, reward_run: str,
          split: Literal["blank", "line", "sentence"] = "blank") -> dict:
    """Score a response with a trained reward run: the whole response and each step of its <think> reasoning.

    Parameters:
        prompt: the user's prompt, as plain text (the model's chat template is applied).
        response: the model's response, with or without its <think>…</think> reasoning.
        reward_run: the id of a reward-model run (kind 'reward') or a process-reward run (kind 'prm') of this
            workspace (see /list_runs).
        split: how the reasoning is cut into steps: at blank lines, at every line, or at sentences.
    Returns:
        For a reward-model run: {reward_model, trained, split, total, answer, thinking, closed, truncated, steps:
        [{text, start, end, score, delta}]}: total is the score read at the end (what training compares); answer
        the answer alone; thinking the score after the reasoning; each step the score of the text up to its end
        ("the score if the answer ended here") and the change.
        For a process-reward run: {reward_model, kind: "process", split, truncated, first_doubt, min, product, last,
        mean, steps: [{text, start, end, p_correct}]}: each step's probability of being right, the first step below
        0.5 (null: none), and the aggregates RLOO's process_reward uses.
    """
    from rloo_studio.inspect.scorers import score_json  # loads torch: only when asked
    from rloo_studio.inspect.scoring import check_text

    run = catalog.scorer_run(studio.ws, reward_run)  # says so when the id names no run that gives a scorer
    if split not in ("blank", "line", "sentence"):
        raise DataError(f"split must be 'blank', 'line' or 'sentence', not {str(split)[:40]!r}.")
    prompt, response = check_text(_text(prompt), "prompt"), check_text(_text(response), "response")
    return score_json(studio.ws, run["id"], prompt, response, split)


def next_pair(studio: Studio, annotator: str,
              filter: Literal["unlabeled", "labeled", "skipped", "ties", "flagged", "all"] = "unlabeled",
              source: str = "") -> dict | None:
    """The pair this annotator should label next, held for them as the Label tab holds the pair on screen.

    Asking again before labeling returns the same pair. Others are not handed it while it is held (5 minutes).
    Parameters:
        annotator: the name the labels are recorded under (as typed in the Label tab).
        filter: which pairs: those still needing a label (default), or labeled / skipped / ties / flagged / all.
        source: only pairs of this source (an imported file's name); empty for all.
    Returns:
        {pair_id, prompt, turns, left, right, source, flag, current}, or null when no pair is left. left and right
        are the two responses in this annotator's A/B order (left is A in the Label tab); turns is a multi-turn
        prompt's conversation or null; current is this annotator's label of the pair, if any.
    """
    name = _name(annotator)
    shown = labels.next_pair(studio.ws, name, API_SESSION + name, _filter(filter), _text(source))
    if shown is None:
        return None
    return {"pair_id": shown.pair_id, "prompt": shown.prompt, "turns": shown.turns, "left": shown.left,
            "right": shown.right, "source": shown.source, "flag": shown.flag, "current": shown.current}


def label(studio: Studio, annotator: str, pair_id: int, choice: Literal["left", "right", "tie", "skip"],
          comment: str = "") -> dict:
    """Label the pair /next_pair handed to this annotator, as a key press in the Label tab does.

    Parameters:
        annotator: the same name as in /next_pair.
        pair_id: the pair_id /next_pair returned.
        choice: 'left' or 'right' (the better response, as /next_pair returned them), 'tie' or 'skip'.
        comment: optional, saved with the label.
    Returns:
        {label_id, pair_id, annotator, choice}: choice as stored ('a' or 'b': the pair's response_a or
        response_b is better; 'tie'; 'skip'). An earlier label of this annotator on the pair is superseded.
    """
    name, pid = _name(annotator), _pair_id(pair_id)
    if choice not in ("left", "right", "tie", "skip"):
        raise DataError(f"choice must be 'left', 'right', 'tie' or 'skip', not {str(choice)[:40]!r}.")
    held = labels.next_pair(studio.ws, name, API_SESSION + name)  # the pair held for this annotator's script
    if not labels.on_screen(held, pid):
        now = f"it holds pair {held.pair_id}" if held else "no pair is left to label"
        raise DataError(f"Pair {pid} is not the pair handed to {name} ({now}). Call /next_pair with this "
                        "annotator, then label the pair_id it returns.")
    lid = labels.save_on_screen(studio.ws, held, pid, name, API_SESSION + name, choice, _text(comment))
    return {"label_id": lid, "pair_id": pid, "annotator": name, "choice": held.choice_for(choice)}


def import_file(studio: Studio, file: dict | None = None, path: str = "", keep_duplicates: bool = False) -> dict:
    """Import preference pairs, prompts with candidate responses, or a prompt set (JSONL, CSV, Parquet, a
    `datasets` folder), as the Label tab's import does: every row is checked, then all are written, or none.

    Parameters:
        file: a file sent from the script's machine: handle_file("pairs.jsonl") (gradio_client).
        path: or a file or folder on the app's machine, inside the folders the app may read (its workspace,
            the studio's assets, the Hugging Face cache, --allow-path).
        keep_duplicates: also import rows already in the workspace, as new pairs.
    Returns:
        {kind, name, rows, pairs, prompts, skipped, labeled, summary}: kind is 'preference', 'candidates' or
        'prompts'; summary says what was written in words.
    """
    path = _text(path).strip()
    given = (file is not None) + bool(path)
    if given != 1:
        raise DataError("Give either file (handle_file('pairs.jsonl')) or path (a file on the app's machine), "
                        "not " + ("both." if given else "neither."))
    kw = {"keep_duplicates": True} if keep_duplicates else {}
    if file is not None:
        upload = _uploaded(studio, file)
        try:
            res = import_upload(studio.ws, upload, **kw)  # the workspace keeps a copy (uploads/), as for the tab
        finally:
            discard_upload(studio.ws, upload)
    else:
        res = import_path(studio.ws, _readable(path), **kw)
    return {"kind": res.kind, "name": res.name, "rows": res.rows, "pairs": res.pairs, "prompts": res.prompts,
            "skipped": res.skipped, "labeled": res.labeled, "summary": res.summary()}


def list_runs(studio: Studio) -> list[dict]:
    """The workspace's runs, newest first, as the Runs tab lists them.

    Returns:
        [{id, kind, status, started, duration_s, figures, step, message, folder}]: kind is 'reward', 'rloo' or
        another job kind; figures the run's key numbers in words; step the last logged step.
    """
    return catalog.summaries(studio.ws)


def run_metrics(studio: Studio, run_id: str) -> dict:
    """Everything a run logged, one record per logging step (its metrics.jsonl).

    Parameters:
        run_id: the id of a run of this workspace (see /list_runs).
    Returns:
        {id, kind, status, last, metrics}: last holds each metric's latest value; metrics the records in order.
    """
    row = catalog.find_run(studio.ws, run_id)
    metrics = read_metrics(studio.ws.run_dir(row["id"]))
    return {"id": row["id"], "kind": row["kind"], "status": row["status"], "last": catalog.last_values(metrics),
            "metrics": metrics}


ENDPOINTS = (score, next_pair, label, import_file, list_runs, run_metrics)  # served under their own names


# ---------------------------------------------------------------- checks

def _name(annotator: str) -> str:
    name = (annotator or "").strip() if isinstance(annotator, str) else ""
    if not name:
        raise DataError("Give annotator: the name the labels are recorded under.")
    return name


def _text(value) -> str:
    if value is not None and not isinstance(value, str):
        raise DataError(f"Texts are strings, not {type(value).__name__}.")
    return value or ""


def _filter(value: str) -> str:
    if value not in labels.FILTERS:
        raise DataError(f"filter must be one of {', '.join(labels.FILTERS)}, not {str(value)[:40]!r}.")
    return value


def _pair_id(value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not float(value).is_integer() or value < 1:
        raise DataError(f"pair_id is the whole number /next_pair returned, not {str(value)[:40]!r}.")
    return int(value)


def _uploaded(studio: Studio, file) -> str:
    """The path of a file the client uploaded (Gradio's copy, in the workspace's incoming/ folder)."""
    p = file.get("path") if isinstance(file, dict) else None
    if not isinstance(p, str) or studio.ws.incoming_dir.resolve() not in Path(p).resolve().parents:
        raise DataError("file must be a file sent with gradio_client's handle_file('pairs.jsonl'); "
                        "for a file on the app's machine, give path instead.")
    return p


def _readable(path: str) -> Path:
    """A typed path on the app's machine, refused outside the folders the app may read (core.paths.ALLOWED_ROOTS,
    set by `serve`: the workspace, the studio's assets, the Hugging Face cache, --allow-path)."""
    p = Path(path.strip()).expanduser()
    outside = outside_allowed(p)
    if not p.is_absolute() or outside:
        where = outside or ", ".join(str(r) for r in paths.ALLOWED_ROOTS or [])
        raise DataError(f"{path.strip()[:200]} is not a full path inside the folders this app may read ({where}). "
                        "Send the file with handle_file instead, or restart the app with --allow-path FOLDER.")
    return p


# ---------------------------------------------------------------- serving

def _served(fn, studio: Studio):
    """fn with the studio bound, as Gradio reads it (signature and type hints without `studio`); every
    failure becomes a gr.Error that the client raises with the message (no traceback crosses)."""
    sig = inspect.signature(fn, eval_str=True)  # real types: Gradio reads the return type from the signature

    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(studio, *args, **kwargs)
        except gr.Error:
            raise
        except Exception as e:  # a plain message; the server's log keeps the traceback of the unexpected ones
            raise gr.Error(explain(e), print_exception=not isinstance(e, (StudioError, ValueError))) from None

    call.__signature__ = sig.replace(parameters=list(sig.parameters.values())[1:])
    return call


def docstring_parts(fn) -> tuple[dict[str, str], str]:
    """({parameter: description}, what comes back) from an endpoint's docstring (its Parameters: and
    Returns: sections; a description may run over several lines)."""
    params, returns, section, name = {}, [], None, None
    names = list(inspect.signature(fn).parameters)
    for line in (inspect.getdoc(fn) or "").splitlines():
        line = line.strip()
        if line in ("Parameters:", "Returns:"):
            section = line
        elif section == "Returns:" and line:
            returns.append(line)
        elif section == "Parameters:" and line:
            head, sep, rest = line.partition(":")
            if sep and head in names:
                name, params[head] = head, rest.strip()
            elif name:
                params[name] += " " + line
    return params, " ".join(returns)


def register(demo: gr.Blocks, studio: Studio) -> set[int]:
    """Serve ENDPOINTS under their names, each parameter and result described as its docstring says (shown by
    view_api and the API page). Call inside the Blocks before any other event, so that the names are free;
    returns the endpoints' event ids for hide_the_rest."""
    ids = set()
    for fn in ENDPOINTS:
        dep = gr.api(_served(fn, studio), api_name=fn.__name__)
        assert dep["api_name"] == fn.__name__, dep["api_name"]  # registered first: no other event took it
        ids.add(dep["id"])
        params, returns = docstring_parts(fn)
        served = demo.fns[dep["id"]]
        # api_info() is the schema dict each gr.api input keeps: Gradio shows its additional_description
        for comp, name in zip(served.inputs, list(inspect.signature(fn).parameters)[1:]):
            comp.api_info()["additional_description"] = params.get(name, "")
        for comp in served.outputs:
            comp.api_info()["description"] = returns
    return ids


def hide_the_rest(demo: gr.Blocks, keep: set[int]) -> None:
    """Every other event (the page's clicks, loads, timers) private: off the API page and refused by
    gradio_client. The page still calls them: Gradio's queue serves its own front end whatever this says."""
    for i, fn in demo.fns.items():
        if i not in keep:
            fn.api_visibility = "private"
