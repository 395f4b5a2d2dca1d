"""Active labeling for the Label tab: the unlabeled pairs in the order a trained reward run is least sure
about them (smallest margin first), each with the side it prefers. No gradio."""
from __future__ import annotations

from rloo_studio.core.workspace import Workspace
from rloo_studio.inspect.scoring import Scorer, load_scorer
from rloo_studio.inspect.scoring import score_texts as _score


def score_texts(model, tok, prompts: list[str], responses: list[str], batch_size: int = 16) -> list[float]:
    """Reward of each (prompt, response) by a loaded model, formatted exactly as in training (scoring.py's
    score_texts; the tests and benchmarks use it on a model they hold)."""
    return _score(Scorer(model, tok, "", True), prompts, responses, batch_size)


def uncertainty_queue(ws: Workspace, run_id: str, pair_ids: list[int] | None = None) -> list[tuple[int, float, str]]:
    """Unlabeled pairs (no current label), most uncertain first: [(pair_id, margin, suggested 'a'|'b')].

    margin = reward(a) - reward(b) under the run's adapter; the suggestion is the side it prefers.
    `pair_ids` restricts the candidates (they must still be unlabeled).
    """
    rows = ws.query(
        """SELECT pr.id, p.text AS prompt, ra.text AS a, rb.text AS b FROM pairs pr
           JOIN prompts p ON p.id = pr.prompt_id JOIN responses ra ON ra.id = pr.response_a
           JOIN responses rb ON rb.id = pr.response_b
           WHERE NOT EXISTS (SELECT 1 FROM labels l WHERE l.pair_id = pr.id AND l.superseded = 0)
           ORDER BY pr.id"""
    )
    if pair_ids is not None:
        keep = set(pair_ids)
        rows = [r for r in rows if r["id"] in keep]
    if not rows:
        return []
    scorer = load_scorer(ws, reward_run=run_id)  # the run's adapter, trust and enable_thinking; cached, on the GPU
    prompts = [r["prompt"] for r in rows]
    scores = _score(scorer, prompts * 2, [r["a"] for r in rows] + [r["b"] for r in rows], 16)
    n = len(rows)
    out = [(r["id"], scores[i] - scores[n + i], "a" if scores[i] >= scores[n + i] else "b") for i, r in enumerate(rows)]
    return sorted(out, key=lambda t: (abs(t[1]), t[0]))
