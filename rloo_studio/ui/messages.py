"""A tab's message boxes: what one action answered is cleared by the next action.

Each action writes its own answer into its box; `clear_on` wires every other action of the tab to
empty the boxes it does not write, so an earlier error or "still going" never outlives its moment.
"""
from __future__ import annotations

from typing import Callable, Sequence


def _empty(n: int) -> Callable:
    def clear():
        return "" if n == 1 else [""] * n
    return clear


def clear_on(actions: Sequence[tuple[Callable, Sequence]], boxes: Sequence) -> None:
    """actions: (event listener such as button.click, the boxes that action writes itself).

    Every action empties the message boxes of `boxes` it does not write itself (a separate, fast
    event on the same trigger, so it never races with the action's own answer)."""
    for listener, own in actions:
        others = [b for b in boxes if all(b is not o for o in own)]
        if others:
            listener(_empty(len(others)), None, others, queue=False, show_progress="hidden")
