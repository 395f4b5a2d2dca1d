"""Pull the final answer out of a response's answer text, in one of the common formats.

    last_number   the last number in the text ("... so the answer is 1326.")   (the demo's format)
    boxed         the last \\boxed{...} (LaTeX, nested braces allowed)        (MATH-style datasets)
    hash          the number after the last "#### "                            (GSM8K-style datasets)

Used by the correctness reward (rule_rewards.make_correctness_reward); no torch, no gradio.
"""
from __future__ import annotations

import re
from typing import Callable

_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
_HASH = re.compile(r"####\s*(-?[\d,]*\.?\d+)")


def last_number(text: str) -> str | None:
    """The last run of digits (signs, separators and decimals dropped, as the demo grades)."""
    digits = "".join(c if c.isdigit() else " " for c in text).split()
    return digits[-1] if digits else None


def boxed(text: str) -> str | None:
    """The content of the last \\boxed{...}, white space stripped; None without one (or unbalanced)."""
    k = text.rfind("\\boxed{")
    if k < 0:
        return None
    depth, i = 1, k + len("\\boxed{")
    for j in range(i, len(text)):
        depth += {"{": 1, "}": -1}.get(text[j], 0)
        if depth == 0:
            return text[i:j].strip()
    return None


def after_hashes(text: str) -> str | None:
    """The number after the last '#### ' (thousands separators dropped)."""
    found = _HASH.findall(text)
    return found[-1].replace(",", "") if found else None


EXTRACTORS: dict[str, Callable[[str], str | None]] = {"last_number": last_number, "boxed": boxed,
                                                       "hash": after_hashes}
ANSWER_FORMATS = tuple(EXTRACTORS)


def normalize(value) -> str:
    """An expected or extracted answer for comparison: stripped, separators and a trailing .0 dropped."""
    s = str(value).strip().replace(",", "")
    if re.fullmatch(r"-?\d+\.0+", s):
        s = s.split(".")[0]
    return s


def matches(extracted: str | None, expected) -> bool:
    return extracted is not None and expected is not None and normalize(extracted) == normalize(expected)
