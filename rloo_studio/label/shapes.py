"""One row of an imported file -> the prompt (text and turns) and the responses the store keeps.

Row shapes (TRL's names, https://huggingface.co/docs/trl/dataset_formats):
  standard         prompt / chosen / rejected strings; without `prompt` the shared prefix of chosen
                   and rejected, cut back to a line end
  conversational   lists of {role, content}; without `prompt` the shared leading messages
                   (trl.data_utils.maybe_extract_prompt)
  UltraFeedback-binarized   `prompt` a string, chosen / rejected whole conversations that repeat it
                   (maybe_extract_prompt); the repeated prompt must equal `prompt`, else the row is refused
  Anthropic HH     "\\n\\nHuman: ...\\n\\nAssistant: ..." transcripts, read as conversations
  stepwise         prompt / completions (a list of step texts) / labels (a list of true / false, one per step):
                   the stepwise supervision that TRL's PRMTrainer read and PRM800K / Math-Shepherd conversions use
  ProcessBench     problem / steps (a list of step texts) / label (the index of the first wrong step, -1 when every
                   step is right): stored as a stepwise row, labeled up to and including the first wrong step
  PRM800K          OpenAI's own JSONL (question.problem, label.steps[].completions ...): label/prm800k.py
How a prompt is stored: its text is the last user message; a prompt that holds more (earlier turns,
a system message) also keeps its messages in the extra column `messages` (the exporter writes them
back as the conversational prompt). A file column that is itself called `messages` is kept as
`file_messages`, or dropped when it only repeats the prompt and the chosen reply (UltraFeedback).
Every problem is a DataError naming the file, the line or row, and the field.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass

from rloo_studio.core.errors import DataError

MAX_TEXT_CHARS = 1_000_000  # one prompt or response; longer is almost surely a broken file
ROLES = ("system", "user", "assistant", "tool")
_CONVERSATION = re.compile(r"\s*\[\{")  # a CSV cell holding a JSON list of messages (v.lstrip().startswith("[{"))
TURNS = "messages"  # the extra column holding a prompt's turns


@dataclass
class Row:
    """What one file row becomes: a prompt (text + extra columns) and 0, 2 or more responses."""

    prompt: str
    responses: list[str]
    extra: dict
    preferred: bool  # True: responses = [chosen, rejected], already labeled
    steps: list[int] | None = None  # a stepwise row: the verdicts of its response's first steps (+1 / -1)
    folded: int = 0  # a stepwise row: steps that held a blank line (or white space around them), folded

    @property
    def turns(self) -> list[dict] | None:
        return self.extra.get(TURNS)


def text(loc: str, field: str, v, allow_empty: bool = False) -> str:
    if isinstance(v, str) and (allow_empty or (v and not v.isspace())) and len(v) <= MAX_TEXT_CHARS:
        return v  # the common case first, without building a message (three times a row, a million rows)
    where = f"{loc}, field '{field}'"
    if v is None or (isinstance(v, float) and v != v):  # None / NaN from CSV or Parquet
        raise DataError(f"{where}: missing value")
    if not isinstance(v, str):
        raise DataError(f"{where}: expected text, got {type(v).__name__}")
    if not allow_empty and (not v or v.isspace()):  # (not v.strip(), without copying the text)
        raise DataError(f"{where}: empty text")
    raise DataError(f"{where}: {len(v):,} characters, over the {MAX_TEXT_CHARS:,} limit")


def conversational(v) -> bool:
    """A list of {role, content} messages (trl.data_utils.is_conversational), or a CSV cell holding one."""
    if isinstance(v, str):
        return _CONVERSATION.match(v) is not None
    if isinstance(v, list) and not v:
        return True  # an empty conversation: refused with a message by messages()
    from trl.data_utils import is_conversational

    return is_conversational({"chosen": v})


def messages(loc: str, field: str, v) -> list[dict]:
    where = f"{loc}, field '{field}'"
    if isinstance(v, str):
        try:
            v = json.loads(v)  # CSV cells may hold JSON lists
        except ValueError:
            raise DataError(f"{where}: expected a list of {{role, content}} messages") from None
    if not isinstance(v, list) or not v:
        raise DataError(f"{where}: expected a non-empty list of {{role, content}} messages")
    for k, m in enumerate(v):
        if not isinstance(m, dict) or "role" not in m or "content" not in m:
            raise DataError(f"{where}, message {k + 1}: each message needs 'role' and 'content'")
        if m["role"] not in ROLES:
            raise DataError(f"{where}, message {k + 1}: unknown role {m['role']!r} (use {', '.join(ROLES)})")
        if m["role"] == "assistant" and isinstance(m["content"], str) and not m["content"].strip():
            raise DataError(f"{where}, message {k + 1}: the assistant turn is empty")
        text(loc, f"{field}[{k}].content", m["content"], allow_empty=m["role"] != "assistant")
    return [{"role": m["role"], "content": m["content"]} for m in v]


# -- Anthropic HH text ----------------------------------------------------------------------------

_HH_TURN = re.compile(r"\n\n(Human|Assistant):")
_HH_START = re.compile(r"\s*Human:")  # v.lstrip().startswith("Human:"), without copying the text


def looks_hh(v) -> bool:
    return isinstance(v, str) and _HH_START.match(v) is not None


def hh_messages(loc: str, field: str, v: str, prompt: bool = False) -> list[dict]:
    """'\\n\\nHuman: hi\\n\\nAssistant: hello' -> [{user: hi}, {assistant: hello}].

    A prompt may end with an empty 'Assistant:' (the reply follows in chosen / rejected)."""
    text(loc, field, v)
    parts = _HH_TURN.split("\n\n" + v.lstrip())
    turns = [{"role": "user" if parts[i] == "Human" else "assistant", "content": parts[i + 1].strip()}
             for i in range(1, len(parts), 2)]
    where = f"{loc}, field '{field}'"
    if prompt and turns[-1]["role"] == "assistant" and not turns[-1]["content"]:
        turns.pop()
    elif not prompt and all(t["role"] != "assistant" for t in turns):
        raise DataError(f"{where}: a Human/Assistant transcript without an 'Assistant:' turn; nothing to compare")
    for k, t in enumerate(turns, start=1):
        if not t["content"]:
            who = "Human" if t["role"] == "user" else "Assistant"
            raise DataError(f"{where}: the '{who}:' turn (turn {k}) is empty")
    return turns


# -- preference rows -------------------------------------------------------------------------------

def _side(loc: str, field: str, v, hh: bool) -> list[dict] | str:
    if conversational(v):
        return messages(loc, field, v)
    if hh and looks_hh(v):
        return hh_messages(loc, field, v)
    return text(loc, field, v)


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and v != v)


def _prompt_field(loc: str, r: dict, hh: bool) -> list[dict] | str | None:
    p = r.get("prompt")
    if _missing(p):
        return None  # implicit prompt
    if conversational(p):
        return messages(loc, "prompt", p)
    if hh:
        return hh_messages(loc, "prompt", p, prompt=True)
    return text(loc, "prompt", p)


def _same(a: list[dict], b: list[dict]) -> bool:
    return [(m["role"], m["content"].strip()) for m in a] == [(m["role"], m["content"].strip()) for m in b]


def _short(s: str, n: int = 60) -> str:
    s = " ".join(s.split())
    return repr(s if len(s) <= n else s[: n - 1] + "…")


def _prompt_part(conv: list[dict]) -> list[dict]:
    """The messages before the final assistant reply."""
    j = len(conv)
    while j and conv[j - 1]["role"] == "assistant":
        j -= 1
    return conv[:j]


def _check_repeated_prompt(loc: str, field: str, conv: list[dict], pm: list[dict] | str) -> None:
    """A conversation that repeats the prompt (UltraFeedback) must repeat exactly the `prompt` field."""
    part = _prompt_part(conv)
    if isinstance(pm, str):
        ok = bool(part) and part[-1]["role"] == "user" and part[-1]["content"].strip() == pm.strip()
        mine = part[-1]["content"] if part else ""
        theirs = pm
    else:
        ok = _same(part, pm)
        mine = " / ".join(m["content"] for m in part if m["role"] == "user")
        theirs = " / ".join(m["content"] for m in pm if m["role"] == "user")
    if not ok:
        raise DataError(f"{loc}, field '{field}': the conversation's prompt {_short(mine)} differs from the "
                        f"'prompt' field {_short(theirs)}; fix the row or drop the 'prompt' column")


def _reply(loc: str, field: str, rest: list[dict]) -> str:
    if not rest or any(m["role"] != "assistant" for m in rest):
        raise DataError(f"{loc}: 'chosen' and 'rejected' differ before the final assistant reply, so they do not "
                        "answer the same prompt; keep only pairs that differ in the last reply")
    return text(loc, field, "".join(m["content"] for m in rest))


def split_implicit(chosen: str, rejected: str) -> tuple[str, str, str]:
    """Plain texts: the shared prefix, cut back to a line end, is the prompt (TRL's extract_prompt cuts
    mid-word, e.g. 'The answer is' from 'The answer is 4' / 'The answer is 5')."""
    k = len(os.path.commonprefix([chosen, rejected]))
    j = chosen[:k].rfind("\n")
    k = j + 1 if j >= 0 else 0
    return chosen[:k], chosen[k:], rejected[k:]


def preference_row(loc: str, r: dict) -> Row:
    """A {prompt?, chosen, rejected, ...} row in any of the shapes in this module's docstring."""
    for f in ("chosen", "rejected"):
        if f not in r:
            raise DataError(f"{loc}: missing field '{f}'")
    p = r.get("prompt")
    hh = looks_hh(p) or (_missing(p) and looks_hh(r["chosen"]))
    pm = _prompt_field(loc, r, hh)
    ch, rj = _side(loc, "chosen", r["chosen"], hh), _side(loc, "rejected", r["rejected"], hh)
    if isinstance(ch, list) != isinstance(rj, list):
        raise DataError(f"{loc}: one of 'chosen' and 'rejected' is a conversation and the other plain text; "
                        "give both in the same form")
    conversation = None
    if isinstance(ch, str):
        if pm is None:
            prompt_text, ch, rj = split_implicit(ch, rj)
            if not prompt_text.strip():
                raise DataError(f"{loc}: chosen and rejected share no prompt; add a 'prompt' field")
            text(loc, "chosen", ch)
            text(loc, "rejected", rj)
            pm = prompt_text
    else:
        from trl.data_utils import maybe_extract_prompt  # trl is loaded already wherever unsloth is (app, CLI)

        repeats = any(m["role"] != "assistant" for m in ch + rj)
        if pm is None or repeats:
            if pm is not None:
                _check_repeated_prompt(loc, "chosen", ch, pm)
                _check_repeated_prompt(loc, "rejected", rj, pm)
            conversation = ch
            example = {"chosen": ch, "rejected": rj}
            if isinstance(pm, str):
                example["prompt"] = pm  # UltraFeedback: maybe_extract_prompt takes the prompt from the conversations
            ex = maybe_extract_prompt(example)
            if not ex["prompt"]:
                raise DataError(f"{loc}: chosen and rejected share no prompt messages; add a 'prompt' field")
            pm, ch, rj = ex["prompt"], ex["chosen"], ex["rejected"]
        ch, rj = _reply(loc, "chosen", ch), _reply(loc, "rejected", rj)
    if ch == rj:
        raise DataError(f"{loc}: 'chosen' is identical to 'rejected'; nothing to prefer")
    prompt, extra = prompt_and_turns(pm)
    extra = {**extra_columns(r, ("prompt", "chosen", "rejected"), conversation), **extra}
    return Row(prompt, [ch, rj], extra, True)


def prompt_and_turns(pm: list[dict] | str) -> tuple[str, dict]:
    """The stored prompt text (the last user message) and {messages: turns} when there is more to it."""
    if isinstance(pm, str):
        return pm, {}
    users = [m["content"] for m in pm if m["role"] == "user"]
    prompt = users[-1] if users else pm[-1]["content"]
    return prompt, ({TURNS: pm} if len(pm) > 1 or pm[-1]["role"] != "user" else {})


def prompt_field(loc: str, v) -> tuple[str, dict]:
    """A prompt set's or a candidates file's `prompt`: text, a conversation, or HH text."""
    if conversational(v):
        return prompt_and_turns(messages(loc, "prompt", v))
    if looks_hh(v):
        return prompt_and_turns(hh_messages(loc, "prompt", v, prompt=True))
    return text(loc, "prompt", v), {}


def jsonable(v) -> bool:
    if v is None or isinstance(v, (str, bool, int)):  # the common cells, without encoding them
        return True
    if isinstance(v, float):
        return v == v
    try:
        json.dumps(v)
        return not (isinstance(v, float) and v != v)
    except (TypeError, ValueError):
        return False


def extra_columns(r: dict, skip, conversation: list[dict] | None = None) -> dict:
    """The row's other columns. `messages` is the store's name for a prompt's turns: a file column of that
    name is dropped when it only repeats the chosen conversation (UltraFeedback), else kept as `file_messages`."""
    out = {k: v for k, v in r.items() if k not in skip and jsonable(v)}
    if TURNS in out:
        m = out.pop(TURNS)
        redundant = (conversation is not None and isinstance(m, list)
                     and all(isinstance(x, dict) and {"role", "content"} <= set(x) and isinstance(x["content"], str)
                             for x in m) and _same(m, conversation))
        if not redundant:
            out["file_messages"] = m
    return out


# -- stepwise rows ---------------------------------------------------------------------------------------------

STEPWISE = ("prompt", "completions", "labels")
_BLANK_RUN = re.compile(r"\n[ \t]*\n(?:[ \t]*\n)*")  # thinking.parse's step separator, and any run of them


def _listed(loc: str, field: str, v, what: str) -> list:
    if isinstance(v, str):
        try:
            v = json.loads(v)  # a CSV cell holding a JSON list
        except ValueError:
            pass
    if not isinstance(v, (list, tuple)):
        raise DataError(f"{loc}, field '{field}': expected a list of {what}, got {type(v).__name__}")
    return list(v)


def step_text(loc: str, field: str, v) -> tuple[str, bool]:
    """A step's text as stored, and whether it had to change: a blank line separates steps (thinking.parse), so
    blank lines inside a step are folded to one line break, and the white space around it is dropped."""
    t = text(loc, field, v)
    if "<think>" in t or "</think>" in t:
        raise DataError(f"{loc}, field '{field}': a step holds a <think> or </think> tag; steps are the "
                        "reasoning inside the tags, without them")
    folded = _BLANK_RUN.sub("\n", t).strip()
    return folded, folded != t


def _verdicts(loc: str, labels: list) -> list[int]:
    """True -> +1, False -> -1, up to the first False (the steps after the first wrong one are not credited)."""
    for k, v in enumerate(labels):
        if not isinstance(v, bool):
            hint = " (0 and 1 are numbers: write true or false)" if type(v) is int and v in (0, 1) else ""
            raise DataError(f"{loc}, field 'labels[{k}]': expected true or false, got {v!r}{hint}")
    cut = labels.index(False) + 1 if False in labels else len(labels)
    return [1 if v else -1 for v in labels[:cut]]


def stepwise_row(loc: str, r: dict) -> Row:
    """A {prompt, completions, labels, ...} row: the prompt (other columns kept, e.g. answer), one response
    "<think>\\n" + steps joined by blank lines + "\\n</think>" (thinking.parse gives back exactly these steps), and
    the verdicts of its steps up to the first wrong one."""
    for f in STEPWISE:
        if f not in r:
            raise DataError(f"{loc}: missing field '{f}'")
    prompt, turns = prompt_field(loc, r["prompt"])
    steps = _listed(loc, "completions", r["completions"], "step texts")
    labels = _listed(loc, "labels", r["labels"], "true / false labels")
    if not steps:
        raise DataError(f"{loc}, field 'completions': no steps; a stepwise row needs at least one")
    if len(labels) != len(steps):
        raise DataError(f"{loc}: {len(steps)} completions (steps) but {len(labels)} labels; give one label per step")
    texts = [step_text(loc, f"completions[{k}]", v) for k, v in enumerate(steps)]
    verdicts = _verdicts(loc, labels)
    extra = {k: v for k, v in extra_columns(r, STEPWISE).items() if v is not None}  # (an export's empty cells)
    return steps_row(prompt, texts, verdicts, {**extra, **turns})


def steps_row(prompt: str, texts: list[tuple[str, bool]], verdicts: list[int], extra: dict) -> Row:
    """A response of steps (step_text's (text, changed) pairs) and the verdicts of its first steps, as the store
    keeps it: "<think>\\n" + the steps joined by blank lines + "\\n</think>" (thinking.parse gives back exactly these
    steps)."""
    response = "<think>\n" + "\n\n".join(t for t, _ in texts) + "\n</think>"
    return Row(prompt, [response], extra, False, verdicts, sum(changed for _, changed in texts))


# -- ProcessBench rows -----------------------------------------------------------------------------------------

PROCESSBENCH = ("problem", "steps", "label")


def first_wrong(loc: str, v, n: int) -> int:
    """ProcessBench's `label`: the index of the first wrong step (0-based), or -1 when every step is right."""
    if isinstance(v, str) and re.fullmatch(r"\s*-?\d+\s*", v):
        v = int(v)  # a CSV cell
    elif isinstance(v, float) and v.is_integer():
        v = int(v)  # (a Parquet column with a missing value elsewhere is read as floats)
    if isinstance(v, bool) or not isinstance(v, int):
        raise DataError(f"{loc}, field 'label': expected the index of the first wrong step (an integer; -1 when "
                        f"every step is right), got {v!r}")
    if not -1 <= v < n:
        raise DataError(f"{loc}, field 'label': {v} is not a step of this row, which has {n} step"
                        f"{'' if n == 1 else 's'} (indexes 0 to {n - 1}; -1 when every step is right)")
    return v


def processbench_row(loc: str, r: dict) -> Row:
    """A {problem, steps, label, ...} row (ProcessBench): the problem as the prompt (other columns kept with it, as
    the stepwise import keeps them), one response of the steps as a stepwise row's, and the steps labeled as
    ProcessBench judges them: right before the first wrong step, wrong at it, none after (-1: every step right)."""
    for f in PROCESSBENCH:
        if f not in r:
            raise DataError(f"{loc}: missing field '{f}'")
    prompt = text(loc, "problem", r["problem"])
    steps = _listed(loc, "steps", r["steps"], "step texts")
    if not steps:
        raise DataError(f"{loc}, field 'steps': no steps; a ProcessBench row needs at least one")
    k = first_wrong(loc, r["label"], len(steps))
    texts = [step_text(loc, f"steps[{i}]", v) for i, v in enumerate(steps)]
    verdicts = [1] * len(steps) if k < 0 else [1] * k + [-1]
    extra = {c: v for c, v in extra_columns(r, PROCESSBENCH).items() if v is not None}
    return steps_row(prompt, texts, verdicts, extra)
