import json

from rloo_studio.core.models import load_tokenizer
from rloo_studio.core.paths import ASSETS, DEMO_DATA, DEMO_MODEL
from rloo_studio.rloo.evaluate import evaluate_policy, heldout_prompts


def test_assets_are_small():
    size = sum(p.stat().st_size for p in ASSETS.rglob("*") if p.is_file())
    assert size < 20 * 2**20


def test_tokenizer_has_chat_and_think_tokens():
    tok = load_tokenizer(str(DEMO_MODEL))
    vocab = tok.get_vocab()
    for t in ("<think>", "</think>", "<|im_start|>", "<|im_end|>"):
        assert t in vocab
    assert tok.eos_token == "<|im_end|>"
    text = tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True)
    assert text == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    # Think tags survive decoding without special tokens (TRL decodes completions that way).
    ids = tok("<think>\n1+2+0=3\n</think>\n\nok<|im_end|>", add_special_tokens=False)["input_ids"]
    assert tok.decode(ids, skip_special_tokens=True) == "<think>\n1+2+0=3\n</think>\n\nok"


def test_demo_data_files():
    for name in ("prompts_train.jsonl", "prompts_heldout.jsonl"):
        rows = [json.loads(x) for x in (DEMO_DATA / name).read_text().splitlines()]
        assert len(rows) == 500 and all(set(r) == {"prompt", "answer"} for r in rows)
    train = {json.loads(x)["prompt"] for x in (DEMO_DATA / "prompts_train.jsonl").read_text().splitlines()}
    assert not train & {r["prompt"] for r in heldout_prompts()}
    pairs = [json.loads(x) for x in (DEMO_DATA / "pairs.jsonl").read_text().splitlines()]
    assert len(pairs) >= 200


def test_demo_model_formats_well_and_leaves_room_to_learn():
    """It reasons on about half of its answers, mostly right when it does and wrong when it does not: the room a
    reward model that learned "reason first" can fill (docs/DEMO_MODEL.md). Measured at this seed: 46.0% right,
    50.0% reason, right 92.0% of the time when it reasons, 0% when it does not."""
    m = evaluate_policy(n=200, seed=5)
    assert m["format_rate"] >= 0.9
    assert 0.25 <= m["accuracy"] <= 0.75
    assert 0.35 <= m["thinking_rate"] <= 0.7  # about half skip their thinking
    assert m["accuracy_reasoning"] >= 0.8 and m["accuracy_not_reasoning"] <= 0.1
