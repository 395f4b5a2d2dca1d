"""Fill a new workspace with the bundled demo data, so that every tab has something to show."""
from __future__ import annotations

import json
import time
from pathlib import Path

from .prompts import add_prompt, get_or_create_set
from .workspace import Workspace

IMPORT_ANNOTATOR = "import"


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _response(con, prompt_id: int, text: str, source: str) -> int:
    return con.execute(
        "INSERT INTO responses (prompt_id, text, source, created) VALUES (?, ?, ?, ?)",
        (prompt_id, text, source, time.time()),
    ).lastrowid


def seed_demo(ws: Workspace, data_dir: Path) -> None:
    """Prompt sets demo-train / demo-heldout, labeled demo pairs, and unlabeled candidate pairs."""
    now = time.time()
    with ws.transaction() as con:
        for name, file in (("demo-train", "prompts_train.jsonl"), ("demo-heldout", "prompts_heldout.jsonl")):
            sid = get_or_create_set(con, name, f"bundled:{file}")
            for row in _rows(data_dir / file):
                add_prompt(con, sid, row["prompt"], {k: v for k, v in row.items() if k != "prompt"})
        sid = get_or_create_set(con, "demo-pairs", "bundled:pairs.jsonl")
        ann = con.execute(
            "INSERT OR IGNORE INTO annotators (name, created) VALUES (?, ?)", (IMPORT_ANNOTATOR, now)
        ).lastrowid or con.execute("SELECT id FROM annotators WHERE name=?", (IMPORT_ANNOTATOR,)).fetchone()[0]
        for row in _rows(data_dir / "pairs.jsonl"):
            pid = add_prompt(con, sid, row["prompt"], {"answer": row["answer"]})
            a = _response(con, pid, row["chosen"], "import:pairs.jsonl")
            b = _response(con, pid, row["rejected"], "import:pairs.jsonl")
            pair = con.execute(
                "INSERT INTO pairs (prompt_id, response_a, response_b, source, created) VALUES (?, ?, ?, ?, ?)",
                (pid, a, b, "demo-pairs", now),
            ).lastrowid
            con.execute(
                "INSERT INTO labels (pair_id, annotator_id, choice, created) VALUES (?, ?, 'a', ?)", (pair, ann, now)
            )
        for row in _rows(data_dir / "candidates.jsonl"):
            pid = add_prompt(con, sid, row["prompt"], {"answer": row["answer"]})
            ids = [_response(con, pid, t, "model:demo") for t in row["responses"]]
            con.execute(
                "INSERT INTO pairs (prompt_id, response_a, response_b, source, created) VALUES (?, ?, ?, ?, ?)",
                (pid, ids[0], ids[1], "demo-candidates", now),
            )
