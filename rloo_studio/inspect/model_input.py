"""What the model sees: the exact text a model reads (chat template applied, special tokens written
out) split into its tokens, each with its id and the characters it adds.

    policy_view(tok, prompt, response)   the generation prompt's ids, then the completion's ids (and the
                                         EOS it ended with), as RLOO trains on them
    reward_view(tok, prompt, response)   prompt + response + EOS as one text, encoded as the reward model
                                         scores it (core.reward_input.format_text)

Both drop a leading <think> that the template already opened in the prompt (thinking.continuation),
so a view of a thinking response shows the tag once. No gradio, no torch.
"""
from __future__ import annotations

from dataclasses import dataclass

from rloo_studio.core.reward_input import format_text
from rloo_studio.core.thinking import chat_prompt, continuation, template_info

PARTS = ("prompt", "response", "end")


@dataclass(frozen=True)
class Token:
    id: int
    text: str  # the characters this token adds ("" for a byte that only completes with the next token)
    special: bool  # an added token of the tokenizer (<|im_start|>, <think>, EOS, ...), drawn apart
    part: str  # PARTS: the chat prompt, the response, or the EOS that ends it


@dataclass(frozen=True)
class View:
    who: str  # "policy" or "reward model"
    model: str  # which tokenizer (a path or a hub id), for the caption
    tokens: tuple[Token, ...]
    note: str = ""  # how the ids were obtained, in plain words

    @property
    def ids(self) -> list[int]:
        return [t.id for t in self.tokens]

    @property
    def text(self) -> str:
        return "".join(t.text for t in self.tokens)

    def count(self, part: str) -> int:
        return sum(t.part == part for t in self.tokens)


def added_ids(tok) -> set[int]:
    """Ids the tokenizer adds on top of its learned vocabulary (chat and think tags, EOS, pad ...)."""
    ids = set(getattr(tok, "all_special_ids", []) or [])
    ids.update(int(i) for i in (getattr(tok, "added_tokens_decoder", None) or {}))
    return ids


def pieces(tok, ids: list[int]) -> list[str]:
    """What each token adds to the decoded text, found as streaming detokenizers do (vLLM's
    detokenize_incrementally): decode the window since the last emitted piece with and without the
    token. Leading-space markers come out right, and a character whose bytes span several tokens goes
    to the token that completes it (the others add ""). "".join(pieces) == tok.decode(ids)."""
    out, prefix, read = [], 0, 0
    for i in range(len(ids)):
        before = tok.decode(ids[prefix:read], skip_special_tokens=False) if read > prefix else ""
        now = tok.decode(ids[prefix:i + 1], skip_special_tokens=False)
        if len(now) > len(before) and (not now.endswith("\ufffd") or i == len(ids) - 1):
            out.append(now[len(before):])
            prefix, read = read, i + 1
        else:  # no whole character yet: it comes with the next token
            out.append("")
    return out


def _tokens(tok, ids: list[int], parts: list[str]) -> tuple[Token, ...]:
    special = added_ids(tok)
    return tuple(Token(int(i), p, int(i) in special, part) for i, p, part in zip(ids, pieces(tok, ids), parts))


def _encode(tok, text: str, **kw) -> list[int]:
    return list(tok(text, **kw)["input_ids"]) if text else []


def policy_view(tok, prompt, response: str, enable_thinking: bool = True, ended: bool = True,
                model: str = "") -> View:
    """The policy's input: the generation prompt's ids (as TRL's apply_chat_template gives them), then the
    completion's (re-tokenized from its text; the ids sampled in training were not stored), and the EOS
    it stopped with unless it was cut at max_completion_length (`ended=False`)."""
    head = chat_prompt(tok, prompt, enable_thinking)
    body = continuation(template_info(tok, enable_thinking), response)
    p_ids = _encode(tok, head, add_special_tokens=False)
    b_ids = _encode(tok, body, add_special_tokens=False)
    e_ids = [tok.eos_token_id] if ended and tok.eos_token_id is not None else []
    parts = ["prompt"] * len(p_ids) + ["response"] * len(b_ids) + ["end"] * len(e_ids)
    note = ("prompt ids as the chat template gives them; the completion re-tokenized from its stored text"
            + ("; it ended with EOS" if e_ids else "; cut at max_completion_length, no EOS"))
    return View("policy", model, _tokens(tok, p_ids + b_ids + e_ids, parts), note)


def reward_text(tok, prompt, response: str, enable_thinking: bool = True) -> tuple[str, int]:
    """(text, prompt characters): the text a reward model trains on and scores (core.reward_input)."""
    return format_text(tok, prompt, response, enable_thinking), len(chat_prompt(tok, prompt, enable_thinking))


def reward_view(tok, prompt, response: str, enable_thinking: bool = True, model: str = "",
                whole: bool = True) -> View:
    """The reward model's input. whole=True: the text encoded at once, as Inspect and RM training encode
    it; whole=False: chat prompt ids + the response's ids + EOS, as RLOO's reward-model reward builds its
    input when the reward model shares the policy's tokenizer (rloo.rewards.make_reward_model_reward)."""
    if not whole:
        v = policy_view(tok, prompt, response, enable_thinking, ended=True, model=model)
        return View("reward model", model, v.tokens, "the policy's prompt and completion ids with EOS (the reward "
                                                      "model shares the policy's tokenizer)")
    text, n_head = reward_text(tok, prompt, response, enable_thinking)
    ids = _encode(tok, text)
    ps = pieces(tok, ids)
    parts, pos = [], 0
    for k, p in enumerate(ps):
        parts.append("end" if k == len(ps) - 1 and ids[k] == tok.eos_token_id else
                     "prompt" if pos < n_head else "response")
        pos += len(p)
    special = added_ids(tok)
    toks = tuple(Token(int(i), p, int(i) in special, part) for i, p, part in zip(ids, ps, parts))
    return View("reward model", model, toks, "prompt and response encoded as one text, as the reward model "
                                             "is trained on it and scores it")


_TOKENIZERS: dict[tuple, object] = {}


def tokenizer(model: str, trust_remote_code: bool = False):
    """A model's tokenizer (a folder or a cached hub id), loaded once; never the weights, never a download."""
    from rloo_studio.core.models import load_tokenizer, resolve

    path = resolve(model)
    key = (path, bool(trust_remote_code))
    if key not in _TOKENIZERS:
        if len(_TOKENIZERS) > 4:
            _TOKENIZERS.clear()
        _TOKENIZERS[key] = load_tokenizer(path, trust_remote_code)
    return _TOKENIZERS[key]
