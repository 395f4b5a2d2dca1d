import pytest

from rloo_studio.core.errors import ConfigError
from rloo_studio.core.models import load_tokenizer
from rloo_studio.core.paths import DEMO_MODEL
from rloo_studio.core.rule_rewards import (
    make_answer_present_reward,
    make_correctness_reward,
    make_think_format_reward,
    think_token_ids,
)
from rloo_studio.rloo.rewards import rule_reward


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
    correctness = make_correctness_reward()  # the demo's answer format: the last number
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


def test_the_job_gets_the_rule_rewards_by_name_and_a_setting_they_cannot_use_in_words(tok):
    assert [rule_reward(n, tok).__name__ for n in ("think_format", "answer_present", "correctness")] == [
        "think_format", "answer_present", "correctness"]  # TRL logs rewards/<name>/mean
    with pytest.raises(ConfigError, match="choose one of last_number"):
        rule_reward("correctness", tok, "roman")

    class NoThink:  # a vocabulary without </think>
        unk_token_id = 0

        def convert_tokens_to_ids(self, token):
            return 0

    with pytest.raises(ConfigError, match="no </think> token"):
        rule_reward("think_format", NoThink())


# -- reward model ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def reward_model(tok):
    """The demo model with a fresh (seeded) score head: a real sequence classifier, scores are arbitrary."""
    import torch

    from rloo_studio.core.models import load_seq_cls

    torch.manual_seed(0)
    model, rm_tok = load_seq_cls(str(DEMO_MODEL))
    model.eval()
    return model, rm_tok


@pytest.fixture(scope="module")
def sampled(tok):
    """Real completions of the demo model: ids as TRL hands them over (EOS kept), text decoded like TRL."""
    from rloo_studio.core.models import load_causal_lm
    from rloo_studio.core.sampling import sample

    model, ptok, _ = load_causal_lm(str(DEMO_MODEL), "transformers")
    prompts = ["What is 123 + 456?", "Add 820 and 634.", "Compute 529 + 417."]
    outs = sample(model, ptok, prompts, n=2, max_new_tokens=24, temperature=1.0, seed=0)  # some get cut
    return [[{"role": "user", "content": s.prompt}] for s in outs], outs


def test_token_id_path_equals_decode_path(tok, reward_model, sampled):
    from rloo_studio.rloo.rewards import ids_from_text, ids_from_tokens, make_reward_model_reward, shares_tokenizer

    model, rm_tok = reward_model
    prompts, outs = sampled
    assert shares_tokenizer(rm_tok, tok)
    comps = [[{"role": "assistant", "content": s.text}] for s in outs]
    cids = [s.ids for s in outs]
    assert any(not s.stopped for s in outs) and any(s.stopped for s in outs)
    # Same input ids either way (so the same scores), for cut and finished completions alike.
    for p, c, i in zip(prompts, comps, cids):
        assert ids_from_tokens(rm_tok, p, i) == ids_from_text(rm_tok, p, c)
    by_ids = make_reward_model_reward(model, rm_tok, tok, batch_size=4)
    by_text = make_reward_model_reward(model, rm_tok, tok, batch_size=4, use_ids=False)
    assert by_ids.uses_ids and not by_text.uses_ids
    assert by_ids.inputs(prompts, comps, cids) == by_text.inputs(prompts, comps, cids)  # incl. the prompt cache
    a = by_ids(prompts=prompts, completions=comps, completion_ids=cids)
    b = by_text(prompts=prompts, completions=comps, completion_ids=cids)
    assert len(a) == len(outs) and len(set(a)) > 1
    assert a == pytest.approx(b, abs=1e-5)


def test_token_id_path_keeps_the_bos_a_tokenizer_adds(tok, sampled):
    """A tokenizer that adds a BOS (Llama, Gemma, Mistral) gets it on the token-id path too, as TRL's
    RewardTrainer tokenized the training text: both paths give the same ids."""
    import copy

    from tokenizers import processors

    from rloo_studio.rloo.rewards import ids_from_text, ids_from_tokens

    bos = copy.deepcopy(tok)
    bos.backend_tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos.pad_token} $A", special_tokens=[(bos.pad_token, bos.pad_token_id)])  # the pad token as a BOS
    prompts, outs = sampled
    for p, s in zip(prompts, outs):
        by_text = ids_from_text(bos, p, [{"role": "assistant", "content": s.text}])
        assert by_text[0] == bos.pad_token_id and by_text.count(bos.pad_token_id) == 1
        assert ids_from_tokens(bos, p, s.ids) == by_text


def test_reward_model_batches_give_the_same_scores(tok, reward_model, sampled):
    from rloo_studio.rloo.rewards import make_reward_model_reward

    model, rm_tok = reward_model
    prompts, outs = sampled
    cids = [s.ids for s in outs]
    one = make_reward_model_reward(model, rm_tok, tok, batch_size=1)(prompts=prompts, completions=None,
                                                                     completion_ids=cids)
    many = make_reward_model_reward(model, rm_tok, tok, batch_size=16)(prompts=prompts, completions=None,
                                                                       completion_ids=cids)
    assert one == pytest.approx(many, abs=1e-4)


def test_shaped_normalizes_and_clips():
    from rloo_studio.rloo.rewards import shaped

    raw = lambda **kw: [1.0, 2.0, 3.0, 10.0]  # noqa: E731
    z = shaped(raw, normalize=True)()
    assert sum(z) == pytest.approx(0, abs=1e-6) and z[0] < z[1] < z[2] < z[3]
    assert shaped(raw, normalize=True, clip=[-1, 1])() == pytest.approx([max(-1, min(1, v)) for v in z])
    assert shaped(raw, clip=[0, 2.5])() == [1.0, 2.0, 2.5, 2.5]
    assert shaped(raw) is raw


# -- custom reward files -----------------------------------------------------------------------

def _write(ws_root, name, code):
    d = ws_root / "rewards"
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_text(code)


def test_custom_reward_file_loads_and_runs(tmp_path):
    from rloo_studio.rloo.rewards import load_custom_reward

    _write(tmp_path, "short.py", "def reward(completions, answer=None, **kwargs):\n"
                                 "    return [1.0 / (1 + len(c)) for c in completions]\n"
                                 "def other(completions, **kwargs):\n    return [7.0] * len(completions)\n")
    f = load_custom_reward(tmp_path, "short.py")
    assert f.__name__ == "short"
    assert f(prompts=["p", "p"], completions=["abc", ""], completion_ids=[[1], [2]], answer=["1", "2"]) == [0.25, 1.0]
    g = load_custom_reward(tmp_path, "short.py:other")
    assert g.__name__ == "short.other" and g(completions=["x"]) == [7.0]


@pytest.mark.parametrize("name,code,spec,message", [
    ("a.py", "def reward(**kwargs):\n    return []\n", "../a.py", "inside"),
    ("a.py", "def reward(**kwargs):\n    return []\n", "missing.py", "does not exist"),
    ("bad.py", "def reward(**kwargs)\n    return []\n", "bad.py", r"could not be loaded: SyntaxError.*line 1"),
    ("imp.py", "import no_such_module_here\n", "imp.py", "could not be loaded: ModuleNotFoundError"),
    ("nf.py", "def helper(**kwargs):\n    return []\n", "nf.py:score", "has no function 'score'; it defines: helper"),
    ("kw.py", "def reward(prompts, completions):\n    return []\n", "kw.py", r"must accept \*\*kwargs"),
])
def test_custom_reward_file_errors_are_plain(tmp_path, name, code, spec, message):
    from rloo_studio.core.errors import ConfigError
    from rloo_studio.rloo.rewards import load_custom_reward

    _write(tmp_path, name, code)
    with pytest.raises(ConfigError, match=message):
        load_custom_reward(tmp_path, spec)


def test_custom_reward_that_raises_names_itself_and_the_line(tmp_path):
    from rloo_studio.rloo.rewards import RewardError, load_custom_reward

    _write(tmp_path, "boom.py",
           "def reward(completions, **kwargs):\n    x = 0\n    return [1 / x for c in completions]\n")
    f = load_custom_reward(tmp_path, "boom.py")
    with pytest.raises(RewardError, match=r"reward function boom raised ZeroDivisionError: division by zero \(line 3"):
        f(prompts=["p"], completions=["c"], completion_ids=[[1]])
    _write(tmp_path, "few.py", "def reward(completions, **kwargs):\n    return [1.0]\n")
    with pytest.raises(RewardError, match="returned 1 values for 2 completions"):
        load_custom_reward(tmp_path, "few.py")(prompts=["p", "q"], completions=["a", "b"], completion_ids=[[1], [2]])


# -- answer formats and TRL's reward library ---------------------------------------------------

def test_answer_formats():
    from rloo_studio.core.answers import after_hashes, boxed, last_number, matches

    assert last_number("so 12 and then 1326.") == "1326" and last_number("no digits") is None
    assert boxed(r"first \boxed{1} then \boxed{\frac{1}{3}} done") == r"\frac{1}{3}"
    assert boxed(r"\boxed{unclosed") is None and boxed("none") is None
    assert after_hashes("work\n#### 1,234") == "1234" and after_hashes("no hashes") is None
    assert matches("42", " 42 ") and matches("4200", "4,200") and matches("3", "3.0") and not matches(None, "3")


def test_trl_rewards_in_the_mix():
    from rloo_studio.rloo.rewards import RewardError, trl_reward

    comps = [[{"role": "assistant", "content": r"r</think>The answer is \boxed{\frac{1}{3}}"}],
             [{"role": "assistant", "content": r"r</think>\boxed{2}"}],
             [{"role": "assistant", "content": r"still thinking \boxed{\frac{1}{3}}"}]]
    sol = [r"\frac{1}{3}"] * 3
    assert trl_reward("accuracy")(completions=comps, solution=sol, completion_ids=[[1]] * 3) == [1.0, 0.0, 1.0]
    # reasoning_accuracy reads only what follows </think>: the cut one earns nothing
    assert trl_reward("reasoning_accuracy")(completions=comps, solution=sol,
                                            completion_ids=[[1]] * 3) == [1.0, 0.0, 0.0]
    assert trl_reward("soft_overlong", max_completion_length=8)(
        completions=comps, completion_ids=[[1] * 5, [1] * 7, [1] * 9]) == [0.0, -0.5, -1.0]
    assert trl_reward("repetition_penalty")(completions=comps, completion_ids=[[1, 2, 3, 4], [5] * 6, [1]]) == [
        0.0, -0.75, 0.0]
    assert trl_reward("soft_overlong").__name__ == "soft_overlong"
    with pytest.raises(RewardError, match="accuracy"):
        trl_reward("accuracy")(completions=comps, completion_ids=[[1]] * 3)  # no solution column


def test_rloo_config_checks_the_new_rewards(workspace):
    from rloo_studio.core.config import build
    from rloo_studio.core.errors import ConfigError
    from rloo_studio.rloo.config import RlooJobConfig
    from rloo_studio.rloo.job import preflight
    from rloo_studio.rloo.launch_form import form_fields

    cfg = build(RlooJobConfig, None, ["enable_thinking=false", "answer_format=boxed",
                                      "rewards=reasoning_accuracy", "reward_weights=1.0"])
    assert cfg.enable_thinking is False and cfg.answer_format == "boxed"
    with pytest.raises(ConfigError, match="no solution column"):
        preflight(cfg, workspace)  # demo-train has an answer column, not a solution
    with pytest.raises(ConfigError, match="answer_format must be one of last_number, boxed, hash"):
        build(RlooJobConfig, None, ["answer_format=latex"]).validate()
    # the tab's form has widgets for both (ui/fields.py); answer_format offers the formats as a list
    by_key = {f.key: f for f in form_fields()}
    assert (by_key["enable_thinking"].kind == "bool"
            and by_key["answer_format"].choices == ("last_number", "boxed", "hash"))
