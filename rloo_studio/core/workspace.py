"""Where everything lives on disk: the SQLite database and the run folders.

<workspace>/studio.db      SQLite in WAL mode, versioned schema (see SCHEMA)
<workspace>/runs/<run-id>/ one folder per training run
<workspace>/exports/       exported datasets
<workspace>/uploads/       files a user uploaded through the app
<workspace>/incoming/      the app's temp folder for browser uploads (owner-only, emptied by imports)
"""
from __future__ import annotations

import json
import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path

# Each entry migrates the schema from version i to i+1; never edit one that has shipped.
SCHEMA = [
    """
    CREATE TABLE prompt_sets (
        id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, source TEXT, created REAL NOT NULL);
    CREATE TABLE prompts (
        id INTEGER PRIMARY KEY, set_id INTEGER NOT NULL REFERENCES prompt_sets(id) ON DELETE CASCADE,
        text TEXT NOT NULL,
        extra TEXT NOT NULL DEFAULT '{}',  -- JSON object: the set's other columns (answer, ...)
        UNIQUE (set_id, text));
    CREATE TABLE responses (
        id INTEGER PRIMARY KEY, prompt_id INTEGER NOT NULL REFERENCES prompts(id) ON DELETE CASCADE,
        text TEXT NOT NULL,
        source TEXT NOT NULL,              -- 'import:<file>' or 'model:<name>'
        created REAL NOT NULL);
    CREATE TABLE pairs (
        id INTEGER PRIMARY KEY, prompt_id INTEGER NOT NULL REFERENCES prompts(id) ON DELETE CASCADE,
        response_a INTEGER NOT NULL REFERENCES responses(id),
        response_b INTEGER NOT NULL REFERENCES responses(id),
        source TEXT NOT NULL, created REAL NOT NULL,
        flag TEXT,                         -- why the pair was sent back for re-labeling (NULL: not flagged)
        UNIQUE (response_a, response_b));
    CREATE TABLE annotators (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, created REAL NOT NULL);
    CREATE TABLE labels (
        id INTEGER PRIMARY KEY, pair_id INTEGER NOT NULL REFERENCES pairs(id) ON DELETE CASCADE,
        annotator_id INTEGER NOT NULL REFERENCES annotators(id),
        choice TEXT NOT NULL CHECK (choice IN ('a', 'b', 'tie', 'skip')),  -- 'a': response_a is better
        a_shown_left INTEGER,              -- the randomized A/B order the annotator saw (NULL: imported)
        comment TEXT NOT NULL DEFAULT '',
        created REAL NOT NULL,
        superseded INTEGER NOT NULL DEFAULT 0);  -- 1 once the annotator re-labeled the pair
    CREATE INDEX labels_pair ON labels(pair_id, superseded);
    CREATE INDEX labels_annotator ON labels(annotator_id, created);
    CREATE TABLE claims (                  -- a pair being shown to one browser session right now
        pair_id INTEGER NOT NULL REFERENCES pairs(id) ON DELETE CASCADE,
        annotator_id INTEGER NOT NULL REFERENCES annotators(id),
        session TEXT NOT NULL,
        a_shown_left INTEGER NOT NULL,     -- the randomized A/B order for this showing
        expires REAL NOT NULL,
        PRIMARY KEY (pair_id, session));
    CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE runs (
        id TEXT PRIMARY KEY, kind TEXT NOT NULL, name TEXT NOT NULL,
        status TEXT NOT NULL,              -- queued running completed stopped failed interrupted
        created REAL NOT NULL, started REAL, ended REAL,
        message TEXT NOT NULL DEFAULT '', pid INTEGER, config TEXT NOT NULL DEFAULT '{}');
    """,
    # 2: the A/B order an annotator sees a pair in is drawn once and kept (coming back shows the same order)
    """
    CREATE TABLE IF NOT EXISTS pair_order (
        pair_id INTEGER NOT NULL REFERENCES pairs(id) ON DELETE CASCADE,
        annotator_id INTEGER NOT NULL REFERENCES annotators(id),
        a_shown_left INTEGER NOT NULL,
        PRIMARY KEY (pair_id, annotator_id)) WITHOUT ROWID;
    INSERT OR IGNORE INTO pair_order (pair_id, annotator_id, a_shown_left)
        SELECT pair_id, annotator_id, a_shown_left FROM labels WHERE a_shown_left IS NOT NULL ORDER BY id DESC;
    """,
    # 3: imports skip pairs already in the workspace: import_store.pair_key() of prompt + both responses (NULL: not yet
    # computed)
    """
    ALTER TABLE pairs ADD COLUMN dedup_key TEXT;
    CREATE INDEX IF NOT EXISTS pairs_dedup_key ON pairs(dedup_key);
    """,
    # 4: each pair counts its current labels (kept by triggers, whoever writes a label), so that the
    # labeling queue and the progress line read one row per pair instead of grouping every label
    """
    ALTER TABLE pairs ADD COLUMN n_human INTEGER NOT NULL DEFAULT 0;  -- people's current A / B / tie labels
    ALTER TABLE pairs ADD COLUMN n_import INTEGER NOT NULL DEFAULT 0; -- imported current labels (not skips)
    ALTER TABLE pairs ADD COLUMN n_skip INTEGER NOT NULL DEFAULT 0;   -- current skips
    ALTER TABLE pairs ADD COLUMN n_tie INTEGER NOT NULL DEFAULT 0;    -- current ties
    UPDATE pairs SET
        n_human = (SELECT COUNT(*) FROM labels l JOIN annotators a ON a.id = l.annotator_id
                   WHERE l.pair_id = pairs.id AND l.superseded = 0 AND l.choice != 'skip' AND a.name != 'import'),
        n_import = (SELECT COUNT(*) FROM labels l JOIN annotators a ON a.id = l.annotator_id
                    WHERE l.pair_id = pairs.id AND l.superseded = 0 AND l.choice != 'skip' AND a.name = 'import'),
        n_skip = (SELECT COUNT(*) FROM labels l WHERE l.pair_id = pairs.id AND l.superseded = 0 AND l.choice = 'skip'),
        n_tie = (SELECT COUNT(*) FROM labels l WHERE l.pair_id = pairs.id AND l.superseded = 0 AND l.choice = 'tie');
    CREATE TRIGGER label_counts_add AFTER INSERT ON labels WHEN NEW.superseded = 0 BEGIN
        UPDATE pairs SET
            n_human = n_human + (NEW.choice != 'skip' AND NEW.annotator_id NOT IN (SELECT id FROM annotators WHERE name = 'import')),
            n_import = n_import + (NEW.choice != 'skip' AND NEW.annotator_id IN (SELECT id FROM annotators WHERE name = 'import')),
            n_skip = n_skip + (NEW.choice = 'skip'), n_tie = n_tie + (NEW.choice = 'tie')
        WHERE id = NEW.pair_id;
    END;
    CREATE TRIGGER label_counts_supersede AFTER UPDATE OF superseded ON labels
    WHEN OLD.superseded = 0 AND NEW.superseded != 0 BEGIN
        UPDATE pairs SET
            n_human = n_human - (OLD.choice != 'skip' AND OLD.annotator_id NOT IN (SELECT id FROM annotators WHERE name = 'import')),
            n_import = n_import - (OLD.choice != 'skip' AND OLD.annotator_id IN (SELECT id FROM annotators WHERE name = 'import')),
            n_skip = n_skip - (OLD.choice = 'skip'), n_tie = n_tie - (OLD.choice = 'tie')
        WHERE id = OLD.pair_id;
    END;
    CREATE TRIGGER label_counts_delete AFTER DELETE ON labels WHEN OLD.superseded = 0 BEGIN
        UPDATE pairs SET
            n_human = n_human - (OLD.choice != 'skip' AND OLD.annotator_id NOT IN (SELECT id FROM annotators WHERE name = 'import')),
            n_import = n_import - (OLD.choice != 'skip' AND OLD.annotator_id IN (SELECT id FROM annotators WHERE name = 'import')),
            n_skip = n_skip - (OLD.choice = 'skip'), n_tie = n_tie - (OLD.choice = 'tie')
        WHERE id = OLD.pair_id;
    END;
    CREATE INDEX pairs_queue ON pairs(flag IS NULL, n_skip > 0, n_human, n_import > 0, id);
    CREATE INDEX pairs_counts ON pairs(n_human, n_import, n_skip);
    CREATE INDEX labels_mine ON labels(annotator_id, superseded, choice);
    """,  # noqa: E501  (schema SQL: workspaces store it verbatim, in sqlite_master; left as it was written)
    # 5: a pair's current label by one annotator is one index look-up (the Records tab's annotator filter, as the
    # import's and the queue's look-ups by pair): with labels_pair alone SQLite took labels_mine and scanned the
    # annotator's labels once per pair (over 60 s at 1,000,000 pairs; 0.9 s with this index). It holds labels_pair.
    """
    CREATE INDEX IF NOT EXISTS labels_pair_who ON labels(pair_id, superseded, annotator_id, choice);
    DROP INDEX IF EXISTS labels_pair;
    """,
    # 6: the Records tab's first page (newest first) and 'oldest' read pairs in their index order and stop after a
    # page, where SQLite sorted every pair with its texts (5.0 s -> 0.65 s at 1,060,000 pairs, load 3)
    """
    CREATE INDEX IF NOT EXISTS pairs_created ON pairs(created, id);
    """,
    # 7: the Records tab's 'most labels' and 'prompt' orders walk an index and stop after a page, where SQLite
    # sorted every pair (0.68-0.70 s -> under 5 ms at 1,060,000 pairs); label/records.py
    """
    CREATE INDEX IF NOT EXISTS pairs_n_labels ON pairs((n_human + n_import + n_skip) DESC, id);
    CREATE INDEX IF NOT EXISTS pairs_prompt ON pairs(prompt_id);
    CREATE INDEX IF NOT EXISTS prompts_text_nocase ON prompts(text COLLATE NOCASE);
    """,
    # 8: each pair also counts its current 'a' and 'b' labels (anyone's, imported ones too), so that the Records
    # label filter reads one row per pair: in a viewer's letters it looked up the pair of each of 1M labels
    # (0.55-0.69 s at 1,060,000 pairs). The counting triggers are made again with the two counts.
    """
    ALTER TABLE pairs ADD COLUMN n_a INTEGER NOT NULL DEFAULT 0;      -- current labels for response_a
    ALTER TABLE pairs ADD COLUMN n_b INTEGER NOT NULL DEFAULT 0;      -- current labels for response_b
    UPDATE pairs SET n_a = c.n_a, n_b = c.n_b FROM (
        SELECT pair_id, SUM(choice = 'a') AS n_a, SUM(choice = 'b') AS n_b FROM labels WHERE superseded = 0
        GROUP BY pair_id) AS c WHERE c.pair_id = pairs.id;
    DROP TRIGGER label_counts_add;
    DROP TRIGGER label_counts_supersede;
    DROP TRIGGER label_counts_delete;
    CREATE TRIGGER label_counts_add AFTER INSERT ON labels WHEN NEW.superseded = 0 BEGIN
        UPDATE pairs SET
            n_human = n_human + (NEW.choice != 'skip' AND NEW.annotator_id NOT IN (SELECT id FROM annotators WHERE name = 'import')),
            n_import = n_import + (NEW.choice != 'skip' AND NEW.annotator_id IN (SELECT id FROM annotators WHERE name = 'import')),
            n_skip = n_skip + (NEW.choice = 'skip'), n_tie = n_tie + (NEW.choice = 'tie'),
            n_a = n_a + (NEW.choice = 'a'), n_b = n_b + (NEW.choice = 'b')
        WHERE id = NEW.pair_id;
    END;
    CREATE TRIGGER label_counts_supersede AFTER UPDATE OF superseded ON labels
    WHEN OLD.superseded = 0 AND NEW.superseded != 0 BEGIN
        UPDATE pairs SET
            n_human = n_human - (OLD.choice != 'skip' AND OLD.annotator_id NOT IN (SELECT id FROM annotators WHERE name = 'import')),
            n_import = n_import - (OLD.choice != 'skip' AND OLD.annotator_id IN (SELECT id FROM annotators WHERE name = 'import')),
            n_skip = n_skip - (OLD.choice = 'skip'), n_tie = n_tie - (OLD.choice = 'tie'),
            n_a = n_a - (OLD.choice = 'a'), n_b = n_b - (OLD.choice = 'b')
        WHERE id = OLD.pair_id;
    END;
    CREATE TRIGGER label_counts_delete AFTER DELETE ON labels WHEN OLD.superseded = 0 BEGIN
        UPDATE pairs SET
            n_human = n_human - (OLD.choice != 'skip' AND OLD.annotator_id NOT IN (SELECT id FROM annotators WHERE name = 'import')),
            n_import = n_import - (OLD.choice != 'skip' AND OLD.annotator_id IN (SELECT id FROM annotators WHERE name = 'import')),
            n_skip = n_skip - (OLD.choice = 'skip'), n_tie = n_tie - (OLD.choice = 'tie'),
            n_a = n_a - (OLD.choice = 'a'), n_b = n_b - (OLD.choice = 'b')
        WHERE id = OLD.pair_id;
    END;
    """,  # noqa: E501  (schema SQL: workspaces store it verbatim, in sqlite_master; left as it was written)
    # 9: step labels for a process reward model (label/steps.py): a verdict on one <think> step of a response, by an
    # annotator (a person, 'import', or the automatic rollouts). A re-label, an undo or an earlier bad step supersedes
    # a label rather than deleting it; superseded_by names the label that did, so that undoing that one restores it.
    """
    CREATE TABLE step_labels (
        id INTEGER PRIMARY KEY,
        response_id INTEGER NOT NULL REFERENCES responses(id) ON DELETE CASCADE,
        step INTEGER NOT NULL CHECK (step >= 0),   -- 0-based, as thinking.parse(text, 'blank').steps
        verdict INTEGER NOT NULL CHECK (verdict IN (-1, 0, 1)),  -- bad / neutral / good (PRM800K)
        annotator_id INTEGER NOT NULL REFERENCES annotators(id),
        soft REAL,                           -- rollouts: share of continuations that reached the answer
        created REAL NOT NULL,
        superseded INTEGER NOT NULL DEFAULT 0,
        superseded_by INTEGER);              -- the label that replaced or cut this one (NULL: current, or undone)
    CREATE INDEX step_labels_response ON step_labels(response_id, superseded, annotator_id, step);
    CREATE INDEX step_labels_mine ON step_labels(annotator_id, superseded, created);
    -- The responses that have <think> steps, and how many: counted once per response (texts never change), so that
    -- the step queue and progress read a row per response instead of parsing every response on each key press.
    -- settings['steps_counted'] holds the highest response id counted.
    CREATE TABLE response_steps (
        response_id INTEGER PRIMARY KEY REFERENCES responses(id) ON DELETE CASCADE,
        n INTEGER NOT NULL);
    -- A response written by a stepwise import or the rollouts, found again by its prompt and text (label/steps.py
    -- row_key): importing a file again, or storing a rollout again, adds no second copy.
    CREATE TABLE response_keys (
        key TEXT PRIMARY KEY,
        response_id INTEGER NOT NULL REFERENCES responses(id) ON DELETE CASCADE) WITHOUT ROWID;
    CREATE INDEX response_keys_response ON response_keys(response_id);
    """,
    # 10: step labeling with a process reward model beside (label/steps.py). `accepted` = 1: the person pressed the
    # key that takes the model's verdict (stored as theirs, but not their own judgement: agreement figures leave it
    # out). model_p / model_run: the model's P(step right) shown on the page when the label was given, and whose it
    # was (NULL: no model shown), so that person-vs-model agreement needs no model at read time. The final answer is
    # labeled as one more step, at index n (n = the response's number of <think> steps): readers that take the steps'
    # labels stop before it (label.steps.labeled_responses).
    """
    ALTER TABLE step_labels ADD COLUMN accepted INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE step_labels ADD COLUMN model_p REAL;
    ALTER TABLE step_labels ADD COLUMN model_run TEXT;
    """,
]

# Indexes a big import drops while it writes and makes again at its end (label.import_store.indexes_set_aside): in
# random order, each chunk of rows dirtied most of their pages; the import finds pairs by key in memory meanwhile
# (label.import_store.KeyMap). The SQL is that of schemas 3 and 7; opening a workspace makes any that is missing
# (an import killed meanwhile).
SET_ASIDE_INDEXES = {
    "prompts_text_nocase": "CREATE INDEX IF NOT EXISTS prompts_text_nocase ON prompts(text COLLATE NOCASE)",
    "pairs_dedup_key": "CREATE INDEX IF NOT EXISTS pairs_dedup_key ON pairs(dedup_key)"}


def statements(script: str):
    """The SQL statements of a migration, one by one (a trigger's body keeps its own semicolons)."""
    buf = ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            yield buf
            buf = ""
    if buf.strip():
        raise ValueError(f"incomplete SQL statement in a migration: {buf.strip()[:80]}")


def _wal(con: sqlite3.Connection, wait_s: float = 30.0) -> None:
    """Switch to WAL. SQLite answers 'database is locked' at once, without the busy timeout, when another
    process holds the database while it changes journal mode (two processes of one `accelerate launch`
    opening a new workspace), so this waits and tries again."""
    end = time.time() + wait_s
    while True:
        try:
            con.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.time() > end:
                raise
            time.sleep(0.05)


class Workspace:
    """A workspace folder. Connections are per thread (sqlite3 objects are not shareable)."""

    def __init__(self, root: str | Path):
        """Open the workspace at `root`, creating it (folders, database, schema) when it is not there.
        `created` says whether this open created it. The demo data is the label stage's:
        label.demo_data.open_workspace(root, demo=True) opens a workspace and seeds a new one."""
        self.root = Path(root).expanduser().resolve()
        self.created = not (self.root / "studio.db").exists()
        for d in (self.root, self.runs_dir, self.exports_dir, self.uploads_dir):
            d.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self.migrate()

    @property
    def db_path(self) -> Path:
        return self.root / "studio.db"

    @property
    def runs_dir(self) -> Path:
        return self.root / "runs"

    @property
    def exports_dir(self) -> Path:
        return self.root / "exports"

    @property
    def uploads_dir(self) -> Path:
        return self.root / "uploads"

    @property
    def incoming_dir(self) -> Path:
        """The app's private upload folder (Gradio's temp folder); an upload is deleted once imported."""
        return self.root / "incoming"

    def connect(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            con = sqlite3.connect(self.db_path, timeout=30, isolation_level=None)  # explicit transactions
            con.row_factory = sqlite3.Row
            con.execute("PRAGMA busy_timeout=30000")  # before any pragma that takes a lock
            _wal(con)
            con.execute("PRAGMA synchronous=FULL")  # a committed label survives a power cut
            con.execute("PRAGMA foreign_keys=ON")
            self._local.con = con
        return con

    @contextmanager
    def transaction(self):
        """BEGIN IMMEDIATE … COMMIT; rolled back on any exception (all or nothing)."""
        con = self.connect()
        con.execute("BEGIN IMMEDIATE")
        try:
            yield con
        except BaseException:
            if con.in_transaction:  # SQLite may have rolled back itself (disk full): the error is the one to see
                con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")

    def query(self, sql: str, args=()) -> list[sqlite3.Row]:
        return self.connect().execute(sql, args).fetchall()

    def setting(self, key: str, default: str) -> str:
        """A remembered choice of this workspace (label overlap, the Inspect step split, ...)."""
        row = self.query("SELECT value FROM settings WHERE key=?", (key,))
        return row[0]["value"] if row else default

    def set_setting(self, key: str, value) -> None:
        with self.transaction() as con:
            con.execute("INSERT OR REPLACE INTO settings (key, value) VALUES (?, ?)", (key, str(value)))

    def schema_version(self) -> int:
        return self.connect().execute("PRAGMA user_version").fetchone()[0]

    def migrate(self) -> None:
        with self.transaction() as con:
            v = con.execute("PRAGMA user_version").fetchone()[0]
            if v > len(SCHEMA):
                raise RuntimeError(
                    f"{self.db_path} has schema version {v}, newer than this RLOO Studio ({len(SCHEMA)}); "
                    "upgrade the app"
                )
            for i in range(v, len(SCHEMA)):
                for stmt in statements(SCHEMA[i]):
                    con.execute(stmt)
                con.execute(f"PRAGMA user_version={i + 1}")
            for sql in SET_ASIDE_INDEXES.values():  # an import killed while it had them set aside
                con.execute(sql)

    # -- runs ---------------------------------------------------------------
    def new_run_id(self, kind: str) -> str:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        base, n = f"{kind}-{stamp}", 1
        rid = base
        while (self.runs_dir / rid).exists():
            n += 1
            rid = f"{base}-{n}"
        (self.runs_dir / rid).mkdir(parents=True)
        return rid

    def run_dir(self, run_id: str) -> Path:
        d = (self.runs_dir / run_id).resolve()
        if d.parent != self.runs_dir:  # a run id never names a path outside runs/
            raise ValueError(f"bad run id {run_id!r}")
        return d

    def upsert_run(self, run_id: str, **fields) -> None:
        if "config" in fields and not isinstance(fields["config"], str):
            fields["config"] = json.dumps(fields["config"])
        with self.transaction() as con:
            if con.execute("SELECT 1 FROM runs WHERE id=?", (run_id,)).fetchone():
                sets = ", ".join(f"{k}=?" for k in fields)
                con.execute(f"UPDATE runs SET {sets} WHERE id=?", (*fields.values(), run_id))
            else:
                fields.setdefault("created", time.time())
                cols = ", ".join(["id", *fields])
                marks = ", ".join("?" * (len(fields) + 1))
                con.execute(f"INSERT INTO runs ({cols}) VALUES ({marks})", (run_id, *fields.values()))

    def runs(self, kind: str | None = None) -> list[dict]:
        sql = "SELECT * FROM runs" + (" WHERE kind=?" if kind else "") + " ORDER BY created DESC"
        return [dict(r) for r in self.query(sql, (kind,) if kind else ())]

    def run(self, run_id: str) -> dict | None:
        rows = self.query("SELECT * FROM runs WHERE id=?", (run_id,))
        return dict(rows[0]) if rows else None
