import pytest

from rloo_studio.models import load_tokenizer, think_token_ids
from rloo_studio.paths import DEMO_MODEL
from rloo_studio.rewards import correctness, make_answer_present_reward, make_think_format_reward


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer(str(DEMO_MODEL))


def ids(tok, text):
    return tok(text, add_special_tokens=False)["input_ids"]


def test_think_format_bands(tok):
    f = make_think_format_reward(tok)
    o, c = think_token_ids(tok)
    word = ids(tok, "7")  # one token
    assert len(word) == 1
    cases = [
        ([o] + word * 3 + [c] + ids(tok, "ok"), 0.3),  # both tags, short thinking
        (word * 12 + [c] + ids(tok, "ok"), 0.7),  # only </think>
        ([o] + word * 40 + [c], 1.0),
        ([o] + word * 20, -1.0),  # truncated
        (ids(tok, "just an answer"), -1.0),  # no tags
        ([o] + word * 12 + ids(tok, "?") + [c], 0.8),  # self-questioning bonus
    ]
    got = f(prompts=[""] * len(cases), completions=[""] * len(cases), completion_ids=[x for x, _ in cases])
    assert got == pytest.approx([r for _, r in cases])


def test_answer_present(tok):
    f = make_answer_present_reward(tok)
    o, c = think_token_ids(tok)
    cids = [[o, c] + ids(tok, "42"), [o] + ids(tok, "x") + [c, tok.eos_token_id], ids(tok, "42"), [o] + ids(tok, "x")]
    assert f(completion_ids=cids) == [1.0, 0.0, 0.0, 0.0]


def test_correctness_needs_closed_thinking_and_last_number():
    comps = [
        "<think>1+2</think>The answer is 1326.",
        "1+2</think>It is 1326",
        "<think>1326</think>The answer is 12.",
        "The answer is 1326.",  # no tags: nothing closed
        [{"role": "assistant", "content": "<think>x</think>1326"}],
    ]
    assert correctness(completions=comps, answer=["1326"] * 5) == [1.0, 1.0, 0.0, 0.0, 1.0]
    with pytest.raises(ValueError, match="answer"):
        correctness(completions=comps)
