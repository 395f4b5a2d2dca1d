"""Two lenses on one response's steps, side by side: the outcome model's score at each step's prefix (scoring.Scored:
the score if the answer ended after the step) and the process model's probability that the step is right
(process.score_steps), joined by where each step starts in the response.

They answer different questions. An outcome model was trained to rank whole answers, so its score at a prefix is a
guess at the finished answer's score, not a check of the step: a slipped step can leave it unmoved. What the two
disagree about is what `compare` finds: the first step the process model doubts and how the outcome score moved
there. Pure: no model is loaded here (the two results come from scoring.py and process.py).
"""
from __future__ import annotations

from dataclasses import dataclass

from rloo_studio.inspect.process import THRESHOLD

NOTICED = 0.25
"""An outcome model notices a step when its score falls there by at least this share of its largest move at any step
of the response: a dip of -0.0004 beside moves of 0.3 is no verdict on the step."""


@dataclass(frozen=True)
class LensStep:
    number: int  # 1-based, in the response's order
    text: str
    outcome: float | None  # the outcome model's score if the answer ended after this step (None: not read)
    change: float | None  # that minus the score just before the step
    p_right: float | None  # the process model's probability that the step is right (None: no process model)

    @property
    def doubted(self) -> bool:
        return self.p_right is not None and self.p_right < THRESHOLD


@dataclass(frozen=True)
class Lenses:
    steps: list[LensStep]
    total: float  # the outcome model's score of the whole response (at EOS)
    judged: bool  # a process model judged the steps
    doubted: LensStep | None  # the first step the process model doubts
    largest_drop: LensStep | None  # the step where the outcome score fell most (None: it fell at no step)
    trusted_least: LensStep | None  # the step the process model trusts least
    largest_move: float = 0.0  # the outcome score's largest change at a step, up or down (its scale here)

    def noticed(self, s: LensStep) -> bool:
        """Whether the outcome model's score falls at this step by enough to count (NOTICED)."""
        return s.change is not None and s.change < 0 and -s.change >= NOTICED * self.largest_move

    @property
    def agree(self) -> bool:
        """A process model judged, and it doubts no step, or the first it doubts is where the outcome score falls
        most (and noticeably)."""
        d = self.doubted
        return self.judged and (d is None or (self.noticed(d) and self.largest_drop is d))


def compare(scored, process_result: dict | None) -> Lenses:
    """Join an outcome model's scored steps (scoring.Scored) with a process model's verdict on the same response
    (process.score_steps' dict, or None) by each step's start offset: a step one of them could not read (no token
    of its own) shows as None on that side."""
    outcome = {st.start: st for st in scored.steps}
    process = {s["start"]: s for s in (process_result or {}).get("steps", [])}
    texts = {**{a: s["text"] for a, s in process.items()}, **{a: st.text for a, st in outcome.items()}}
    steps = [LensStep(k, texts[a], getattr(outcome.get(a), "score", None), getattr(outcome.get(a), "delta", None),
                      process[a]["p_correct"] if a in process else None)
             for k, a in enumerate(sorted(texts), 1)]
    fell = [s for s in steps if s.change is not None and s.change < 0]
    judged = [s for s in steps if s.p_right is not None]
    return Lenses(steps, scored.total, process_result is not None, next((s for s in steps if s.doubted), None),
                  min(fell, key=lambda s: s.change, default=None), min(judged, key=lambda s: s.p_right, default=None),
                  max((abs(s.change) for s in steps if s.change is not None), default=0.0))
