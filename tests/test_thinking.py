import pytest

from rloo_studio.core.thinking import parse, split_ids, split_steps, token_span


def spans_text(p, spans):
    return [p.text[a:b] for a, b in spans]


def test_both_tags():
    t = "<think>\nfirst step\n\nsecond step\n</think>\n\nThe answer is 5."
    p = parse(t)
    assert p.thinking == "first step\n\nsecond step"
    assert p.answer == "The answer is 5."
    assert [s.text for s in p.steps] == ["first step", "second step"]
    assert all(t[s.start : s.end] == s.text for s in p.steps)
    assert p.closed and p.has_open and not p.truncated


def test_only_closing_tag():
    # Qwen3-Thinking templates put <think> in the prompt: the completion starts inside the reasoning.
    p = parse("a\n\nb</think>done")
    assert p.thinking == "a\n\nb" and p.answer == "done"
    assert [s.text for s in p.steps] == ["a", "b"]
    assert p.closed and not p.has_open


def test_no_tags_is_all_answer():
    p = parse("Just 42.")
    assert p.thinking == "" and p.answer == "Just 42." and p.steps == []
    assert not p.closed and not p.truncated


def test_unclosed_is_truncated():
    p = parse("<think>\nstep one\n\nstep tw")
    assert p.truncated and not p.closed
    assert p.answer == ""
    assert [s.text for s in p.steps] == ["step one", "step tw"]


def test_several_blocks():
    t = "<think>r1</think>a1<think>r2\n\nr3</think>a2"
    p = parse(t)
    assert spans_text(p, p.think_spans) == ["r1", "r2\n\nr3"]
    assert spans_text(p, p.answer_spans) == ["a1", "a2"]
    assert [s.text for s in p.steps] == ["r1", "r2", "r3"]
    assert p.answer == "a1\na2"


def test_empty_thinking():
    p = parse("<think>\n\n</think>\n\nThe answer is 7.")
    assert p.thinking == "" and p.steps == [] and not p.has_thinking
    assert p.closed and p.answer == "The answer is 7."


def test_text_before_open_tag_is_answer():
    p = parse("Sure. <think>r</think>x")
    assert p.answer == "Sure.\nx" and p.thinking == "r"


@pytest.mark.parametrize(
    "mode,expected",
    [
        ("blank", ["One. Two.\nThree", "Four?"]),
        ("line", ["One. Two.", "Three", "Four?"]),
        ("sentence", ["One.", "Two.", "Three", "Four?"]),
    ],
)
def test_split_modes(mode, expected):
    t = "<think>One. Two.\nThree\n\n  Four?</think>ans"
    p = parse(t, split=mode)
    assert [s.text for s in p.steps] == expected
    assert all(t[s.start : s.end] == s.text for s in p.steps)


def test_unknown_split_mode():
    with pytest.raises(ValueError, match="blank, line, sentence"):
        parse("x", split="para")


def test_split_steps_offsets_inside_range():
    t = "xx<think> a \n\n b </think>"
    steps = split_steps(t, t.index(">") + 1, t.index("</"), "blank")
    assert [(s.text, t[s.start : s.end]) for s in steps] == [("a", "a"), ("b", "b")]


def test_token_span_skips_special_offsets():
    offsets = [(0, 0), (0, 3), (3, 5), (5, 9), (0, 0)]
    assert token_span(offsets, 3, 9) == (2, 4)
    assert token_span(offsets, 4, 6) == (2, 4)
    assert token_span(offsets, 20, 30) == (0, 0)


OPEN, CLOSE = 1, 2


@pytest.mark.parametrize(
    "ids,think,answer,closed",
    [
        ([OPEN, 5, 6, CLOSE, 7, 8], [5, 6], [7, 8], True),  # both tags
        ([5, 6, CLOSE, 7], [5, 6], [7], True),  # only </think>
        ([7, 8], [], [7, 8], False),  # no tags
        ([OPEN, 5, 6], [5, 6], [], False),  # truncated
        ([OPEN, 5, CLOSE, 7, OPEN, 6, CLOSE, 9], [5, 7, 6], [9], True),  # several blocks: last close wins
        ([OPEN, CLOSE, 9], [], [9], True),  # empty thinking
    ],
)
def test_split_ids(ids, think, answer, closed):
    s = split_ids(ids, OPEN, CLOSE)
    assert (s.thinking, s.answer, s.closed) == (think, answer, closed)
