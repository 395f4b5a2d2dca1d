"""What the model sees (inspect/model_input.py) on the real Qwen3 tokenizer and the demo tokenizer: the exact
templated text, token by token, with ids; the RLOO completion picker (rloo/view.py)."""
import pytest

from rloo_studio.core.thinking import chat_prompt, continuation, template_info
from rloo_studio.inspect.model_input import pieces, policy_view, reward_text, reward_view

OPEN_ID, CLOSE_ID, IM_START, EOS = 151667, 151668, 151644, 151645
PROMPT = "What is 17 + 25?"
REASONED = "<think>\n7+5=12, carry 1\n\n1+2+1=4\n</think>\n\nThe answer is 42."
QWEN3_STYLE = "7+5=12, carry 1\n\n1+2+1=4\n</think>\n\nThe answer is 42."  # as Qwen3-Thinking writes it


@pytest.mark.parametrize("response", [REASONED, QWEN3_STYLE])
def test_reward_view_of_a_thinking_response_on_qwen3(qwen3_tokenizer, response):
    from rloo_studio.inspect.scoring import format_text

    tok = qwen3_tokenizer
    v = reward_view(tok, PROMPT, response)
    text, n_head = reward_text(tok, PROMPT, response)
    assert text == format_text(tok, PROMPT, response)  # the text the reward model trains on and scores
    assert v.text == text  # every character, chat template and special tokens written out
    assert v.ids == tok(text)["input_ids"]  # the tokenizer's own encoding of the templated text
    # exactly one <think>: the one the template opened, in the prompt; </think> once, in the response
    opens = [t for t in v.tokens if t.id == OPEN_ID]
    assert len(opens) == 1 and opens[0].part == "prompt" and opens[0].special and opens[0].text == "<think>"
    assert text.index("<think>") < n_head
    closes = [t for t in v.tokens if t.id == CLOSE_ID]
    assert len(closes) == 1 and closes[0].part == "response"
    assert v.tokens[-1].id == EOS and v.tokens[-1].part == "end" and v.tokens[-1].special
    assert v.tokens[0].id == IM_START and v.tokens[0].text == "<|im_start|>"
    assert not any(t.special for t in v.tokens if t.part == "response" and t.id != CLOSE_ID)
    # both forms of the response are read the same way: the view does not depend on the leading tag
    assert v.ids == reward_view(tok, PROMPT, QWEN3_STYLE).ids


def test_policy_view_is_prompt_ids_then_completion_ids(qwen3_tokenizer):
    tok = qwen3_tokenizer
    head = chat_prompt(tok, PROMPT)
    body = continuation(template_info(tok), REASONED)
    v = policy_view(tok, PROMPT, REASONED)
    assert v.ids == (tok(head, add_special_tokens=False)["input_ids"] + tok(body, add_special_tokens=False)["input_ids"]
                     + [EOS])
    assert v.ids.count(OPEN_ID) == 1 and v.ids.count(CLOSE_ID) == 1
    assert v.text == head + body + "<|im_end|>"
    assert v.count("prompt") == len(tok(head, add_special_tokens=False)["input_ids"]) and v.count("end") == 1
    cut = policy_view(tok, PROMPT, "7+5=12, carry", ended=False)  # cut at max_completion_length: no EOS
    assert cut.count("end") == 0 and cut.ids[-1] != EOS and "no EOS" in cut.note
    # here both tokenizations agree with the tokenizer's encoding of the whole text
    assert v.ids == tok(v.text, add_special_tokens=False)["input_ids"]


def test_reward_view_matches_what_the_rloo_reward_model_reward_scores(qwen3_tokenizer):
    from rloo_studio.rloo.rewards import make_reward_model_reward

    tok = qwen3_tokenizer
    by_text = make_reward_model_reward(None, tok, tok, use_ids=False)
    assert reward_view(tok, PROMPT, QWEN3_STYLE).ids == by_text.inputs([PROMPT], [QWEN3_STYLE], None)[0]
    by_ids = make_reward_model_reward(None, tok, tok, use_ids=True)
    completion_ids = tok(QWEN3_STYLE, add_special_tokens=False)["input_ids"] + [EOS]
    assert reward_view(tok, PROMPT, QWEN3_STYLE, whole=False).ids == by_ids.inputs([PROMPT], None, [completion_ids])[0]


def test_enable_thinking_false_shows_the_template_s_empty_think_block(qwen3_hybrid_tokenizer):
    tok = qwen3_hybrid_tokenizer
    v = reward_view(tok, PROMPT, "The answer is 42.", enable_thinking=False)
    in_prompt = [t.id for t in v.tokens if t.part == "prompt"]
    assert in_prompt.count(OPEN_ID) == 1 and in_prompt.count(CLOSE_ID) == 1  # <think>\n\n</think>\n\n
    assert v.ids.count(OPEN_ID) == 1 and "<think>\n\n</think>\n\nThe answer is 42.<|im_end|>" in v.text


def test_pieces_rebuild_the_text_with_multibyte_characters(qwen3_tokenizer):
    tok = qwen3_tokenizer
    text = "Prüfung: 日本語 🦜 𓀀 ok\n\n  indented"
    ids = tok(text)["input_ids"]
    ps = pieces(tok, ids)
    assert "".join(ps) == text and len(ps) == len(ids)
    assert "" in ps  # a character whose bytes span tokens goes to the token that completes it


def test_demo_tokenizer_view():
    from rloo_studio.core.paths import DEMO_MODEL
    from rloo_studio.inspect.model_input import tokenizer

    tok = tokenizer(str(DEMO_MODEL))
    response = "<think>\n4+0+0=4\n</think>\n\nThe answer is 4."
    v = reward_view(tok, "Add 2 and 2.", response, model="demo")
    text, _ = reward_text(tok, "Add 2 and 2.", response)
    assert v.text == text and v.ids == tok(text)["input_ids"]
    think = tok.convert_tokens_to_ids("<think>")
    assert v.ids.count(think) == 1 and [t.special for t in v.tokens if t.id == think] == [True]


def test_view_html_has_a_hover_title_per_token(qwen3_tokenizer):
    from rloo_studio.ui.render import model_view_html

    v = reward_view(qwen3_tokenizer, PROMPT, QWEN3_STYLE, model="qwen3")
    out = model_view_html(v)
    assert out.count("<span class='mv-tok") == len(v.tokens)
    assert "title='token 0 · id 151644 · &#x27;&lt;|im_start|&gt;&#x27; · prompt'" in out
    assert "data-id='151667'" in out and out.count("mv-special") >= 5


def test_completion_picker_names_the_table_rows():
    from rloo_studio.rloo.completions import completion_groups, completion_picks, pick_label, picked_sample

    samples = [{"step": s, "prompt": f"p{g}", "completion": f"c{s}{g}{i}", "rewards": {"correctness": 1.0},
                "total": 1.0, "advantage": (i * 7 % 4) - 1.5} for s in (1, 2) for g in range(3) for i in range(4)]
    _, rows = completion_groups(samples, limit=20)  # the window cuts step 1 in the middle of a group
    by_label = dict(completion_picks(samples, limit=20))
    assert sorted(pick_label(r) for r in rows) == sorted(by_label) and len(by_label) == len(rows) == 20
    for row in rows:  # the table orders each group by advantage; '#' is the order of generation
        s = picked_sample(samples, by_label[pick_label(row)])
        assert (s["step"], s["prompt"], s["completion"]) == (row[1], row[2], row[5])
    assert picked_sample(samples, "9:0") is None


def test_a_view_far_past_any_model_length_draws_its_first_tokens_and_says_how_many_more():
    from rloo_studio.core.models import load_tokenizer
    from rloo_studio.core.paths import DEMO_MODEL
    from rloo_studio.ui.render import DRAWN_TOKENS, model_view_html

    v = reward_view(load_tokenizer(str(DEMO_MODEL)), "Add 1 and 1.", "1+1=2 " * 4000, model="demo")
    out = model_view_html(v)
    assert len(v.tokens) > DRAWN_TOKENS and out.count("<span class='mv-tok") == DRAWN_TOKENS
    assert f"{len(v.tokens)} tokens" in out and f"and {len(v.tokens) - DRAWN_TOKENS:,} more tokens, not drawn" in out
