"""Split a response into <think> reasoning and answer, and the reasoning into steps.

Works on text (character offsets) and on token ids (for reward functions, which get
`completion_ids`). Accepted shapes, all seen in practice:
  "<think>R</think>A"   both tags
  "R</think>A"          only the closing tag (Qwen3-Thinking templates put <think> in the prompt)
  "A"                   no tags: everything is answer
  "<think>R"            unclosed: truncated reasoning, no answer
  "<think>R1</think>A1<think>R2</think>A2"   several blocks
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

OPEN, CLOSE = "<think>", "</think>"
SPLIT_MODES = ("blank", "line", "sentence")
_TAG = re.compile(r"<think>|</think>")
_SPLITTERS = {
    "blank": re.compile(r"\n[ \t]*\n"),
    "line": re.compile(r"\n"),
    # A sentence ends at . ! ? followed by white space, or at a line break.
    "sentence": re.compile(r"(?<=[.!?])\s+|\n"),
}


@dataclass(frozen=True)
class Step:
    text: str
    start: int  # character offsets into the whole response: text == response[start:end]
    end: int


@dataclass(frozen=True)
class Parsed:
    text: str
    think_spans: list[tuple[int, int]]  # reasoning inside each block (tags excluded)
    answer_spans: list[tuple[int, int]]  # text outside the blocks (tags excluded)
    steps: list[Step] = field(default_factory=list)
    has_open: bool = False
    has_close: bool = False
    truncated: bool = False  # a block was opened and never closed

    @property
    def thinking(self) -> str:
        return "\n".join(self.text[a:b].strip() for a, b in self.think_spans).strip()

    @property
    def answer(self) -> str:
        return "\n".join(self.text[a:b].strip() for a, b in self.answer_spans if self.text[a:b].strip())

    @property
    def has_thinking(self) -> bool:
        return bool(self.thinking)

    @property
    def closed(self) -> bool:
        """Reasoning was closed with </think> (False without tags or when truncated)."""
        return self.has_close and not self.truncated


def parse(text: str, split: str = "blank") -> Parsed:
    """Parse `text`; `split` picks how reasoning is cut into steps (see SPLIT_MODES)."""
    if split not in _SPLITTERS:
        raise ValueError(f"unknown step split {split!r}; choose one of {', '.join(SPLIT_MODES)}")
    tags = list(_TAG.finditer(text))
    think, answer = [], []
    # A closing tag before any opening tag means the reasoning began in the prompt.
    in_think = bool(tags) and tags[0].group() == CLOSE
    pos = 0
    for m in tags:
        if m.group() == OPEN:
            (think if in_think else answer).append((pos, m.start()))
            in_think = True
        else:  # CLOSE; a stray one ends an implicit block, like the leading case
            think.append((pos, m.start()))
            in_think = False
        pos = m.end()
    truncated = in_think
    (think if in_think else answer).append((pos, len(text)))
    steps = [s for a, b in think for s in split_steps(text, a, b, split)]
    return Parsed(
        text=text,
        think_spans=[(a, b) for a, b in think if b > a],
        answer_spans=[(a, b) for a, b in answer if b > a],
        steps=steps,
        has_open=OPEN in text,
        has_close=CLOSE in text,
        truncated=truncated,
    )


def split_steps(text: str, start: int, end: int, split: str = "blank") -> list[Step]:
    """Steps of text[start:end], stripped of surrounding white space, empty ones dropped."""
    steps, pos = [], start
    for m in list(_SPLITTERS[split].finditer(text, start, end)) + [None]:
        stop = m.start() if m else end
        chunk = text[pos:stop]
        lead = len(chunk) - len(chunk.lstrip())
        body = chunk.strip()
        if body:
            s = pos + lead
            steps.append(Step(body, s, s + len(body)))
        if m:
            pos = m.end()
    return steps


def token_span(offsets: Sequence[tuple[int, int]], start: int, end: int) -> tuple[int, int]:
    """Token indices [i, j) whose characters overlap text[start:end].

    `offsets` is a fast tokenizer's offset_mapping; special tokens have (0, 0) and are skipped.
    Returns (i, i) when no token overlaps.
    """
    hit = [k for k, (a, b) in enumerate(offsets) if b > a and a < end and b > start]
    return (hit[0], hit[-1] + 1) if hit else (0, 0)


@dataclass(frozen=True)
class IdSplit:
    thinking: list[int]
    answer: list[int]
    closed: bool  # a </think> id was found


def split_ids(ids: Sequence[int], open_id: int | None, close_id: int) -> IdSplit:
    """Split completion token ids at the last </think> id (ids from the tokenizer, never literals).

    Without a </think>, everything after an opening <think> is unfinished reasoning; with
    no tags at all the completion is all answer.
    """
    ids = list(ids)
    if close_id in ids:
        cut = len(ids) - 1 - ids[::-1].index(close_id)
        think = [t for t in ids[:cut] if t not in (open_id, close_id)]
        return IdSplit(think, ids[cut + 1 :], True)
    if open_id is not None and open_id in ids:
        k = ids.index(open_id)
        return IdSplit(ids[k + 1 :], ids[:k], False)
    return IdSplit([], ids, False)
