"""Labeling guidelines are one markdown text per workspace (what every annotator and a restarted app read);
too long a text is refused in plain words and the stored one stays. Progress counts an annotator's labels
given today apart from all of them, per annotator too."""
import time

import pytest

from rloo_studio.core.errors import DataError
from rloo_studio.core.workspace import Workspace
from rloo_studio.label import agreement as A
from rloo_studio.label import guidelines as G
from rloo_studio.label import store as L


def test_guidelines_are_kept_per_workspace_and_too_long_a_text_is_refused(tmp_path):
    ws = Workspace(tmp_path / "ws")
    assert G.get(ws) == ""
    assert G.save(ws, "\n# Rules\r\n\n- right answer first\n\n") == "# Rules\n\n- right answer first"
    assert G.get(Workspace(tmp_path / "ws")) == "# Rules\n\n- right answer first"  # another process reads it
    assert G.get(Workspace(tmp_path / "other")) == ""
    with pytest.raises(DataError, match="keep them under 20,000"):
        G.save(ws, "x" * (G.MAX_CHARS + 1))
    assert G.get(ws) == "# Rules\n\n- right answer first"  # nothing saved
    assert G.save(ws, "   ") == "" and G.get(ws) == ""  # an empty text removes them


def test_progress_counts_todays_labels_apart(workspace):
    ws = workspace
    for name, side in (("ann", "left"), ("ann", "right"), ("bob", "skip")):
        shown = L.next_pair(ws, name, f"s-{name}")
        L.save_label(ws, shown, name, f"s-{name}", side)
    ann = ws.query("SELECT id FROM annotators WHERE name='ann'")[0][0]
    with ws.transaction() as con:  # ann's first label was given yesterday
        first = con.execute("SELECT MIN(id) FROM labels WHERE annotator_id=?", (ann,)).fetchone()[0]
        con.execute("UPDATE labels SET created=? WHERE id=?", (L.day_start() - 3600, first))
    p = L.progress(ws, "ann")
    assert (p["mine"], p["mine_today"], p["my_skips"]) == (2, 1, 0)
    assert L.progress(ws, "bob")["mine_today"] == 0  # a skip is not a label
    stats = {a["name"]: a for a in A.annotator_stats(ws, today=True)}
    assert (stats["ann"]["labels"], stats["ann"]["today"], stats["bob"]["skips"]) == (2, 1, 1)
    assert "today" not in A.annotator_stats(ws)[0]
    assert L.day_start() <= time.time() < L.day_start() + 86400 + 3600
