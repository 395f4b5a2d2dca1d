"""The bundled demo data: prompt sets, labeled demo pairs, unlabeled candidate pairs and step labels.

Only the default workspace (the one `make run` opens) gets it on its first start, or a workspace
opened with `--demo` (open_workspace), or one whose user asks for it ("Load the demo data" on the
Label tab: seed_demo). Loading it twice adds nothing the second time.

The labeled demo pairs were labeled by the known answer (demo_task.ANSWER_KEY), not by people: they are
stored as imported labels (annotator 'import', which progress, agreement and the label queue count
apart from people's labels), each with the comment LABEL_COMMENT saying who labeled it. The step labels of the
slipping demo policy's responses (prompt set demo-steps) come from rollouts and are stored under the rollouts'
annotator, "rollouts (automatic)", as the job that makes them stores its own; a workspace gets them when it asks
(seed_demo_steps: `train-prm --demo`, the Process reward tab's button).
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from rloo_studio.core.demo_task import ANSWER_KEY
from rloo_studio.core.paths import DEFAULT_WORKSPACE, DEMO_DATA
from rloo_studio.core.workspace import Workspace
from rloo_studio.label.prompts import add_imported_label, add_pair, add_prompt, add_response, get_or_create_set

IMPORT_ANNOTATOR = "import"
DEMO_SOURCES = ("demo-pairs", "demo-candidates")
STEP_LABELS = "step_labels.jsonl"  # the slipping policy's step labels from rollouts (seed_demo_steps)
STEPS_MARK = "demo_steps_loaded"
MARK = "demo_loaded"  # settings key, written in the same transaction as the data
LABEL_COMMENT = (f"{ANSWER_KEY}: the preferred response has the known right answer where the other does not, "
                 "or is better formed (closes its reasoning, answers)")


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def seed_demo_steps(ws: Workspace, data_dir: Path = DEMO_DATA) -> int | None:
    """Add the slipping demo policy's responses with the step labels its rollouts gave (scripts/build_slippy.py:
    prompt set demo-steps), under the rollouts' own annotator, as the step-labels-from-rollouts job stores them.
    All or nothing, once per workspace: how many responses were added, or None when they were already there."""
    from rloo_studio.label.steps import ROLLOUTS, _annotator, store_labeled

    rows, now = _rows(data_dir / STEP_LABELS), time.time()
    with ws.transaction() as con:
        if con.execute("SELECT 1 FROM settings WHERE key=?", (STEPS_MARK,)).fetchone():
            return None
        sid, ann = get_or_create_set(con, "demo-steps", f"bundled:{STEP_LABELS}"), _annotator(con, ROLLOUTS)
        for r in rows:
            store_labeled(con, sid, r["prompt"], {"answer": r["answer"]}, r["response"], "rollouts:bundled", ann,
                          r["verdicts"], r["soft"], now, replace=False)
        con.execute("INSERT OR REPLACE INTO settings (key, value) VALUES (?, ?)", (STEPS_MARK, str(now)))
    return len(rows)


def wants_demo(workspace: str | Path | None, demo: bool = False) -> bool:
    """A new workspace gets the demo data only when it is the default one or `--demo` asks for it."""
    if demo or workspace is None:
        return True
    return Path(workspace).expanduser().resolve() == DEFAULT_WORKSPACE.resolve()


def open_workspace(root: str | Path, demo: bool = False) -> Workspace:
    """The workspace at `root`; when `demo` and this open creates it, it starts with the demo data (an
    existing workspace is left as it is). Only the default workspace and `--demo` ask for it (wants_demo)."""
    ws = Workspace(root)
    if demo and ws.created:
        seed_demo(ws)
    return ws


def has_demo(ws: Workspace) -> bool:
    return _has_demo(ws.connect())


def _has_demo(con) -> bool:
    if con.execute("SELECT 1 FROM settings WHERE key=?", (MARK,)).fetchone():
        return True
    # Workspaces seeded before the mark existed: the demo pairs are there.
    return con.execute("SELECT 1 FROM pairs WHERE source IN (?, ?) LIMIT 1", DEMO_SOURCES).fetchone() is not None


def seed_demo(ws: Workspace, data_dir: Path = DEMO_DATA) -> dict | None:
    """Add prompt sets demo-train / demo-heldout, labeled demo pairs and unlabeled candidate pairs.

    All or nothing, and only once per workspace: returns what was added, or None when the demo
    data was already there (nothing is added again)."""
    now = time.time()
    added = {"prompts": 0, "labeled_pairs": 0, "candidate_pairs": 0}
    with ws.transaction() as con:
        if _has_demo(con):
            return None
        for name, file in (("demo-train", "prompts_train.jsonl"), ("demo-heldout", "prompts_heldout.jsonl")):
            sid = get_or_create_set(con, name, f"bundled:{file}")
            for row in _rows(data_dir / file):
                add_prompt(con, sid, row["prompt"], {k: v for k, v in row.items() if k != "prompt"})
                added["prompts"] += 1
        sid = get_or_create_set(con, "demo-pairs", "bundled:pairs.jsonl")
        con.execute("INSERT OR IGNORE INTO annotators (name, created) VALUES (?, ?)", (IMPORT_ANNOTATOR, now))
        ann = con.execute("SELECT id FROM annotators WHERE name=?", (IMPORT_ANNOTATOR,)).fetchone()[0]
        for row in _rows(data_dir / "pairs.jsonl"):
            pid = add_prompt(con, sid, row["prompt"], {"answer": row["answer"]})
            a = add_response(con, pid, row["chosen"], "import:pairs.jsonl", now)
            b = add_response(con, pid, row["rejected"], "import:pairs.jsonl", now)
            add_imported_label(con, add_pair(con, pid, a, b, "demo-pairs", now), ann, LABEL_COMMENT, now)
            added["labeled_pairs"] += 1
        for row in _rows(data_dir / "candidates.jsonl"):
            pid = add_prompt(con, sid, row["prompt"], {"answer": row["answer"]})
            ids = [add_response(con, pid, t, "model:demo", now) for t in row["responses"]]
            add_pair(con, pid, ids[0], ids[1], "demo-candidates", now)
            added["candidate_pairs"] += 1
        con.execute("INSERT OR REPLACE INTO settings (key, value) VALUES (?, ?)", (MARK, str(now)))
    return added


def demo_summary(added: dict | None) -> str:
    if added is None:
        return "The demo data is already in this workspace; nothing was added."
    return (f"Loaded the demo data: {added['labeled_pairs']} labeled pairs (labeled by the {ANSWER_KEY}, not by "
            f"people), {added['candidate_pairs']} candidate pairs to label, and the prompt sets demo-train and "
            f"demo-heldout ({added['prompts']} prompts).")
