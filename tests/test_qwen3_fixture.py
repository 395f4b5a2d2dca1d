"""The offline Qwen3 tokenizer and tiny models match the real Qwen3 where it matters to the studio."""


def test_tokenizer_matches_qwen3(qwen3_tokenizer):
    tok = qwen3_tokenizer
    assert tok("Hello world")["input_ids"] == [9707, 1879]
    assert tok("</think>")["input_ids"] == [151668]
    assert tok("<think>")["input_ids"] == [151667]
    assert tok.eos_token_id == 151645 and tok.pad_token_id == 151643
    assert tok.convert_tokens_to_ids("<|im_start|>") == 151644
    for text in ["Grüße, 世界! café naïve 🙂\n\n  tabs\t", "<think>\n7+8=15\n</think>\n\nThe answer is 15.",
                 "e\u0301 (NFC-composed: é)", "x = [1, 2, 3]  # ünïcödé\r\n"]:
        ids = tok(text)["input_ids"]
        assert tok.decode(ids) == __import__("unicodedata").normalize("NFC", text)
    # <think> is not a special token in Qwen3: decoding with skip_special_tokens keeps the tags
    assert tok.decode([151667, 9707, 151668, 151645], skip_special_tokens=True) == "<think>Hello</think>"


def test_templates(qwen3_tokenizer, qwen3_hybrid_tokenizer):
    msgs = [{"role": "user", "content": "What is 2+2?"}]
    gen = qwen3_tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    assert gen == "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n<think>\n"
    hyb = qwen3_hybrid_tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    assert hyb.endswith("<|im_start|>assistant\n")
    off = qwen3_hybrid_tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True,
                                                     enable_thinking=False)
    assert off.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")


def test_tiny_models(qwen3_model, qwen3_random_model):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(qwen3_model)
    assert tok("Hello world")["input_ids"] == [9707, 1879]
    prompt = tok.apply_chat_template([{"role": "user", "content": "Hi"}], tokenize=False, add_generation_prompt=True)
    enc = tok(prompt, return_tensors="pt")
    closed = {}
    for name, folder in (("emit", qwen3_model), ("random", qwen3_random_model)):
        model = AutoModelForCausalLM.from_pretrained(folder)
        assert model.config.tie_word_embeddings and model.config.hidden_size == 64
        assert sum(p.numel() for p in model.parameters()) < 11_000_000
        torch.manual_seed(0)
        out = model.generate(**enc, do_sample=True, max_new_tokens=16, num_return_sequences=16,
                             pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)
        rows = out[:, enc["input_ids"].shape[1]:].tolist()
        closed[name] = sum(151668 in r for r in rows)
    assert closed["emit"] >= 8 and closed["random"] == 0
