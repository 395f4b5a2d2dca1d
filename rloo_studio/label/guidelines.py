"""Labeling guidelines: one markdown text per workspace, shown above the pair on the Label tab.

Stored in the workspace's settings table (key `label_guidelines`), so that every annotator, every browser
and a restarted app read the same text. Saving replaces the text; an empty text removes the guidelines.
"""
from __future__ import annotations

from rloo_studio.core.errors import DataError
from rloo_studio.core.workspace import Workspace

KEY = "label_guidelines"
MAX_CHARS = 20_000  # about ten pages: guidelines longer than that belong in a document


def get(ws: Workspace) -> str:
    return ws.setting(KEY, "")


def save(ws: Workspace, text: str | None) -> str:
    """Store the guidelines (surrounding blank lines dropped); returns what was stored."""
    text = (text or "").replace("\r\n", "\n").strip("\n").rstrip()
    if len(text) > MAX_CHARS:
        raise DataError(f"The guidelines are {len(text):,} characters long; keep them under {MAX_CHARS:,} "
                        "(link a longer document instead). Nothing was saved.")
    ws.set_setting(KEY, text)
    return text
