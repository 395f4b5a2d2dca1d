"""The preference store: the labeling queue, labels and undo, progress, TRL-ready rows.

Per-annotator counts and agreement between annotators are in label/agreement.py.

A label is returned to the caller only after its transaction has committed. Pairs are handed
out through claims, each held by an annotator in one session: a browser (all its tabs, across
reloads and app restarts: the Label tab keeps a browser id in localStorage) or a script
(`api:<name>`). A claimed pair is not shown to another session until it is labeled or the claim
expires, unless the overlap setting asks for more annotators per pair.
"""
from __future__ import annotations

import json
import random
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import groupby

from rloo_studio.core.workspace import Workspace

CHOICES = ("a", "b", "tie", "skip")
FILTERS = ("unlabeled", "labeled", "skipped", "ties", "flagged", "all")
IMPORT_ANNOTATOR = "import"
ROLLOUTS_ANNOTATOR = "rollouts (automatic)"  # label/steps.py ROLLOUTS: automatic step labels, never a person's
CLAIM_SECONDS = 300  # a pair left open in a browser that does not come back returns to the queue after this


@dataclass(frozen=True)
class Shown:
    """A pair as one annotator sees it: `left`/`right` after the randomized A/B order."""

    pair_id: int
    prompt: str
    left: str
    right: str
    a_shown_left: bool
    source: str
    flag: str | None
    current: str | None  # this annotator's current label of the pair, if any
    # a multi-turn prompt's conversation ({role, content}); prompt is its last user turn
    turns: list[dict] | None = None

    def choice_for(self, side: str) -> str:
        """Translate 'left'/'right'/'tie'/'skip' into the stored choice ('a' = response_a)."""
        if side in ("tie", "skip"):
            return side
        left_is_a = self.a_shown_left
        return "a" if (side == "left") == left_is_a else "b"

    def as_shown(self, choice: str | None) -> str | None:
        """A stored choice in the letters of this showing: 'a' for the response shown on the left (A)."""
        return choice if self.a_shown_left or choice not in ("a", "b") else {"a": "b", "b": "a"}[choice]


# -- settings and annotators ---------------------------------------------------------------

def overlap(ws: Workspace) -> int:
    return int(ws.setting("overlap", "1"))


def set_overlap(ws: Workspace, n: int) -> None:
    if not 1 <= int(n) <= 10:
        raise ValueError("overlap (annotators per pair) must be between 1 and 10")
    ws.set_setting("overlap", int(n))


def annotator_id(con, name: str) -> int:
    name = (name or "").strip()
    if not name:
        raise ValueError("enter your name first: each label records who gave it")
    if name == IMPORT_ANNOTATOR:
        raise ValueError(f"'{IMPORT_ANNOTATOR}' is reserved for imported labels; choose another name")
    if name == ROLLOUTS_ANNOTATOR:
        raise ValueError(f"'{ROLLOUTS_ANNOTATOR}' is reserved for the step labels the rollouts compute; "
                         "choose another name")
    row = con.execute("SELECT id FROM annotators WHERE name=?", (name,)).fetchone()
    if row:
        return row[0]
    return con.execute("INSERT INTO annotators (name, created) VALUES (?, ?)", (name, time.time())).lastrowid


# -- the queue ------------------------------------------------------------------------------

_FILTER_SQL = {
    # Pairs that still need a human label from someone (imported labels and skips do not count as done).
    "unlabeled": "+p.n_human < :overlap",  # '+': walk pairs_queue in its order, not a range of n_human
    "labeled": "p.n_human + p.n_import + p.n_skip > 0",
    "skipped": "p.n_skip > 0",
    "ties": "p.n_tie > 0",
    "flagged": "p.flag IS NOT NULL",
    "all": "1",
}

# Runs on every key press. Each pair carries the counts of its current labels (pairs.n_*, kept by
# triggers), and the ORDER BY is the pairs_queue index, so the scan stops at the first pair that
# this annotator may take: flagged first, then pairs nobody skipped, fewer people's labels, no
# imported label, oldest. A pair is left out when this annotator labeled it (unless re-labeling),
# when their other session holds it, or when labels + other annotators' open claims fill the overlap.
_CANDIDATES = """
SELECT p.id FROM pairs p {index} {prefer_join}
WHERE {filter} {tier}
  AND (:source = '' OR p.source = :source)
  AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.pair_id = p.id AND c.annotator_id = :ann
                  AND c.session != :session AND c.expires > :now)
  AND ({relabel} OR NOT EXISTS (SELECT 1 FROM labels l WHERE l.pair_id = p.id AND l.superseded = 0
                                AND +l.annotator_id = :ann))
  AND p.n_human + (SELECT COUNT(*) FROM claims c WHERE c.pair_id = p.id AND c.annotator_id != :ann
                   AND c.session != :session AND c.expires > :now) < :overlap_or_any
ORDER BY p.flag IS NULL, {prefer_order} p.n_skip > 0, p.n_human, p.n_import > 0, p.id
LIMIT 1
"""


def _candidate(con, filter: str, args: dict, prefer: bool, partial: bool):
    sql = _CANDIDATES.format(
        filter=_FILTER_SQL[filter], relabel="0" if filter == "unlabeled" else "1",
        # overlap > 1: pairs that some, not enough, people labeled come before new ones (a small set)
        tier="AND p.n_human BETWEEN 1 AND :overlap - 1" if partial else "",
        index="" if prefer else "INDEXED BY pairs_counts" if partial else "INDEXED BY pairs_queue",
        prefer_join="JOIN json_each(:prefer) AS pj ON pj.value = p.id" if prefer else "",
        prefer_order="pj.key," if prefer else "")
    return con.execute(sql, args).fetchone()


def next_pair(ws: Workspace, annotator: str, session: str, filter: str = "unlabeled", source: str = "",
              rng: random.Random | None = None, prefer: list[int] | None = None) -> Shown | None:
    """Claim and return the next pair for this annotator and session (None: queue empty).

    `session` is the browser's id (the same in all its tabs and across reloads and restarts) or a
    script's. A session keeps its open claim: a reload or a second tab shows the same pair again, in
    the same A/B order, and the claim's time starts again. One session shows one annotator's pair:
    asking under another name gives back the claims the session held under the old one.
    `prefer` puts these pair ids first, in this order (active labeling: most uncertain first).
    The A/B order is drawn at random the first time this annotator is given the pair and kept
    (pair_order): coming back to a pair, in any session, shows it in the same order.
    """
    if filter not in FILTERS:
        raise ValueError(f"unknown filter {filter!r}; choose one of {', '.join(FILTERS)}")
    now = time.time()
    with ws.transaction() as con:
        ann = annotator_id(con, annotator)
        con.execute("DELETE FROM claims WHERE expires <= ? OR (session = ? AND annotator_id != ?)", (now, session, ann))
        row = con.execute(
            "SELECT pair_id, a_shown_left FROM claims WHERE session=? AND annotator_id=? ORDER BY expires DESC LIMIT 1",
            (session, ann),
        ).fetchone()
        if row is not None:  # the session's own pair again (a reload, another tab): held for another CLAIM_SECONDS
            con.execute("UPDATE claims SET expires=? WHERE pair_id=? AND session=?",
                        (now + CLAIM_SECONDS, row[0], session))
        else:
            n = int((con.execute("SELECT value FROM settings WHERE key='overlap'").fetchone() or ["1"])[0])
            relabel = filter != "unlabeled"
            args = {"session": session, "now": now, "ann": ann, "overlap": n, "source": source,
                    "overlap_or_any": n if not relabel else 1 << 30, "prefer": json.dumps(prefer or [])}
            found = None
            for pref in ([True, False] if prefer else [False]):  # the preferred pairs first, in their order
                for partial in ([True, False] if n > 1 and not relabel else [False]):
                    found = found or _candidate(con, filter, args, pref, partial)
            if found is None:
                return None
            left = _order(con, found[0], ann, rng)
            con.execute(
                "INSERT OR REPLACE INTO claims (pair_id, annotator_id, session, a_shown_left, expires) "
                "VALUES (?, ?, ?, ?, ?)", (found[0], ann, session, int(left), now + CLAIM_SECONDS),
            )
            row = (found[0], int(left))
        return _shown(con, row[0], bool(row[1]), ann)


def _order(con, pair_id: int, ann: int, rng: random.Random | None = None) -> bool:
    """True when response_a is shown on the left to this annotator: drawn once, then always the same."""
    row = con.execute("SELECT a_shown_left FROM pair_order WHERE pair_id=? AND annotator_id=?",
                      (pair_id, ann)).fetchone()
    if row is not None:
        return bool(row[0])
    left = (rng or random).random() < 0.5
    con.execute("INSERT INTO pair_order (pair_id, annotator_id, a_shown_left) VALUES (?, ?, ?)",
                (pair_id, ann, int(left)))
    return left


def _shown(con, pair_id: int, a_left: bool, ann: int) -> Shown:
    r = con.execute(
        """SELECT p.id, pr.text AS prompt, pr.extra, ra.text AS a, rb.text AS b, p.source, p.flag FROM pairs p
           JOIN prompts pr ON pr.id = p.prompt_id JOIN responses ra ON ra.id = p.response_a
           JOIN responses rb ON rb.id = p.response_b WHERE p.id = ?""", (pair_id,),
    ).fetchone()
    cur = con.execute(
        "SELECT choice FROM labels WHERE pair_id=? AND +annotator_id=? AND superseded=0", (pair_id, ann)
    ).fetchone()
    left, right = (r["a"], r["b"]) if a_left else (r["b"], r["a"])
    return Shown(r["id"], r["prompt"], left, right, a_left, r["source"], r["flag"], cur[0] if cur else None,
                 prompt_turns(r["extra"]))


def prompt_turns(extra: str | None) -> list[dict] | None:
    """The turns of a multi-turn prompt (stored as extra['messages'] by imports), or None."""
    try:
        turns = json.loads(extra or "{}").get("messages")
    except (ValueError, AttributeError):
        return None
    return turns if isinstance(turns, list) and len(turns) > 1 else None


def release(ws: Workspace, session: str) -> None:
    """Give back this session's claims (e.g. when the filter changes)."""
    with ws.transaction() as con:
        con.execute("DELETE FROM claims WHERE session=?", (session,))


def save_label(ws: Workspace, shown: Shown, annotator: str, session: str, side: str, comment: str = "") -> int:
    """Store the annotator's choice for a shown pair; returns the label id once committed.

    side: 'left', 'right', 'tie' or 'skip' as the annotator saw it. An earlier label by the
    same annotator on this pair is superseded (kept, marked), so changing one's mind is safe.
    """
    if side not in ("left", "right", "tie", "skip"):
        raise ValueError(f"unknown choice {side!r}")
    with ws.transaction() as con:
        return _save(con, shown, annotator, session, shown.choice_for(side), comment)


def _save(con, shown: Shown, annotator: str, session: str, choice: str, comment: str) -> int:
    ann = annotator_id(con, annotator)
    if con.execute("SELECT 1 FROM pairs WHERE id=?", (shown.pair_id,)).fetchone() is None:
        raise KeyError(f"pair {shown.pair_id} no longer exists")
    con.execute("UPDATE labels SET superseded=1 WHERE pair_id=? AND +annotator_id=? AND superseded=0",
                (shown.pair_id, ann))
    lid = con.execute(
        "INSERT INTO labels (pair_id, annotator_id, choice, a_shown_left, comment, created) "
        "VALUES (?, ?, ?, ?, ?, ?)", (shown.pair_id, ann, choice, int(shown.a_shown_left), comment or "", time.time()),
    ).lastrowid
    con.execute("INSERT OR IGNORE INTO pair_order (pair_id, annotator_id, a_shown_left) VALUES (?, ?, ?)",
                (shown.pair_id, ann, int(shown.a_shown_left)))
    con.execute("DELETE FROM claims WHERE pair_id=? AND session=?", (shown.pair_id, session))
    if choice in ("a", "b"):
        con.execute("UPDATE pairs SET flag=NULL WHERE id=?", (shown.pair_id,))
    return lid


def on_screen(shown: Shown | None, screen_pair_id) -> bool:
    """True only when the page shows this very pair (its id is what the page displays right now)."""
    return shown is not None and str(screen_pair_id or "").strip() == str(shown.pair_id)


def save_on_screen(ws: Workspace, shown: Shown | None, screen_pair_id, annotator: str, session: str, side: str,
                   comment: str = "") -> int | None:
    """save_label, but only for the pair the page shows at the moment of the key press.

    None (nothing saved) when no pair is on screen or the page shows another pair than the
    session's current one: a label is never given to a pair the annotator could not see."""
    if not on_screen(shown, screen_pair_id):
        return None
    return save_label(ws, shown, annotator, session, side, comment)


def flag_pair(ws: Workspace, shown: Shown, annotator: str, session: str, reason: str = "") -> int:
    """Flag a shown pair for re-labeling and move this annotator past it (stored as their skip).

    The flag puts the pair first in everyone's queue and under the 'flagged' filter until someone
    labels it A or B; the skip keeps it out of this annotator's own unlabeled queue."""
    why = (reason or "").strip() or f"flagged by {annotator.strip()}"
    with ws.transaction() as con:
        lid = _save(con, shown, annotator, session, "skip", reason)
        con.execute("UPDATE pairs SET flag=? WHERE id=?", (why[:200], shown.pair_id))
    return lid


def undo(ws: Workspace, annotator: str, session: str) -> Shown | None:
    """Withdraw the annotator's latest label and show that pair again (same A/B order)."""
    with ws.transaction() as con:
        ann = annotator_id(con, annotator)
        last = con.execute(
            "SELECT id, pair_id, a_shown_left FROM labels WHERE annotator_id=? AND superseded=0 "
            "ORDER BY created DESC, id DESC LIMIT 1", (ann,),
        ).fetchone()
        if last is None:
            return None
        con.execute("UPDATE labels SET superseded=1 WHERE id=?", (last["id"],))
        con.execute("DELETE FROM claims WHERE session=?", (session,))
        left = bool(last["a_shown_left"]) if last["a_shown_left"] is not None else True
        con.execute(
            "INSERT INTO claims (pair_id, annotator_id, session, a_shown_left, expires) VALUES (?, ?, ?, ?, ?)",
            (last["pair_id"], ann, session, int(left), time.time() + CLAIM_SECONDS),
        )
        return _shown(con, last["pair_id"], left, ann)


# -- progress and agreement -------------------------------------------------------------------

def progress(ws: Workspace, annotator: str | None = None, window_s: float = 600) -> dict:
    """How far labeling is. People's labels are counted apart from imported ones; a skip is not a label.

    total: pairs. human_labeled: pairs with a current A / B / tie label from a person.
    imported_only: pairs whose only A / B / tie labels are imported. labeled: the two together.
    skipped: pairs that people skipped and nobody labeled. mine / my_skips: this annotator's current
    labels / skips; mine_today: their current labels given since local midnight; per_minute: their pace
    over the last `window_s` seconds (skips included).
    """
    r = ws.query(  # each count is a range of the pairs_counts index (about a millisecond at 100k pairs)
        "SELECT (SELECT COUNT(*) FROM pairs) AS total, (SELECT COUNT(*) FROM pairs WHERE n_human > 0) AS human, "
        "(SELECT COUNT(*) FROM pairs WHERE n_human = 0 AND n_import > 0) AS imported, "
        "(SELECT COUNT(*) FROM pairs WHERE n_human = 0 AND n_import = 0 AND n_skip > 0) AS skipped")[0]
    human, imported = r["human"] or 0, r["imported"] or 0
    out = {"total": r["total"] or 0, "labeled": human + imported, "human_labeled": human, "imported_only": imported,
           "skipped": r["skipped"] or 0, "mine": 0, "my_skips": 0, "mine_today": 0, "per_minute": 0.0}
    if annotator:
        row = ws.query("SELECT id FROM annotators WHERE name=?", (annotator,))
        if not row:
            return out
        ann = row[0][0]
        for choice, k in ws.query("SELECT choice, COUNT(*) FROM labels WHERE annotator_id=? AND superseded=0 "
                                  "GROUP BY choice", (ann,)):  # the labels_mine index
            out["my_skips" if choice == "skip" else "mine"] += k
        out["mine_today"] = ws.query("SELECT COUNT(*) FROM labels WHERE annotator_id=? AND created >= ? AND "
                                     "superseded=0 AND choice != 'skip'", (ann, day_start()))[0][0]  # labels_annotator
        recent = [x[0] for x in ws.query("SELECT created FROM labels WHERE annotator_id=? AND created > ? "
                                         "AND superseded=0 ORDER BY created", (ann, time.time() - window_s))]
        if len(recent) >= 2:
            out["per_minute"] = 60 * (len(recent) - 1) / max(recent[-1] - recent[0], 1e-9)
    return out


def day_start() -> float:
    """Local midnight today, as a timestamp ('today' in the progress counts)."""
    return time.mktime(time.localtime()[:3] + (0, 0, 0, 0, 0, -1))


# -- rows for training and export --------------------------------------------------------------

def decided_pairs(ws: Workspace) -> Iterator[dict]:
    """Every pair with current labels, resolved, in pair order: {pair_id, prompt, extra, a, b, outcome, why,
    source}. A stream (one pair's labels in memory at a time), so an export of a million pairs stays small.

    outcome is 'a' / 'b' (the majority of a-vs-b votes), 'tie' (ties or an even split) or
    'skip' (only skips); why says 'split' for a tie of an even a/b split. Human labels override imported
    ones on the same pair.
    """
    cur = ws.connect().execute(
        """SELECT l.pair_id, l.choice, an.name, p.text AS prompt, p.extra, ra.text AS a, rb.text AS b, pr.source
           FROM labels l JOIN annotators an ON an.id = l.annotator_id JOIN pairs pr ON pr.id = l.pair_id
           JOIN prompts p ON p.id = pr.prompt_id JOIN responses ra ON ra.id = pr.response_a
           JOIN responses rb ON rb.id = pr.response_b
           WHERE l.superseded = 0 ORDER BY l.pair_id"""
    )
    try:
        for pid, rows in groupby(cur, key=lambda r: r["pair_id"]):
            votes = {"import": Counter(), "human": Counter()}
            for r in rows:
                votes["import" if r["name"] == IMPORT_ANNOTATOR else "human"][r["choice"]] += 1
            outcome, why = decide(votes["human"], votes["import"])
            yield {"pair_id": pid, "prompt": r["prompt"], "extra": r["extra"], "a": r["a"], "b": r["b"],
                   "source": r["source"], "outcome": outcome, "why": why}
    finally:
        cur.close()  # a caller that stops early ends the read at once


def decide(human: Counter, imported: Counter) -> tuple[str, str]:
    """(outcome, why) of one pair's current labels, counted by choice: people's labels if any, else imported ones.

    outcome is 'a' / 'b' (the majority of a-vs-b votes), 'tie' (ties or an even split) or 'skip' (only skips);
    why says 'split' for a tie of an even a/b split."""
    c = human if sum(human.values()) else imported
    if c["a"] or c["b"]:
        outcome = "a" if c["a"] > c["b"] else "b" if c["b"] > c["a"] else "tie"
    else:
        outcome = "tie" if c["tie"] else "skip"
    return outcome, "split" if outcome == "tie" and c["a"] else outcome  # a tie by an even a/b split of votes


def preference_row(d: dict) -> dict | None:
    """{pair_id, prompt, chosen, rejected, source} of a decided pair (decided_pairs) that prefers one side."""
    if d["outcome"] not in ("a", "b"):
        return None
    win, lose = (d["a"], d["b"]) if d["outcome"] == "a" else (d["b"], d["a"])
    return {"pair_id": d["pair_id"], "prompt": d["prompt"], "chosen": win, "rejected": lose, "source": d["source"]}


def preference_pairs(ws: Workspace) -> list[dict]:
    """One {pair_id, prompt, chosen, rejected, source} row per pair whose labels prefer one side."""
    return [row for row in map(preference_row, decided_pairs(ws)) if row]


def counts(ws: Workspace) -> dict:
    p = progress(ws)
    return {"pairs": p["total"], "labeled": p["labeled"]}


def sources(ws: Workspace) -> list[str]:
    return [r[0] for r in ws.query("SELECT DISTINCT source FROM pairs ORDER BY source")]


def flag_for_relabel(ws: Workspace, pair_id: int, reason: str) -> None:
    """Send a pair back to the Label tab (shown first under the 'flagged' filter)."""
    with ws.transaction() as con:
        if con.execute("UPDATE pairs SET flag=? WHERE id=?", (reason or "re-label", pair_id)).rowcount != 1:
            raise KeyError(f"no pair {pair_id}")
