"""Step labels for a process reward model: a verdict on each <think> step of a response, beside the pair labels.

A response's steps are those of thinking.parse(text, split="blank"). A verdict is PRM800K's: good (+1), neutral (0)
or bad (-1). Labeling a response stops at its first bad step: the steps after it are not credited, so a bad verdict
supersedes that annotator's labels of later steps, and labeling a step after one's own bad step is refused. A person
labels the final answer too, as one more step after the last <think> step (index n, n = the number of steps): right
steps can end in a wrong answer. The readers of the steps' labels (label/step_readers.py) stop before it.

Who labels: people (by the name they type), the import ('import', from stepwise files) and the rollouts job
(ROLLOUTS: the share of sampled continuations from each step that reached the answer). Their labels are never
mixed: every reader says whose labels it reads. A person may accept a process reward model's verdicts with one key
(accept_steps): those labels are theirs, marked `accepted`, and agreement figures leave them out. A label is
returned to the caller only after its transaction has committed; a re-label, an undo or a cut by a bad step
supersedes a label (kept, marked), never deletes it.
"""
from __future__ import annotations

import hashlib
import json
import time

from rloo_studio.core.errors import DataError
from rloo_studio.core.thinking import parse
from rloo_studio.core.workspace import Workspace
from rloo_studio.label.prompts import add_prompt, add_response, get_or_create_set
from rloo_studio.label.shapes import TURNS
from rloo_studio.label.step_readers import (  # noqa: F401  (the readers, where their callers import them)
    agreement,
    any_labels,
    labeled_responses,
    response_steps,
)
from rloo_studio.label.store import IMPORT_ANNOTATOR, ROLLOUTS_ANNOTATOR, day_start, prompt_turns

VERDICTS = {"good": 1, "neutral": 0, "bad": -1}
WORDS = {v: k for k, v in VERDICTS.items()}
ROLLOUTS = ROLLOUTS_ANNOTATOR  # the annotator of the rollouts' labels; no person may take the name
IMPORTED = IMPORT_ANNOTATOR
COUNT_ROWS = 20_000  # responses whose steps are counted per transaction (people labeling wait at most for one)
ORDERS = {"sources": "sources in turn", "stored": "stored order"}
"""The queue's orders: 'sources' takes the next response from the source this person has labeled fewest responses
of (a workspace whose first hundreds of responses are all right does not hide the others behind them); 'stored'
the order the responses were stored in. The model's order comes as `prefer` (inspect/step_assist.py)."""


def row_key(prompt: str, turns, response: str) -> str:
    """What makes a stored response the same one again: its prompt (text and turns) and its text."""
    blob = json.dumps([prompt, turns if isinstance(turns, list) and turns else None, response], ensure_ascii=False)
    return hashlib.blake2b(blob.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


# -- annotators and checks -----------------------------------------------------------------------------------------

def _annotator(con, name: str) -> int:
    row = con.execute("SELECT id FROM annotators WHERE name=?", (name,)).fetchone()
    if row:
        return row[0]
    return con.execute("INSERT INTO annotators (name, created) VALUES (?, ?)", (name, time.time())).lastrowid


def _person_name(name: str) -> str:
    name = (name or "").strip()
    if not name:
        raise DataError("Enter your name first: each step label records who gave it.")
    if name in (IMPORTED, ROLLOUTS):
        whose = "imported labels" if name == IMPORTED else "the labels the rollouts compute"
        raise DataError(f"The name '{name}' is kept for {whose}; type your own name.")
    return name


def _known(con, name: str) -> int | None:
    row = con.execute("SELECT id FROM annotators WHERE name=?", (_person_name(name),)).fetchone()
    return row[0] if row else None


def check_verdict(verdict) -> int:
    if isinstance(verdict, bool) or verdict not in VERDICTS.values():
        raise DataError(f"A step's verdict is 1 (good), 0 (neutral) or -1 (bad), not {verdict!r}.")
    return int(verdict)


def _response_text(con, response_id: int) -> str:
    row = con.execute("SELECT text FROM responses WHERE id=?", (int(response_id),)).fetchone()
    if row is None:
        raise DataError(f"Response #{response_id} is not in this workspace.")
    return row[0]


def _check_index(response_id: int, step, n: int, answer: bool = True) -> None:
    """Step `step` of a response of n <think> steps is there: 0..n-1, or n (its final answer) when `answer`."""
    top = n if answer and n else n - 1
    if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step <= top:
        raise DataError(f"Step index {step!r} is out of range: response #{response_id} has {n} step"
                        f"{'s' if n != 1 else ''}" + (f" (indexes 0 to {n - 1})" if n else "; nothing to label.")
                        + (f" and its final answer (index {n})." if n and answer else "." if n else ""))


def _check_before_bad(con, response_id: int, ann: int, step: int) -> None:
    """Refuses, in words, a label after the annotator's own first bad step of the response."""
    bad = con.execute("SELECT MIN(step) FROM step_labels WHERE response_id=? AND superseded=0 AND +annotator_id=? "
                      "AND verdict=-1", (response_id, ann)).fetchone()[0]
    if bad is not None and step > bad:
        raise DataError(f"Step {step + 1} comes after step {bad + 1}, which you marked bad: the steps after the "
                        "first wrong one are not labeled. Label that step again first.")


# -- writing labels ------------------------------------------------------------------------------------------------

def label_step(ws: Workspace, response_id: int, step: int, verdict: int, annotator: str,
               soft: float | None = None, model_p: float | None = None, model_run: str | None = None) -> None:
    """Store a person's own verdict on step `step` (0-based; the response's number of steps: its final answer), once
    committed. A re-label of that step supersedes their earlier label; a bad verdict also supersedes their labels of
    later steps (not credited). model_p / model_run: the process reward model's P(right) the page showed for the
    step, kept to measure person-vs-model agreement."""
    verdict, name = check_verdict(verdict), _person_name(annotator)
    with ws.transaction() as con:
        _check_index(response_id, step, len(response_steps(_response_text(con, response_id))))
        ann = _annotator(con, name)
        _check_before_bad(con, response_id, ann, step)
        _write(con, response_id, step, verdict, ann, time.time(), soft=soft, model_p=model_p, model_run=model_run)


def accept_steps(ws: Workspace, response_id: int, annotator: str, proposal: list[tuple[int, int, float]],
                 model_run: str) -> None:
    """Store the verdicts of a process reward model (run `model_run`) that the annotator accepted with one key:
    proposal = [(step, verdict, p)] on consecutive <think> steps, ending at the first bad one if any. Each becomes the
    annotator's label marked accepted, with the model's p; all in one transaction (one undo takes them all back)."""
    name = _person_name(annotator)
    if not proposal:
        raise DataError("The model proposes no verdict here: nothing to accept. Label the step with 1, 2 or 3.")
    verdicts = [check_verdict(v) for _, v, _ in proposal]
    first = proposal[0][0]
    if [s for s, _, _ in proposal] != list(range(first, first + len(proposal))) or -1 in verdicts[:-1]:
        raise DataError("A model's verdicts are accepted on consecutive steps, ending at the first bad one.")
    with ws.transaction() as con:
        n = len(response_steps(_response_text(con, response_id)))
        for step, _, _ in proposal:
            _check_index(response_id, step, n, answer=False)  # the model does not judge the final answer
        ann = _annotator(con, name)
        _check_before_bad(con, response_id, ann, first)
        now = time.time()
        for (step, verdict, p) in proposal:
            _write(con, response_id, step, verdict, ann, now, accepted=True, model_p=float(p), model_run=model_run)


def _write(con, response_id: int, step: int, verdict: int, ann: int, now: float, soft: float | None = None,
           accepted: bool = False, model_p: float | None = None, model_run: str | None = None) -> int:
    lid = con.execute("INSERT INTO step_labels (response_id, step, verdict, annotator_id, soft, created, accepted, "
                      "model_p, model_run) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                      (response_id, step, verdict, ann, soft, now, int(accepted), model_p, model_run)).lastrowid
    con.execute("UPDATE step_labels SET superseded=1, superseded_by=? WHERE response_id=? AND superseded=0 "
                "AND +annotator_id=? AND id != ? AND (step = ? OR (? = -1 AND step > ?))",
                (lid, response_id, ann, lid, step, verdict, step))
    return lid


def undo_step(ws: Workspace, annotator: str) -> tuple[int, int] | None:
    """Take back the annotator's latest step label (all of one acceptance of a model's verdicts): the labels it
    replaced or cut (an earlier label of that step, later steps cut by a bad verdict) are current again.
    (response_id, step) of it (the first step of an acceptance), or None: nothing to undo."""
    with ws.transaction() as con:
        ann = _known(con, annotator)
        last = ann and con.execute("SELECT id, response_id, step, accepted, created FROM step_labels WHERE "
                                   "annotator_id=? AND superseded=0 ORDER BY created DESC, id DESC LIMIT 1",
                                   (ann,)).fetchone()
        if not last:
            return None
        batch = [tuple(r) for r in con.execute(
            "SELECT id, step FROM step_labels WHERE annotator_id=? AND superseded=0 AND response_id=? AND accepted=1 "
            "AND created=?", (ann, last["response_id"], last["created"]))] if last["accepted"] else []
        batch = batch or [(last["id"], last["step"])]
        for lid, _ in batch:
            con.execute("UPDATE step_labels SET superseded=1, superseded_by=NULL WHERE id=?", (lid,))
            con.execute("UPDATE step_labels SET superseded=0, superseded_by=NULL WHERE annotator_id=? AND "
                        "superseded_by=?", (ann, lid))
        return last["response_id"], min(step for _, step in batch)
def store_labeled(con, set_id: int, prompt: str, extra: dict, response: str, source: str, ann: int,
                  verdicts: list[int], soft: list, now: float, replace: bool, copy: bool = False) -> tuple[int, str]:
    """An automatic writer's labeled response (a stepwise import's row, a rollout), inside the caller's transaction:
    the response found again by row_key, else written (under prompt set `set_id`). (response id, what happened):
    'new'; 'labeled' (it was there without this annotator's labels); 'same' (with these labels); 'other' (with other
    labels: replaced when `replace`, else kept). `copy`: always write a new response (an import keeping duplicates)."""
    key = row_key(prompt, (extra or {}).get(TURNS), response)
    found = None if copy else con.execute("SELECT response_id FROM response_keys WHERE key=?", (key,)).fetchone()
    if found is None:
        rid = add_response(con, add_prompt(con, set_id, prompt, extra), response, source, now)
        con.execute("INSERT OR IGNORE INTO response_keys (key, response_id) VALUES (?, ?)", (key, rid))
        outcome = "new"
    else:
        rid = found[0]
        there = [(r[0], r[1], r[2]) for r in con.execute(
            "SELECT step, verdict, soft FROM step_labels WHERE response_id=? AND superseded=0 AND +annotator_id=? "
            "ORDER BY step", (rid, ann))]
        outcome = "labeled" if not there else "same" if there == list(zip(range(len(verdicts)), verdicts, soft)) \
            else "other"
        if outcome == "same" or (outcome == "other" and not replace):
            return rid, outcome
        con.execute("UPDATE step_labels SET superseded=1 WHERE response_id=? AND superseded=0 AND +annotator_id=?",
                    (rid, ann))
    con.executemany("INSERT INTO step_labels (response_id, step, verdict, annotator_id, soft, created) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    [(rid, k, v, ann, s, now) for k, (v, s) in enumerate(zip(verdicts, soft))])
    return rid, outcome


def write_rollout_labels(ws: Workspace, prompt: str, prompt_extra: dict, response: str, verdicts: list[int],
                         soft: list[float], set_name: str, source: str) -> int:
    """Store a response (under prompt set `set_name`, its prompt with `prompt_extra` as columns) and the rollouts'
    verdicts on its first steps, under ROLLOUTS, in one transaction; its id. Called again for the same prompt and
    response, it writes no second copy: the rollouts' labels are replaced when they differ. The verdicts stop at
    the first bad one (the steps after it are not credited)."""
    if not isinstance(prompt, str) or not prompt.strip() or not isinstance(response, str):
        raise DataError("A rollout needs a prompt (non-empty text) and a response (text).")
    n = len(response_steps(response))
    verdicts, soft = [check_verdict(v) for v in verdicts], list(soft)
    if not n or not verdicts or len(verdicts) > n or len(soft) != len(verdicts):
        raise DataError(f"A rollout's verdicts must cover the first steps of its response, one soft value each: "
                        f"the response has {n} steps, got {len(verdicts)} verdicts and {len(soft)} soft values.")
    if any(s is not None and not (isinstance(s, (int, float)) and 0 <= s <= 1) for s in soft):
        raise DataError("A rollout's soft values are shares between 0 and 1 (or None).")
    cut = verdicts.index(-1) + 1 if -1 in verdicts else len(verdicts)
    now = time.time()
    with ws.transaction() as con:
        sid = get_or_create_set(con, set_name, source)
        rid, _ = store_labeled(con, sid, prompt, dict(prompt_extra or {}), response, source,
                               _annotator(con, ROLLOUTS), verdicts[:cut], [None if s is None else float(s)
                                                                           for s in soft[:cut]], now, replace=True)
    return rid


# -- which responses have steps ------------------------------------------------------------------------------------

def count_steps(ws: Workspace) -> None:
    """Count the steps of the responses written since the last count (response_steps keeps those with any)."""
    top = ws.query("SELECT IFNULL(MAX(id), 0) FROM responses")[0][0]
    while int(ws.setting("steps_counted", "0")) < top:
        with ws.transaction() as con:
            done = int((con.execute("SELECT value FROM settings WHERE key='steps_counted'").fetchone() or ["0"])[0])
            upto = min(top, done + COUNT_ROWS)
            rows = con.execute("SELECT id, text FROM responses WHERE id > ? AND id <= ? AND instr(text, 'think>') > 0",
                               (done, upto)).fetchall()  # no tag: no reasoning, no steps
            con.executemany("INSERT OR REPLACE INTO response_steps (response_id, n) VALUES (?, ?)",
                            [(rid, n) for rid, n in ((r[0], len(parse(r[1], "blank").steps)) for r in rows) if n])
            con.execute("INSERT OR REPLACE INTO settings (key, value) VALUES ('steps_counted', ?)", (str(upto),))


# -- the queue -----------------------------------------------------------------------------------------------------

_MINE = """SELECT sl.response_id, COUNT(*) AS k, MIN(sl.verdict) AS worst, MAX(sl.created) AS last, rs.n
           FROM step_labels sl JOIN response_steps rs ON rs.response_id = sl.response_id {join}
           WHERE sl.annotator_id = :ann AND sl.superseded = 0 GROUP BY sl.response_id"""
_SOURCE_JOIN = "JOIN responses r ON r.id = {col} AND r.source = :source"
_SOURCES: dict[tuple, list[str]] = {}  # (database, highest response counted) -> the sources of responses with steps


def _mine(ws: Workspace, ann: int, source: str = "") -> list:
    """(response, labels, worst verdict, last label time, steps) of each response the annotator holds labels on."""
    join = _SOURCE_JOIN.format(col="sl.response_id") if source else ""
    return ws.query(_MINE.format(join=join), {"ann": ann, "source": source})


def _finished(r) -> bool:
    return r["worst"] == -1 or r["k"] > r["n"]  # a bad step, or every step and the final answer (index n)


def _sources(ws: Workspace) -> list[str]:
    """The sources of the responses with steps; kept until responses are added (a source never changes)."""
    key = (str(ws.db_path), ws.query("SELECT IFNULL(MAX(response_id), 0) FROM response_steps")[0][0])
    if key not in _SOURCES:
        _SOURCES.clear()
        _SOURCES[key] = [r[0] for r in ws.query("SELECT DISTINCT r.source FROM response_steps rs JOIN responses r "
                                                "ON r.id = rs.response_id ORDER BY r.source")]
    return _SOURCES[key]


def _unlabeled_in(ws: Workspace, ann: int | None, source: str, limit: int) -> list[int]:
    """The first `limit` responses with steps (of `source`, '' any) the annotator holds no label on, as stored."""
    join = _SOURCE_JOIN.format(col="rs.response_id") if source else ""
    return [r[0] for r in ws.query(
        f"""SELECT rs.response_id FROM response_steps rs {join} WHERE NOT EXISTS (
              SELECT 1 FROM step_labels sl WHERE sl.response_id = rs.response_id AND sl.superseded = 0
              AND +sl.annotator_id = :ann) ORDER BY rs.response_id LIMIT :limit""",
        {"ann": ann or -1, "source": source, "limit": int(limit)})]


def unlabeled(ws: Workspace, annotator: str, source: str = "", order: str = "sources", limit: int = 1) -> list[int]:
    """The next `limit` responses with steps the annotator has not labeled, in the queue's `order` (ORDERS): stored,
    or sources in turn (round robin over the sources, the one they labeled fewest responses of first)."""
    name = _person_name(annotator)
    count_steps(ws)
    ann = _known(ws.connect(), name)
    if order != "sources" or source:
        return _unlabeled_in(ws, ann, source, limit)
    done = {r[0]: r[1] for r in ws.query(
        "SELECT r.source, COUNT(DISTINCT sl.response_id) FROM step_labels sl JOIN responses r ON r.id = sl.response_id "
        "WHERE sl.annotator_id = ? AND sl.superseded = 0 GROUP BY r.source", (ann or -1,))}
    lists = [ids for ids in (_unlabeled_in(ws, ann, s, limit) for s in _sources(ws)) if ids]
    lists.sort(key=lambda ids: (done.get(_source_of(ws, ids[0]), 0), ids[0]))
    out = []
    for k in range(limit):
        out += [ids[k] for ids in lists if k < len(ids)]
    return out[:limit]


def _source_of(ws: Workspace, response_id: int) -> str:
    return ws.query("SELECT source FROM responses WHERE id=?", (response_id,))[0][0]


def next_response(ws: Workspace, annotator: str, source: str = "", order: str = "sources",
                  prefer: list[int] | None = None) -> dict | None:
    """The response this annotator should step-label next (response_view), or None when none is left: the one they
    labeled last and did not finish, else the first of `prefer` (the model's order) they have not labeled, else the
    next one in the queue's `order` (ORDERS). Every response counts: imported pairs, candidates, stepwise imports,
    rollouts. `source`: only responses of that source (responses.source, e.g. 'import:file.jsonl')."""
    name = _person_name(annotator)
    count_steps(ws)
    ann = _known(ws.connect(), name)
    open_ = [r for r in _mine(ws, ann, source) if not _finished(r)] if ann else []
    if open_:
        return response_view(ws, name, max(open_, key=lambda r: r["last"])["response_id"])
    mine = {r["response_id"] for r in _mine(ws, ann)} if ann and prefer else set()
    rid = next((int(i) for i in prefer or () if int(i) not in mine), None)
    if rid is None:
        rid = next(iter(unlabeled(ws, name, source, order)), None)
    return response_view(ws, name, rid) if rid is not None else None


def response_view(ws: Workspace, annotator: str, response_id: int) -> dict:
    """A response as the annotator labels it: {response_id, prompt, turns, source, response, steps, answer_text,
    total_steps (its <think> steps), answer_step (= total_steps: the final answer's index), labels (their verdict of
    each step and then of the answer, None: unlabeled), accepted (per label: taken from a model), done, first_bad,
    step (the next to label: the first unlabeled step before their first bad one, the answer after the last step;
    None when they finished the response)}."""
    con = ws.connect()
    r = con.execute("SELECT r.text, r.source, p.text AS prompt, p.extra FROM responses r JOIN prompts p "
                    "ON p.id = r.prompt_id WHERE r.id=?", (int(response_id),)).fetchone()
    if r is None:
        raise DataError(f"Response #{response_id} is not in this workspace.")
    parsed = parse(r["text"], "blank")
    n = len(parsed.steps)
    labels: list[int | None] = [None] * (n + 1)
    accepted = [False] * (n + 1)
    ann = _known(con, annotator)
    for step, verdict, took in con.execute("SELECT step, verdict, accepted FROM step_labels WHERE response_id=? AND "
                                           "superseded=0 AND +annotator_id=?", (response_id, ann or -1)):
        if step <= n:
            labels[step], accepted[step] = verdict, bool(took)
    first_bad = labels.index(-1) if -1 in labels else None
    todo = [k for k, v in enumerate(labels[:first_bad]) if v is None] if n else []
    return {"response_id": int(response_id), "prompt": r["prompt"], "turns": prompt_turns(r["extra"]),
            "source": r["source"], "response": r["text"], "steps": [s.text for s in parsed.steps],
            "answer_text": parsed.answer, "labels": labels, "accepted": accepted,
            "done": sum(v is not None for v in labels), "first_bad": first_bad, "total_steps": n, "answer_step": n,
            "step": todo[0] if todo else None}


def progress(ws: Workspace, annotator: str) -> dict:
    """{responses: responses with steps, finished / finished_today: those the annotator finished (labeled every
    step and the answer, or up to a bad step; today: their last label since local midnight), started: begun and not
    finished, steps / steps_today: their current step labels (answers included)}."""
    count_steps(ws)
    out = {"responses": ws.query("SELECT COUNT(*) FROM response_steps")[0][0], "finished": 0, "finished_today": 0,
           "started": 0, "steps": 0, "steps_today": 0}
    ann = _known(ws.connect(), annotator) if (annotator or "").strip() else None
    if ann is None:
        return out
    today = day_start()
    for r in _mine(ws, ann):
        done = _finished(r)
        out["finished"] += done
        out["finished_today"] += done and r["last"] >= today
        out["started"] += not done
        out["steps"] += r["k"]
    out["steps_today"] = ws.query("SELECT COUNT(*) FROM step_labels WHERE annotator_id=? AND superseded=0 AND "
                                  "created >= ?", (ann, today))[0][0]
    return out
