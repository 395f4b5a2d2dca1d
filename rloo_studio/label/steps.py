"""Step labels for a process reward model: a verdict on each <think> step of a response, beside the pair labels.

A response's steps are those of thinking.parse(text, split="blank"). A verdict is PRM800K's: good (+1), neutral (0)
or bad (-1). Labeling a response stops at its first bad step: the steps after it are not credited, so a bad verdict
supersedes that annotator's labels of later steps, and labeling a step after one's own bad step is refused.

Who labels: people (by the name they type), the import ('import', from stepwise files) and the rollouts job
(ROLLOUTS: the share of sampled continuations from each step that reached the answer). Their labels are never
mixed: every reader says whose labels it reads. A label is returned to the caller only after its transaction has
committed; a re-label, an undo or a cut by a bad step supersedes a label (kept, marked), never deletes it.
"""
from __future__ import annotations

import hashlib
import json
import time
from itertools import groupby

from rloo_studio.core.errors import DataError
from rloo_studio.core.thinking import parse
from rloo_studio.core.workspace import Workspace
from rloo_studio.label.prompts import add_prompt, add_response, get_or_create_set
from rloo_studio.label.shapes import TURNS
from rloo_studio.label.store import IMPORT_ANNOTATOR, ROLLOUTS_ANNOTATOR, day_start, prompt_turns

VERDICTS = {"good": 1, "neutral": 0, "bad": -1}
WORDS = {v: k for k, v in VERDICTS.items()}
ROLLOUTS = ROLLOUTS_ANNOTATOR  # the annotator of the rollouts' labels; no person may take the name
IMPORTED = IMPORT_ANNOTATOR
COUNT_ROWS = 20_000  # responses whose steps are counted per transaction (people labeling wait at most for one)


def response_steps(text: str) -> list[str]:
    """The texts of a response's <think> steps (blank-line split), in order."""
    return [s.text for s in parse(text, "blank").steps]


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


# -- writing labels ------------------------------------------------------------------------------------------------

def label_step(ws: Workspace, response_id: int, step: int, verdict: int, annotator: str,
               soft: float | None = None) -> None:
    """Store a person's verdict on step `step` (0-based) of a response, once committed. A re-label of that step
    supersedes their earlier label; a bad verdict also supersedes their labels of later steps (not credited)."""
    verdict, name = check_verdict(verdict), _person_name(annotator)
    with ws.transaction() as con:
        n = len(response_steps(_response_text(con, response_id)))
        if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step < n:
            raise DataError(f"Step index {step!r} is out of range: response #{response_id} has {n} step"
                            f"{'s' if n != 1 else ''}" + (f" (indexes 0 to {n - 1})." if n else "; nothing to label."))
        ann = _annotator(con, name)
        bad = con.execute("SELECT MIN(step) FROM step_labels WHERE response_id=? AND superseded=0 AND +annotator_id=? "
                          "AND verdict=-1", (response_id, ann)).fetchone()[0]
        if bad is not None and step > bad:
            raise DataError(f"Step {step + 1} comes after step {bad + 1}, which you marked bad: the steps after the "
                            "first wrong one are not labeled. Label that step again first.")
        _write(con, response_id, step, verdict, ann, soft, time.time())


def _write(con, response_id: int, step: int, verdict: int, ann: int, soft: float | None, now: float) -> int:
    lid = con.execute("INSERT INTO step_labels (response_id, step, verdict, annotator_id, soft, created) "
                      "VALUES (?, ?, ?, ?, ?, ?)", (response_id, step, verdict, ann, soft, now)).lastrowid
    con.execute("UPDATE step_labels SET superseded=1, superseded_by=? WHERE response_id=? AND superseded=0 "
                "AND +annotator_id=? AND id != ? AND (step = ? OR (? = -1 AND step > ?))",
                (lid, response_id, ann, lid, step, verdict, step))
    return lid


def undo_step(ws: Workspace, annotator: str) -> tuple[int, int] | None:
    """Take back the annotator's latest step label: the labels it replaced or cut (an earlier label of that step,
    later steps cut by a bad verdict) are current again. (response_id, step) of it, or None: nothing to undo."""
    with ws.transaction() as con:
        ann = _known(con, annotator)
        last = ann and con.execute("SELECT id, response_id, step FROM step_labels WHERE annotator_id=? AND "
                                   "superseded=0 ORDER BY created DESC, id DESC LIMIT 1", (ann,)).fetchone()
        if not last:
            return None
        con.execute("UPDATE step_labels SET superseded=1, superseded_by=NULL WHERE id=?", (last["id"],))
        con.execute("UPDATE step_labels SET superseded=0, superseded_by=NULL WHERE annotator_id=? AND superseded_by=?",
                    (ann, last["id"]))
        return last["response_id"], last["step"]


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


def _mine(ws: Workspace, ann: int, source: str = "") -> list:
    """(response, labels, worst verdict, last label time, steps) of each response the annotator holds labels on."""
    join = _SOURCE_JOIN.format(col="sl.response_id") if source else ""
    return ws.query(_MINE.format(join=join), {"ann": ann, "source": source})


def _finished(r) -> bool:
    return r["worst"] == -1 or r["k"] >= r["n"]


def next_response(ws: Workspace, annotator: str, source: str = "") -> dict | None:
    """The response this annotator should step-label next (response_view), or None when none is left: the one they
    labeled last and did not finish, else the first response with steps (in the order stored) they have not
    labeled. Every response counts: imported pairs, candidates, stepwise imports, rollouts. `source`: only
    responses of that source (responses.source, e.g. 'import:file.jsonl')."""
    name = _person_name(annotator)
    count_steps(ws)
    ann = _known(ws.connect(), name)
    open_ = [r for r in _mine(ws, ann, source) if not _finished(r)] if ann else []
    if open_:
        return response_view(ws, name, max(open_, key=lambda r: r["last"])["response_id"])
    join = _SOURCE_JOIN.format(col="rs.response_id") if source else ""
    row = ws.query(f"""SELECT rs.response_id FROM response_steps rs {join} WHERE NOT EXISTS (
                         SELECT 1 FROM step_labels sl WHERE sl.response_id = rs.response_id AND sl.superseded = 0
                         AND +sl.annotator_id = :ann) ORDER BY rs.response_id LIMIT 1""",
                   {"ann": ann or -1, "source": source})
    return response_view(ws, name, row[0][0]) if row else None


def response_view(ws: Workspace, annotator: str, response_id: int) -> dict:
    """A response as the annotator labels it: {response_id, prompt, turns, source, response, steps, answer_text,
    labels (their verdict of each step, None: unlabeled), done, first_bad, total_steps, step (the step to label
    now: the first unlabeled one before their first bad step; None when they finished the response)}."""
    con = ws.connect()
    r = con.execute("SELECT r.text, r.source, p.text AS prompt, p.extra FROM responses r JOIN prompts p "
                    "ON p.id = r.prompt_id WHERE r.id=?", (int(response_id),)).fetchone()
    if r is None:
        raise DataError(f"Response #{response_id} is not in this workspace.")
    parsed = parse(r["text"], "blank")
    labels: list[int | None] = [None] * len(parsed.steps)
    ann = _known(con, annotator)
    for step, verdict in con.execute("SELECT step, verdict FROM step_labels WHERE response_id=? AND superseded=0 "
                                     "AND +annotator_id=?", (response_id, ann or -1)):
        if step < len(labels):
            labels[step] = verdict
    first_bad = labels.index(-1) if -1 in labels else None
    todo = [k for k, v in enumerate(labels[:first_bad]) if v is None]
    return {"response_id": int(response_id), "prompt": r["prompt"], "turns": prompt_turns(r["extra"]),
            "source": r["source"], "response": r["text"], "steps": [s.text for s in parsed.steps],
            "answer_text": parsed.answer, "labels": labels, "done": sum(v is not None for v in labels),
            "first_bad": first_bad, "total_steps": len(labels), "step": todo[0] if todo else None}


def progress(ws: Workspace, annotator: str) -> dict:
    """{responses: responses with steps, finished / finished_today: those the annotator finished (labeled every
    step, or up to a bad one; today: their last label since local midnight), started: begun and not finished,
    steps / steps_today: their current step labels}."""
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


# -- readers: training, export, agreement --------------------------------------------------------------------------

def _who_sql(who: str) -> tuple[str, tuple]:
    if who == "all":
        return "", ()
    if who == "people":
        return "AND an.name NOT IN (?, ?)", (IMPORTED, ROLLOUTS)
    if who == "rollouts":
        return "AND an.name = ?", (ROLLOUTS,)
    if not (who or "").strip():
        raise DataError("Say whose step labels: 'all', 'people', 'rollouts' or an annotator's name.")
    return "AND an.name = ?", (who.strip(),)


def any_labels(ws: Workspace) -> bool:
    """Whether the workspace holds any step label in force (by anyone)."""
    return bool(ws.query("SELECT 1 FROM step_labels WHERE superseded = 0 LIMIT 1"))


def labeled_responses(ws: Workspace, who: str = "all") -> list[dict]:
    """One entry per (response, annotator) whose labels start at the first step: {response_id, prompt, prompt_extra,
    response, steps (all its steps), labels (the labeled prefix: up to and including the first bad step, or as far
    as labeled without a gap), soft (the same length), annotator}. who: 'all', 'people' (neither the import nor
    the rollouts), 'rollouts', or an annotator's name."""
    cond, args = _who_sql(who)
    cur = ws.connect().execute(
        f"""SELECT sl.response_id, an.name, sl.step, sl.verdict, sl.soft, r.text, p.text AS prompt, p.extra
            FROM step_labels sl JOIN annotators an ON an.id = sl.annotator_id JOIN responses r ON r.id = sl.response_id
            JOIN prompts p ON p.id = r.prompt_id WHERE sl.superseded = 0 {cond}
            ORDER BY sl.response_id, an.name, sl.step""", args)
    out = []
    for (rid, name), rows in groupby(cur, key=lambda r: (r["response_id"], r["name"])):
        rows = list(rows)
        steps = response_steps(rows[0]["text"])
        labels, soft = [], []
        for r in rows:
            if r["step"] != len(labels) or r["step"] >= len(steps):
                break  # a gap: the prefix ends here
            labels.append(r["verdict"])
            soft.append(r["soft"])
            if r["verdict"] == -1:
                break
        if labels:
            out.append({"response_id": rid, "prompt": rows[0]["prompt"], "prompt_extra": json.loads(rows[0]["extra"]
                                                                                                     or "{}"),
                        "response": rows[0]["text"], "steps": steps, "labels": labels, "soft": soft, "annotator": name})
    return out


def agreement(ws: Workspace) -> dict:
    """Where a person and the rollouts labeled the same step of a response: {steps (how many), share (of those, where
    both say right (good or neutral) or both say bad; None when none), people: [{name, steps, share}]}."""
    rows = ws.query(
        """SELECT an.name, (p.verdict >= 0) = (r.verdict >= 0) AS same FROM step_labels p
           JOIN annotators an ON an.id = p.annotator_id
           JOIN step_labels r ON r.response_id = p.response_id AND r.step = p.step AND r.superseded = 0
                AND +r.annotator_id = (SELECT id FROM annotators WHERE name = :rollouts)
           WHERE p.superseded = 0 AND an.name NOT IN (:rollouts, :imported) ORDER BY an.name""",
        {"rollouts": ROLLOUTS, "imported": IMPORTED})
    people = []
    for name, rs in groupby(rows, key=lambda r: r["name"]):
        same = [r["same"] for r in rs]
        people.append({"name": name, "steps": len(same), "share": sum(same) / len(same)})
    n = sum(p["steps"] for p in people)
    return {"steps": n, "share": sum(p["share"] * p["steps"] for p in people) / n if n else None, "people": people}
