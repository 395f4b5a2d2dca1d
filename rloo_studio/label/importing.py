"""Import files into the store: preference pairs, prompt sets, or prompts with candidate responses.

Accepted: JSONL, CSV, Parquet, or a `datasets` folder (save_to_disk; read by reading.py). Shapes, by columns:
  prompt?, chosen, rejected     TRL preference data, standard (strings) or conversational
                                (lists of {role, content}), explicit or implicit prompt; also the
                                UltraFeedback-binarized and Anthropic HH shapes (see shapes.py)
  prompt, responses             a list of 2+ candidate responses per prompt (to be labeled)
  prompt, response_1..N         the same, one column per candidate
  prompt, completions, labels  stepwise supervision: each row one response of <think> steps with true / false
                                labels, stored as step labels of annotator 'import' (label/steps.py)
  problem, steps, label         ProcessBench (label: the first wrong step, -1 none), stored as a stepwise row
  question, label               PRM800K's own JSONL (label/prm800k.py), stored as a stepwise row
  prompt (+ other columns)      a prompt set for RLOO; other columns (answer, ...) are kept
Every problem is a DataError naming the file, the row (line for JSONL) and the field; an import
is all or nothing: nothing is written unless every row is valid.

The file is read once, one row at a time (checking.py; a big JSONL file in parts, one process per core:
check_parts.py): every row is checked and kept, as checked, in a temporary file; then the rows are written from
it, CHUNK_ROWS to a transaction (import_store.Batch), so that memory does not grow with the file (a JSONL file; the
other formats are read whole) and people labeling meanwhile wait at most for one chunk's write. An import stopped
while it writes (the process killed) leaves the chunks it committed; importing the file again adds the rest and
nothing twice.

Imports are idempotent and lose nothing: a row already in the workspace is skipped and counted, unless
the caller asks to keep duplicates (then pairs are written as new pairs, and a prompt set's prompts
already there take the file's columns: a set holds each prompt once). Already there means: for a
candidates row, every pair of its candidates; for a prompt-set row, its prompt text in that set; for a
preference row, its pair (the same prompt and two responses, in either order) *with that imported label*; for a
stepwise row, its response (the same prompt and steps) with imported step labels.
A preference row whose pair is there without that label adds its label to the pair (an unlabeled
candidate pair gets its label; chosen and rejected the other way round give the pair a split vote).
Pairs carry a `dedup_key` (pair_key()), indexed, so the check is one indexed query per chunk (a big import
sets the index aside and keeps the keys in memory: import_store.KeyMap).
"""
from __future__ import annotations

import json
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from itertools import combinations, islice
from pathlib import Path
from typing import Iterable

from rloo_studio.core.errors import DataError
from rloo_studio.core.workspace import Workspace
from rloo_studio.label.check_parts import check_in_parts, parts_for
from rloo_studio.label.checking import STEP_KINDS, check_all, records, unspooled
from rloo_studio.label.import_store import Batch, KeyMap, Match, existing_pairs, fill_keys, indexes_set_aside, pair_key
from rloo_studio.label.prompts import add_imported_label, add_prompt, get_or_create_set
from rloo_studio.label.reading import Progress
from rloo_studio.label.shapes import Row
from rloo_studio.label.steps import store_labeled
from rloo_studio.label.store import IMPORT_ANNOTATOR


@dataclass
class ImportResult:
    kind: str  # 'preference', 'candidates', 'prompts' or 'steps'
    name: str  # the prompt set / source name
    rows: int  # rows in the file
    pairs: int  # pairs written
    prompts: int  # prompts the new pairs use (for a prompt set: prompts written, new or again)
    columns: tuple[str, ...] = ()  # extra columns kept with the prompts (e.g. answer), for the rewards
    skipped: int = 0  # rows not written because they are already in the workspace (or repeat an earlier row)
    repeated: int = 0  # of those, rows that repeat an earlier row of the same file
    labeled: int = 0  # preference rows that matched a pair already there without their label: it was added
    split: int = 0  # of those, rows whose label is the opposite of one imported before: a split vote
    replaced: int = 0  # prompt set imported again: prompts already in the set that took the file's columns
    differ: int = 0  # prompt set: of the skipped rows, those whose columns differ from the stored ones
    # (steps: those whose labels differ from the stored imported ones, which were kept)
    responses: int = 0  # steps: responses written
    step_labels: int = 0  # steps: step labels written
    folded: int = 0  # steps: steps that held a blank line (or white space around them), folded
    unlabeled: int = 0  # steps: rows without a labeled step (PRM800K: no steps, or the first unrated), not stored
    shape: str = "stepwise"  # steps: the file's shape in words ('stepwise', 'ProcessBench', 'PRM800K')

    def summary(self) -> str:
        if self.kind == "prompts":
            return self._prompts_summary()
        if self.kind == "steps":
            return self._steps_summary()
        what = "labeled pairs (annotator 'import')" if self.kind == "preference" else "pairs to label"
        parts = [f"{self.pairs:,} {what}, {self.prompts:,} prompts"] if self.pairs or not self.labeled else []
        if self.labeled:
            one = self.labeled == 1
            parts.append(f"{self.labeled:,} {'row' if one else 'rows'} matched pairs already here: "
                         f"{'its label was' if one else 'their labels were'} added" + (
                             f" ({self.split:,} the opposite of the label imported before, so "
                             f"{'that pair shows' if self.split == 1 else 'those pairs show'} a split vote)"
                             if self.split else ""))
        if self.skipped:
            parts.append(f"{self._skipped('rows', 'already in the workspace')} "
                         "(keep duplicates to import them as new pairs)")
        done = f"{self.rows - self.skipped:,} of {self.rows:,}" if self.skipped else f"{self.rows:,}"
        return f"Imported {done} rows from {self.name}: " + "; ".join(parts) + "."

    def _prompts_summary(self) -> str:
        msg = f"Imported {self.prompts:,} prompts into prompt set '{self.name}'"
        if self.replaced:
            msg += (f" ({self.replaced:,} already there: a prompt set holds each prompt once, so "
                    f"{'it' if self.replaced == 1 else 'they'} took the file's columns)")
        if not self.skipped:
            return msg + "."
        msg += f". {self._skipped('prompts', 'already in that prompt set').capitalize()}"
        if self.differ:
            msg += (f" ({self.differ:,} with other column values than the file's; import again, keeping "
                    "duplicates, to take the file's)")
        return msg + "."

    def _steps_summary(self) -> str:
        parts = [f"{_n(self.responses, 'response')} with {_n(self.step_labels, 'step label')} (annotator 'import'), "
                 f"{_n(self.prompts, 'prompt')}"] if self.responses or not (self.labeled or self.skipped) else []
        if self.labeled:
            parts.append(f"{self.labeled:,} of them were already here without imported step labels: the labels "
                         "were added")
        if self.folded:
            parts.append(f"{self.folded:,} {'step' if self.folded == 1 else 'steps'} held a blank line or "
                         "surrounding white space: stored with blank lines folded to one line break (a blank line "
                         "separates steps) and trimmed")
        if self.skipped:
            other = (f"; {self.differ:,} of them with other labels than the stored ones, which were kept"
                     if self.differ else "")
            parts.append(f"{self._skipped('rows', 'already in the workspace')}{other} "
                         "(keep duplicates to import them as new responses)")
        if self.unlabeled:
            parts.append(f"{_n(self.unlabeled, 'row')} without a labeled step (no steps, or the first one unrated "
                         "or flagged) not stored")
        left = self.skipped + self.unlabeled
        done = f"{self.rows - left:,} of {self.rows:,}" if left else f"{self.rows:,}"
        return f"Imported {done} {self.shape} rows from {self.name}: " + "; ".join(parts) + "."

    def _skipped(self, what: str, where: str) -> str:
        old = self.skipped - self.repeated
        parts = [f"{old:,} {what} {where}"] if old else []
        if self.repeated:
            parts.append(f"{self.repeated:,} repeated in the file")
        return "skipped " + " and ".join(parts)


def _n(n: int, what: str) -> str:
    return f"{n:,} {what}{'' if n == 1 else 's'}"


def candidate_pairs(n: int) -> list[tuple[int, int]]:
    """Which responses to compare: all pairs up to 4 responses, else neighbours (0-1, 1-2, ...)."""
    return list(combinations(range(n), 2)) if n <= 4 else [(i, i + 1) for i in range(n - 1)]


# -- writing ------------------------------------------------------------------------------

KIND_WORDS = {"preference": "preference pairs (chosen / rejected)", "candidates": "prompts with candidate responses",
              "prompts": "a prompt set (a 'prompt' column and no responses)",
              "steps": "stepwise labels (prompt, completions, labels)",
              "processbench": "ProcessBench rows (problem, steps, label)",
              "prm800k": "PRM800K's step labels (question, label)"}
SHAPE_WORDS = {"steps": "stepwise", "processbench": "ProcessBench", "prm800k": "PRM800K"}


CHUNK_ROWS = 20_000  # rows written per transaction
IMPORT_CACHE_KIB = 128 * 1024  # SQLite's page cache while an import writes (the default is 2 MB)


def _scaled(progress: Progress | None, lo: float, hi: float, what: str) -> Progress | None:
    return (lambda f, text: progress(lo + (hi - lo) * f, f"{what}: {text}")) if progress else None


def import_file(ws: Workspace, path: str | Path, name: str | None = None, progress: Progress | None = None,
                expect: tuple[str, ...] | None = None, keep_duplicates: bool = False) -> ImportResult:
    """Check every row, then write them all (or nothing, when a row is not valid), reading the file one row at a
    time and keeping the checked rows in a temporary file in the workspace folder for the writing pass.

    expect: the kinds the caller can use (the RLOO tab wants a prompt set); another kind is refused.
    keep_duplicates: also write rows already in the workspace, as new pairs (a prompt set holds each
    prompt once: its prompts already there take the file's columns)."""
    p = Path(path)
    name = name or p.name
    checking = _scaled(progress, 0, 0.4, "checking")
    kind, resp_cols, rows = records(p, checking)
    if expect and kind not in expect:
        raise DataError(f"{p.name} holds {KIND_WORDS[kind]}; here it must be "
                        + " or ".join(KIND_WORDS[k] for k in expect) + ". Import it in the Label tab instead.")
    if parts_for(p) > 1:  # a big JSONL file: checked by one process per core
        rows.close()
        spools, n, columns = check_in_parts(p, kind, resp_cols, ws.root, checking)
    else:
        spools = [tempfile.TemporaryFile(dir=ws.root, prefix="import-")]
        try:
            n, columns = check_all(rows, spools[0])
        except BaseException:
            spools[0].close()
            raise
    with ExitStack() as open_spools:
        for spool in spools:
            open_spools.enter_context(spool)
        if progress:
            progress(0.4, f"checked {n:,} rows; writing")
        res = write_records(ws, "steps" if kind in STEP_KINDS else kind, unspooled(spools), name, progress,
                            keep_duplicates=keep_duplicates, total=n, columns=tuple(sorted(columns)))
        if kind in STEP_KINDS:
            res.shape = SHAPE_WORDS[kind]
        return res


def import_upload(ws: Workspace, uploaded: str | Path, progress: Progress | None = None,
                  expect: tuple[str, ...] | None = None, keep_duplicates: bool = False) -> ImportResult:
    """Copy an uploaded file into the workspace's uploads/ (kept with the data it produced), then import it."""
    import shutil

    src = Path(uploaded)
    folder = ws.uploads_dir / time.strftime("%Y%m%d-%H%M%S")
    n = 1
    while (folder / src.name).exists():
        n += 1
        folder = ws.uploads_dir / f"{time.strftime('%Y%m%d-%H%M%S')}-{n}"
    folder.mkdir(parents=True, exist_ok=True)
    dst = folder / src.name  # the original name, so that messages name the user's file
    shutil.copyfile(src, dst)
    try:
        return import_file(ws, dst, name=src.name, progress=progress, expect=expect, keep_duplicates=keep_duplicates)
    except DataError:
        shutil.rmtree(folder, ignore_errors=True)  # a refused file leaves nothing behind
        raise


def _write_prompts(con, sid: int, records: Iterable[Row], total: int, progress: Progress | None,
                   again: bool) -> tuple[int, int, int, int, int]:
    """A prompt set: a row whose prompt is already in the set is skipped, or (again) gives that prompt the
    row's columns (a set holds each prompt once). (written, replaced, skipped, repeated, differ)"""
    stored = {t: json.loads(x or "{}")
              for t, x in con.execute("SELECT text, extra FROM prompts WHERE set_id=?", (sid,))}
    seen: set[str] = set()
    written = replaced = skipped = repeated = differ = 0
    for i, rec in enumerate(records):
        there = rec.prompt in stored or rec.prompt in seen
        if there and not again:
            skipped += 1
            repeated += rec.prompt in seen
            differ += stored.get(rec.prompt) != json.loads(json.dumps(rec.extra))
        else:
            add_prompt(con, sid, rec.prompt, rec.extra, replace=True)
            written += 1
            replaced += there
        stored[rec.prompt] = json.loads(json.dumps(rec.extra))
        seen.add(rec.prompt)
        if progress and i % 2000 == 0:
            progress(0.4 + 0.6 * i / max(total, 1), f"writing {i:,} / {total:,}")
    return written, replaced, skipped, repeated, differ


@dataclass
class _Tally:
    """What an import wrote and skipped so far (ImportResult's counts), and where it started: the highest pair
    and label ids before it (a pair or an imported label above them was written by this import)."""
    since_pair: int
    since_label: int
    prompt_ids: set = field(default_factory=set)
    pairs: int = 0
    skipped: int = 0
    repeated: int = 0
    labeled: int = 0
    split: int = 0


def write_records(ws: Workspace, kind: str, records: Iterable[Row], name: str, progress: Progress | None = None,
                  keep_duplicates: bool = False, total: int | None = None,
                  columns: tuple[str, ...] | None = None) -> ImportResult:
    """Write validated rows, CHUNK_ROWS to a transaction (a prompt set in one). A preference row whose pair is
    already there (or was written by an earlier row) is not written again: its label is added to that pair,
    unless the pair already has that imported label (a true duplicate, skipped); with chosen and rejected the
    other way round that is the opposite label, so the pair shows a split vote. keep_duplicates: every row as
    new pairs. total and columns: the rows' number and extra columns, when records is an iterator."""
    if total is None or columns is None:
        records = list(records)
        total, columns = len(records), tuple(sorted({k for rec in records for k in rec.extra}))
    if kind == "steps":
        return _write_steps(ws, records, name, total, columns, progress, keep_duplicates)
    now = time.time()
    source = f"import:{name}"
    with ws.transaction() as con:
        sid = get_or_create_set(con, name, source)
        if kind == "prompts":
            n, replaced, skipped, repeated, differ = _write_prompts(con, sid, records, total, progress, keep_duplicates)
            return ImportResult(kind, name, total, 0, n, columns, skipped, repeated, replaced=replaced, differ=differ)
        if not keep_duplicates:
            fill_keys(con)
        ann = None
        if kind == "preference":
            con.execute("INSERT OR IGNORE INTO annotators (name, created) VALUES (?, ?)", (IMPORT_ANNOTATOR, now))
            ann = con.execute("SELECT id FROM annotators WHERE name=?", (IMPORT_ANNOTATOR,)).fetchone()[0]
        t = _Tally(*con.execute("SELECT (SELECT IFNULL(MAX(id), 0) FROM pairs), "
                                "(SELECT IFNULL(MAX(id), 0) FROM labels)").fetchone())
    rows, done = iter(records), 0
    con = ws.connect()
    cache = con.execute("PRAGMA cache_size").fetchone()[0]
    con.execute(f"PRAGMA cache_size=-{IMPORT_CACHE_KIB}")  # the indexes' pages stay in memory while it writes
    try:
        with indexes_set_aside(ws, total, progress) as aside:
            key_map = KeyMap(con) if aside and not keep_duplicates else None
            while chunk := list(islice(rows, CHUNK_ROWS)):
                with ws.transaction() as con:
                    _write_chunk(con, chunk, t, sid, source, name, ann, now, keep_duplicates, key_map)
                done += len(chunk)
                if progress:
                    progress(0.4 + 0.6 * done / max(total, 1), f"writing: {done:,} / {total:,} rows")
    finally:
        con.execute(f"PRAGMA cache_size={cache}")
    return ImportResult(kind, name, total, t.pairs, len(t.prompt_ids), columns, t.skipped, t.repeated, t.labeled,
                        t.split)


def _write_steps(ws: Workspace, records: Iterable[Row], name: str, total: int, columns: tuple[str, ...],
                 progress: Progress | None, keep_duplicates: bool) -> ImportResult:
    """Stepwise rows, CHUNK_ROWS to a transaction: each row's response and its step labels under 'import'. A row
    whose response is there with imported step labels is skipped (its labels kept); there without them, it gets
    them (steps.store_labeled); keep_duplicates writes every row as a new response."""
    res, now, source = ImportResult("steps", name, total, 0, 0, columns), time.time(), f"import:{name}"
    prompts, seen, rows, done = set(), set(), iter(records), 0
    while chunk := list(islice(rows, CHUNK_ROWS)):
        with ws.transaction() as con:
            sid = get_or_create_set(con, name, source)
            con.execute("INSERT OR IGNORE INTO annotators (name, created) VALUES (?, ?)", (IMPORT_ANNOTATOR, now))
            ann = con.execute("SELECT id FROM annotators WHERE name=?", (IMPORT_ANNOTATOR,)).fetchone()[0]
            for rec in chunk:
                if not rec.steps:  # a PRM800K line without a labeled step: nothing to store
                    res.unlabeled += 1
                    continue
                rid, outcome = store_labeled(con, sid, rec.prompt, rec.extra, rec.responses[0], source, ann, rec.steps,
                                             [None] * len(rec.steps), now, replace=False, copy=keep_duplicates)
                if outcome in ("same", "other"):
                    res.skipped += 1
                    res.repeated += rid in seen
                    res.differ += outcome == "other"
                    continue
                seen.add(rid)
                prompts.add(con.execute("SELECT prompt_id FROM responses WHERE id=?", (rid,)).fetchone()[0])
                res.responses += outcome == "new"
                res.labeled += outcome == "labeled"
                res.step_labels += len(rec.steps)
                res.folded += rec.folded
        done += len(chunk)
        if progress:
            progress(0.4 + 0.6 * done / max(total, 1), f"writing: {done:,} / {total:,} rows")
    res.prompts = len(prompts)
    return res


def _write_chunk(con, chunk: list[Row], t: _Tally, sid: int, source: str, name: str, ann: int | None, now: float,
                 keep_duplicates: bool, key_map: KeyMap | None = None) -> None:
    """Write one chunk of rows inside the caller's transaction, counting into t: the new rows go into a Batch,
    written at the end (or before a row adds its label to a pair the batch holds). key_map: the pairs' keys,
    when the key index is set aside."""
    plans = [[(a, b, pair_key(rec.prompt, rec.turns, rec.responses[a], rec.responses[b]))
              for a, b in ([(0, 1)] if rec.preferred else candidate_pairs(len(rec.responses)))]
             for rec in chunk]
    found: dict[str, list[Match]] = {}
    if not keep_duplicates:
        found = existing_pairs(con, (k for plan in plans for _, _, k in plan), t.since_label, key_map)
    before = {k for k, ms in found.items() if any(m.pair <= t.since_pair for m in ms)}  # there before this import
    batch = Batch.start(con, sid,
                        {rec.prompt for rec, plan in zip(chunk, plans) if any(x[2] not in found for x in plan)},
                        source, name, ann, now)
    for rec, plan in zip(chunk, plans):
        new = [x for x in plan if x[2] not in found]
        if rec.preferred and not new:  # this comparison is there: add the row's label, unless it has it
            matches = found[plan[0][2]]
            if batch.holds(matches[0].pair):
                batch.flush()  # the pair is written (and its label counted) before a label is added to it
            outcome = _label_existing(con, matches, rec, ann, now)
            t.skipped += outcome in ("skipped", "repeated")
            t.repeated += outcome == "repeated"
            t.labeled += outcome in ("labeled", "split")
            t.split += outcome == "split"
            continue
        if not new:  # every pair of the candidates row is already there
            t.skipped += 1
            t.repeated += not all(k in before for _, _, k in plan)
            continue
        pairs = batch.pairs(rec, new)
        t.prompt_ids.add(batch.prompt_ids[rec.prompt])
        t.pairs += len(pairs)
        if not keep_duplicates:  # a later row of the file finds them
            for (a, _, key), pair in zip(new, pairs):
                found.setdefault(key, []).append(Match(pair, rec.responses[a], {"a": True} if rec.preferred else {}))
                if key_map:
                    key_map.add(key, pair)
    batch.flush()


def _label_existing(con, matches: list[Match], rec: Row, ann: int, now: float) -> str:
    """Add a preference row's label to the pair already there: 'skipped' if it has that imported label
    ('repeated' when the earlier label came from this same file), else 'labeled', or 'split' when the pair
    held the opposite imported label."""
    choice = {m.pair: "a" if m.a_text == rec.responses[0] else "b" for m in matches}
    same = [m for m in matches if choice[m.pair] in m.imported]
    if same:
        return "repeated" if all(m.imported[choice[m.pair]] for m in same) else "skipped"
    m = matches[0]
    add_imported_label(con, m.pair, ann, now=now, choice=choice[m.pair])
    split = bool(m.imported)
    m.imported[choice[m.pair]] = True
    return "split" if split else "labeled"
