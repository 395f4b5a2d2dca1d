"""The reward model's input, built in one place (no torch, no gradio).

TRL's RewardTrainer gets explicit-prompt rows (reward.job.pair_rows: the chat prompt, and each response as
it follows it, without a <think> the prompt already opened), appends EOS to each side unless it is there,
and tokenizes prompt + response as one text with the tokenizer's own defaults (`tok(text=...)`, so a
tokenizer that adds a BOS adds it here too). The head reads the last token, so training, scoring
(reward.scoring), the pre-flight token counts (reward.job), the held-out breakdown (reward.breakdown) and
RLOO's reward-model reward (rloo.rewards) all build that same text here.

    reward_text(tok, prompt_text, response_text)   a row's side: prompt_text + response_text + EOS
    reward_ids(tok, prompt_text, response_text)    that text tokenized as TRL tokenizes it
    format_text(tok, prompt, response)             from a raw prompt and response: chat template applied
    format_ids(tok, prompt, response)              ... and tokenized
    format_ids_many(tok, prompts, responses)       format_ids of many, in one tokenizer call
    prompt_ids(tok, prompt_text)                   the ids a tokenized text starts with for this prompt
                                                   (what the token-id path puts before a completion's ids)
"""
from __future__ import annotations

from rloo_studio.core.thinking import chat_prompt, continuation, template_info


def reward_text(tok, prompt_text: str, response_text: str) -> str:
    """One side of an explicit-prompt row as TRL's RewardTrainer joins it: prompt + response + EOS (EOS
    only when the text does not already end with it)."""
    text = prompt_text + response_text
    return text if text.endswith(tok.eos_token) else text + tok.eos_token


def reward_ids(tok, prompt_text: str, response_text: str) -> list[int]:
    """reward_text tokenized as TRL's RewardTrainer tokenizes it (the tokenizer's default special tokens)."""
    return list(tok(text=reward_text(tok, prompt_text, response_text))["input_ids"])


def format_text(tok, prompt, response: str, enable_thinking: bool = True) -> str:
    """Exactly what the reward model was trained on for a raw prompt and response: chat prompt + the
    response without a <think> the prompt already opened + EOS."""
    return reward_text(tok, chat_prompt(tok, prompt, enable_thinking),
                       continuation(template_info(tok, enable_thinking), response))


def format_ids(tok, prompt, response: str, enable_thinking: bool = True) -> list[int]:
    """format_text tokenized as TRL's RewardTrainer tokenizes it."""
    return list(tok(text=format_text(tok, prompt, response, enable_thinking))["input_ids"])


def format_ids_many(tok, prompts: list, responses: list[str], enable_thinking: bool = True) -> list[list[int]]:
    """format_ids of each (prompt, response): each distinct prompt rendered once (a pair's two responses share
    it), the texts tokenized in one call (the tokenizer's batch path)."""
    if not responses:
        return []
    tpl, chats = template_info(tok, enable_thinking), {}
    texts = []
    for prompt, response in zip(prompts, responses):
        key = repr(prompt)  # a str and a list of messages never share a key
        if key not in chats:
            chats[key] = chat_prompt(tok, prompt, enable_thinking)
        texts.append(reward_text(tok, chats[key], continuation(tpl, response)))
    return [list(x) for x in tok(text=texts)["input_ids"]]


def prompt_ids(tok, prompt_text: str) -> list[int]:
    """The ids that a text tokenized as TRL does (reward_ids) begins with for `prompt_text`: the prompt's ids
    with the special tokens the tokenizer puts in front (a BOS), without any it appends at the end."""
    bare = list(tok(prompt_text, add_special_tokens=False)["input_ids"])
    full = list(tok(text=prompt_text)["input_ids"])
    for k in range(len(full) - len(bare) + 1):
        if full[k:k + len(bare)] == bare:
            return full[:k + len(bare)]
    return bare  # a post-processor that rewrites the text's own ids: nothing to put in front
