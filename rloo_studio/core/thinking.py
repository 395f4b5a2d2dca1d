"""Split a response into <think> reasoning and answer, and the reasoning into steps.

Works on text (character offsets) and on token ids (for reward functions, which get
`completion_ids`). Accepted shapes, all seen in practice:
  "<think>R</think>A"   both tags
  "R</think>A"          only the closing tag (Qwen3-Thinking templates put <think> in the prompt)
  "A"                   no tags: everything is answer
  "<think>R"            unclosed: truncated reasoning, no answer
  "<think>R1</think>A1<think>R2</think>A2"   several blocks

What the chat template already put into the prompt changes how a response reads (`Template`,
rendered once per template): Qwen3-Thinking's generation prompt ends `<think>\n`, so a response
begins inside the reasoning (a response cut before </think> is all reasoning, and truncated); a
hybrid template with enable_thinking=false ends with an empty, closed block, so a response is all
answer. `parse(text, start=...)` and `split_ids(..., start=...)` take that state; `continuation`
drops a leading <think> that the prompt already opened, so no path doubles it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

START_STATES = ("answer", "think", "closed")
"""Where the prompt leaves a response: outside any block (no template tags), inside an opened <think>
block, or after a closed (empty) block."""

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
    start: str = "answer"  # where the prompt left the response (START_STATES)

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
        """Reasoning was closed with </think>, here or in the prompt (False without tags or when truncated)."""
        return (self.has_close or self.start == "closed") and not self.truncated


def parse(text: str, split: str = "blank", start: str = "answer") -> Parsed:
    """Parse `text`; `split` picks how reasoning is cut into steps (see SPLIT_MODES); `start` is where
    the prompt left it (Template.start): "think" when the template opened <think> in the prompt."""
    if split not in _SPLITTERS:
        raise ValueError(f"unknown step split {split!r}; choose one of {', '.join(SPLIT_MODES)}")
    if start not in START_STATES:
        raise ValueError(f"unknown start {start!r}; choose one of {', '.join(START_STATES)}")
    tags = list(_TAG.finditer(text))
    think, answer = [], []
    # A closing tag before any opening tag means the reasoning began in the prompt.
    in_think = start == "think" or (bool(tags) and tags[0].group() == CLOSE)
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
        start=start,
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


def split_ids(ids: Sequence[int], open_id: int | None, close_id: int, start: str = "answer") -> IdSplit:
    """Split completion token ids at the last </think> id (ids from the tokenizer, never literals).

    Without a </think>, everything after an opening <think> is unfinished reasoning; with
    no tags at all the completion is all answer, or all unfinished reasoning when the prompt
    opened the block (start="think"), or answer after closed reasoning (start="closed").
    """
    ids = list(ids)
    if close_id in ids:
        cut = len(ids) - 1 - ids[::-1].index(close_id)
        think = [t for t in ids[:cut] if t not in (open_id, close_id)]
        return IdSplit(think, ids[cut + 1 :], True)
    if open_id is not None and open_id in ids:
        k = ids.index(open_id)
        if start == "think":
            return IdSplit([t for t in ids if t != open_id], [], False)
        return IdSplit(ids[k + 1 :], ids[:k], False)
    if start == "think":
        return IdSplit(ids, [], False)
    return IdSplit([], ids, start == "closed")


# ---------------------------------------------------------------- the chat template

_PROBE = "Say hi."
_SENTINEL = "ANSWER_9f3c"


@dataclass(frozen=True)
class Template:
    """How a tokenizer's chat template begins the assistant's turn (rendered once per template)."""

    start: str = "answer"  # START_STATES: where the generation prompt leaves a response
    open_text: str = ""  # the generation prompt's text from its open <think> on ("<think>\n"); "" if none
    closed_text: str = ""  # the generation prompt's closed empty block ("<think>\n\n</think>\n\n"); "" if none
    answer_prefix: str = ""  # what the template puts after the generation prompt before an answer
    # given without reasoning ("\n</think>\n\n" for Qwen3-Thinking; "" for a plain template)
    enable_thinking: bool = True

    @property
    def opens(self) -> bool:
        return self.start == "think"


_TEMPLATES: dict[tuple, Template] = {}


def template_kwargs(enable_thinking: bool = True) -> dict:
    """Extra variables for apply_chat_template (TRL's chat_template_kwargs). Templates without the
    variable ignore it; hybrid Qwen3 templates close an empty <think> block when it is False."""
    return {"enable_thinking": bool(enable_thinking)}


def chat_prompt(tok, prompt, enable_thinking: bool = True) -> str:
    """The prompt as the model sees it: chat template with the generation prompt (a str is one user
    message; a list of messages goes in as it is). Without a chat template, the text itself."""
    messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)
    if getattr(tok, "chat_template", None):
        return tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True,
                                       **template_kwargs(enable_thinking))
    return "".join(m.get("content", "") for m in messages)


def template_info(tok, enable_thinking: bool = True) -> Template:
    """Render the generation prompt (and an answer without reasoning) once per template and see what
    it leaves open. Cached by the template's text and enable_thinking."""
    chat = getattr(tok, "chat_template", None)
    key = (chat if isinstance(chat, str) else repr(chat), bool(enable_thinking))
    if key not in _TEMPLATES:
        _TEMPLATES[key] = _render(tok, enable_thinking) if chat else Template(enable_thinking=bool(enable_thinking))
    return _TEMPLATES[key]


def _render(tok, enable_thinking: bool) -> Template:
    user = [{"role": "user", "content": _PROBE}]
    kw = template_kwargs(enable_thinking)
    gen = tok.apply_chat_template(user, tokenize=False, add_generation_prompt=True, **kw)
    tail = gen[gen.rfind(_PROBE) + len(_PROBE):]  # the end of the user turn and the assistant's opening
    o, c = tail.rfind(OPEN), tail.rfind(CLOSE)
    start, open_text, closed_text = "answer", "", ""
    if o >= 0 and o > c:
        start, open_text = "think", tail[o:]
    elif c >= 0:
        first = tail.rfind(OPEN, 0, c)
        start, closed_text = "closed", tail[first if first >= 0 else c:]
    answer_prefix = CLOSE + "\n\n" if start == "think" else ""
    try:
        full = tok.apply_chat_template(user + [{"role": "assistant", "content": _SENTINEL}], tokenize=False,
                                       add_generation_prompt=False, **kw)
        if full.startswith(gen) and _SENTINEL in full[len(gen):]:
            answer_prefix = full[len(gen):].split(_SENTINEL)[0]
    except Exception:  # noqa: BLE001 — a template that cannot render an assistant turn: keep the fallback
        pass
    return Template(start, open_text, closed_text, answer_prefix, bool(enable_thinking))


_LEADING_OPEN = re.compile(r"\s*<think>")
_LEADING_EMPTY = re.compile(r"\s*<think>\s*</think>\s*")


def body_start(tpl: Template, response: str) -> int:
    """Where `response` continues the generation prompt: past a leading <think> (and the white space
    the prompt already put after it) when the prompt opened one, past a leading empty block when the
    prompt closed one; 0 otherwise. prompt + response[body_start:] is the text the model sees."""
    if tpl.start == "think":
        m = _LEADING_OPEN.match(response)
        if m:
            k, after = m.end(), tpl.open_text[len(OPEN):]
            return k + len(after) if after and response.startswith(after, k) else k
    elif tpl.start == "closed":
        if tpl.closed_text and response.startswith(tpl.closed_text):
            return len(tpl.closed_text)
        m = _LEADING_EMPTY.match(response)
        if m:
            return m.end()
    return 0


def continuation(tpl: Template, response: str) -> str:
    """The response as it follows the generation prompt (no doubled <think>)."""
    return response[body_start(tpl, response):]


def full_response(tpl: Template, completion: str) -> str:
    """A completion sampled after the generation prompt, written out whole: the <think> the prompt
    opened (or the empty block it closed) put back in front, so that stored text reads the same under
    any template, and `continuation` gives the completion back."""
    if tpl.start == "think" and not _LEADING_OPEN.match(completion):
        return tpl.open_text + completion
    if tpl.start == "closed" and not _LEADING_EMPTY.match(completion):
        return tpl.closed_text + completion
    return completion


def answer_alone(tpl: Template, answer: str) -> str:
    """The answer without reasoning, as the template renders an assistant turn that has none."""
    return tpl.answer_prefix + answer


def reasons(text: str, start: str = "answer") -> bool:
    """The response holds non-empty <think> reasoning (both tags, or only the closing tag). `start`: where
    the chat template's generation prompt leaves it (thinking.Template.start); after Qwen3-Thinking's
    prompt ("think") a response without tags, or cut before </think>, is reasoning too."""
    return parse(text, start=start).has_thinking


def pair_kind(chosen: str, rejected: str, start: str = "answer") -> str:
    """'both reason', 'only chosen reasons', 'only rejected reasons' or 'neither reasons' (`start` as in reasons)."""
    c, r = reasons(chosen, start), reasons(rejected, start)
    if c and r:
        return "both reason"
    if c or r:
        return "only chosen reasons" if c else "only rejected reasons"
    return "neither reasons"
