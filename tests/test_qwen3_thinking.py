"""Template-aware thinking on the real Qwen3 tokenizer (tests/qwen3_fixture.py): Qwen3-Thinking's
generation prompt opens <think>, the hybrid template's enable_thinking=False closes an empty block.
Every path reads a response from where the prompt leaves it: no doubled <think>, a cut response is all
reasoning and truncated, the answer alone is rendered as the template renders an answer."""
import pytest

from rloo_studio.core.thinking import (
    answer_alone,
    body_start,
    chat_prompt,
    continuation,
    full_response,
    parse,
    split_ids,
    template_info,
)

OPEN_ID, CLOSE_ID = 151667, 151668
PROMPT = "What is 17 + 25?"
REASONED = "<think>\n7+5=12, carry 1\n\n1+2+1=4\n</think>\n\nThe answer is 42."
QWEN3_STYLE = "7+5=12, carry 1\n\n1+2+1=4\n</think>\n\nThe answer is 42."  # as Qwen3-Thinking writes it
CUT = "7+5=12, carry 1\n\n1+2+1="  # cut at max length before </think>


def test_templates_are_read_once_from_the_rendered_prompt(qwen3_tokenizer, qwen3_hybrid_tokenizer):
    t = template_info(qwen3_tokenizer)
    assert t.opens and t.open_text == "<think>\n" and t.answer_prefix == "\n</think>\n\n"
    assert template_info(qwen3_tokenizer) is t  # cached per template
    h = template_info(qwen3_hybrid_tokenizer)
    assert h.start == "answer" and h.answer_prefix == "<think>\n\n</think>\n\n"
    off = template_info(qwen3_hybrid_tokenizer, enable_thinking=False)
    assert off.start == "closed" and off.answer_prefix == ""
    # enable_thinking=False: the template's empty think block ends the generation prompt
    assert chat_prompt(qwen3_hybrid_tokenizer, PROMPT, enable_thinking=False).endswith(
        "<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert chat_prompt(qwen3_hybrid_tokenizer, PROMPT).endswith("<|im_start|>assistant\n")


def test_response_continues_the_prompt_without_a_second_think(qwen3_tokenizer):
    t = template_info(qwen3_tokenizer)
    assert continuation(t, REASONED) == QWEN3_STYLE == continuation(t, QWEN3_STYLE)
    assert full_response(t, QWEN3_STYLE) == REASONED and continuation(t, full_response(t, CUT)) == CUT
    for response in (REASONED, QWEN3_STYLE):
        ids = qwen3_tokenizer(chat_prompt(qwen3_tokenizer, PROMPT) + continuation(t, response))["input_ids"]
        assert ids.count(OPEN_ID) == 1 and ids.count(CLOSE_ID) == 1
    assert body_start(t, REASONED) == len("<think>\n")


def test_parse_from_inside_the_reasoning():
    cut = parse(CUT, start="think")
    assert cut.truncated and not cut.closed and cut.answer == ""
    assert [s.text for s in cut.steps] == ["7+5=12, carry 1", "1+2+1="]
    assert parse(CUT).answer == CUT  # without the template's knowledge it would be all answer
    ok = parse(QWEN3_STYLE, start="think")
    assert ok.closed and ok.answer == "The answer is 42." and len(ok.steps) == 2
    assert parse("The answer is 4.", start="closed").closed  # enable_thinking=False: the prompt closed it
    assert split_ids([5, 6], OPEN_ID, CLOSE_ID, "think").thinking == [5, 6]
    assert split_ids([5, 6], OPEN_ID, CLOSE_ID, "closed").closed


def test_reward_model_trains_on_one_think_and_the_responses_own_reasoning(qwen3_tokenizer):
    from rloo_studio.reward.job import pair_rows

    pairs = [{"prompt": PROMPT, "chosen": REASONED, "rejected": "<think>\nguess\n</think>\n\n41", "pair_id": 1},
             {"prompt": PROMPT, "chosen": QWEN3_STYLE, "rejected": "guess</think>41", "pair_id": 2}]
    for row in pair_rows(qwen3_tokenizer, pairs):
        for side in ("chosen", "rejected"):
            ids = qwen3_tokenizer(row["prompt"] + row[side] + qwen3_tokenizer.eos_token)["input_ids"]
            assert ids.count(OPEN_ID) == 1, (side, qwen3_tokenizer.decode(ids))
        # Qwen3's template drops the reasoning of earlier assistant turns; the trained text keeps this one's
        text = qwen3_tokenizer.decode(qwen3_tokenizer(row["prompt"] + row["chosen"])["input_ids"])
        assert "7+5=12, carry 1\n\n1+2+1=4\n</think>" in text


def test_scores_read_the_same_steps_with_and_without_the_opening_tag(qwen3_model):
    from rloo_studio.inspect.scoring import format_text, load_scorer, score_responses, score_texts

    scorer = load_scorer(reward_model=str(qwen3_model))
    with_tag, without, cut = score_responses(scorer, [(PROMPT, REASONED), (PROMPT, QWEN3_STYLE), (PROMPT, CUT)])
    assert [s.text for s in with_tag.steps] == [s.text for s in without.steps] == ["7+5=12, carry 1", "1+2+1=4"]
    assert [s.score for s in with_tag.steps] == pytest.approx([s.score for s in without.steps], abs=1e-5)
    assert with_tag.total == pytest.approx(without.total, abs=1e-5)
    assert all(REASONED[s.start:s.end] == s.text for s in with_tag.steps)  # offsets into the response as given
    assert cut.truncated and not cut.closed and [s.text for s in cut.steps] == ["7+5=12, carry 1", "1+2+1="]
    assert cut.thinking is not None
    # the answer alone: the template's rendering of an answer without reasoning (<think>\n\n</think>\n\n...)
    t = template_info(scorer.tok)
    assert format_text(scorer.tok, PROMPT, answer_alone(t, "The answer is 42.")).count("<think>") == 1
    alone = score_texts(scorer, [PROMPT], ["<think>\n\n</think>\n\nThe answer is 42."])[0]
    assert with_tag.answer == pytest.approx(alone, abs=1e-5)


def test_rloo_reward_model_inputs_have_one_think(qwen3_model):
    from transformers import AutoTokenizer

    from rloo_studio.rloo.rewards import ids_from_text, ids_from_tokens, make_reward_model_reward

    tok = AutoTokenizer.from_pretrained(qwen3_model)
    completion = QWEN3_STYLE
    ids = tok(completion, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    doubled = tok("<think>\n" + completion, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    prompt = [{"role": "user", "content": PROMPT}]
    a, b = ids_from_tokens(tok, prompt, ids), ids_from_tokens(tok, prompt, doubled)
    assert a == b == ids_from_text(tok, prompt, completion) == ids_from_text(tok, prompt, "<think>\n" + completion)
    assert a.count(OPEN_ID) == 1 and a[-1] == tok.eos_token_id
    fn = make_reward_model_reward(None, tok, tok)
    assert fn.inputs([prompt, prompt], [completion, completion], [ids, doubled]) == [a, a]


def test_rule_rewards_read_completions_from_the_template(qwen3_tokenizer, qwen3_hybrid_tokenizer):
    from rloo_studio.core.rule_rewards import (
        make_answer_present_reward,
        make_correctness_reward,
        make_think_format_reward,
    )

    tok = qwen3_tokenizer
    closed = tok(QWEN3_STYLE, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    cut = tok(CUT, add_special_tokens=False)["input_ids"]
    assert make_think_format_reward(tok)(completion_ids=[closed, cut]) == [pytest.approx(0.7), -1.0]
    assert make_answer_present_reward(tok)(completion_ids=[closed, cut]) == [1.0, 0.0]
    right = make_correctness_reward(tok)
    assert right(completions=[QWEN3_STYLE, CUT + " 42"], answer=["42", "42"]) == [1.0, 0.0]
    # a hybrid template with reasoning off: the completion is all answer, after the prompt's closed block
    plain = make_correctness_reward(qwen3_hybrid_tokenizer, enable_thinking=False)
    assert plain(completions=["The answer is 42."], answer=["42"]) == [1.0]
    boxed = make_correctness_reward(tok, "boxed")
    assert boxed(completions=["x</think>so \\boxed{42} (not 7)", "x</think>42"], answer=["42", "42"]) == [1.0, 0.0]
    hashes = make_correctness_reward(tok, "hash")
    assert hashes(completions=["x</think>17+25=42\n#### 42", "x</think>#### 4,200"], answer=["42", "4200"]) == [1, 1]


def test_sampled_candidates_write_the_templates_think_out(qwen3_model):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rloo_studio.core.sampling import sample

    tok = AutoTokenizer.from_pretrained(qwen3_model)
    model = AutoModelForCausalLM.from_pretrained(qwen3_model)
    outs = sample(model, tok, [PROMPT], n=6, max_new_tokens=8, seed=0)
    assert all(o.response == "<think>\n" + o.text for o in outs)
    cut = [o for o in outs if "</think>" not in o.text]
    closed = [o for o in outs if "</think>" in o.text]
    assert closed, "the biased model closes its reasoning"
    for o in cut:
        assert parse(o.response).truncated and parse(o.text, start="think").truncated


# -- enable_thinking=False on the hybrid template: the template's empty think block, alike everywhere

EMPTY_BLOCK = "<think>\n\n</think>\n\n"


def test_enable_thinking_false_generates_after_the_empty_think_block(workspace, qwen3_hybrid_model):
    from rloo_studio.label.generate import GenerateConfig, generate_candidates
    from rloo_studio.runs.runner import JobRunner

    r = JobRunner(workspace)
    rid = r.submit("generate", GenerateConfig(model=str(qwen3_hybrid_model), prompts=[PROMPT], k=3, max_new_tokens=4,
                                              enable_thinking=False), generate_candidates)
    assert r.wait(rid, 300) == "completed", r.status(rid)
    texts = [t for (t,) in workspace.query("SELECT text FROM responses WHERE source=?",
                                           (f"model:{qwen3_hybrid_model}",))]
    assert len(texts) == 3 and all(t.startswith(EMPTY_BLOCK) for t in texts)
    assert all(parse(t).closed and not parse(t).has_thinking for t in texts)


def test_enable_thinking_false_in_reward_training_and_scoring(qwen3_hybrid_tokenizer, qwen3_hybrid_model):
    from rloo_studio.inspect.scoring import load_scorer, score_responses
    from rloo_studio.reward.job import pair_rows

    tok = qwen3_hybrid_tokenizer
    pairs = [{"prompt": PROMPT, "chosen": EMPTY_BLOCK + "The answer is 42.", "rejected": "The answer is 41."}]
    row = pair_rows(tok, pairs, enable_thinking=False)[0]
    assert row["prompt"].endswith("<|im_start|>assistant\n" + EMPTY_BLOCK)
    assert row["chosen"] == "The answer is 42." and row["rejected"] == "The answer is 41."
    for side in ("chosen", "rejected"):
        assert tok(row["prompt"] + row[side])["input_ids"].count(OPEN_ID) == 1
    # thinking on: the prompt stops at the assistant's turn, the response carries its block
    on = pair_rows(tok, pairs)[0]
    assert on["prompt"].endswith("<|im_start|>assistant\n") and on["chosen"].startswith(EMPTY_BLOCK)

    scorer = load_scorer(reward_model=str(qwen3_hybrid_model), enable_thinking=False)
    plain, with_block = score_responses(scorer, [(PROMPT, "The answer is 42."),
                                                 (PROMPT, EMPTY_BLOCK + "The answer is 42.")])
    assert plain.closed and not plain.truncated and plain.steps == []
    assert plain.answer == pytest.approx(plain.total, abs=1e-5)  # the answer alone is the whole response here
    assert with_block.total == pytest.approx(plain.total, abs=1e-5)
