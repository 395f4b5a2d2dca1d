"""The RLOO part of a run's reproduce.py (copied beside it as reproduce_job.py; imports no rloo_studio): trains
the same LoRA policy with TRL's RLOOTrainer on the run's prompt set (prompts.jsonl). It repeats the rule rewards
only (think_format, answer_present, correctness): RLOO Studio's rule_rewards.py, copied beside it with the
thinking.py and answers.py it stands on (standard library only)."""
import sys


def rule_rewards(names, tok, answer_format, enable_thinking):
    """The run's rule rewards, named as TRL logs them: RLOO Studio's own code (rule_rewards.py, beside this file)."""
    from rule_rewards import rule_reward

    try:
        return [rule_reward(n, tok, answer_format, enable_thinking) for n in names]
    except ValueError as exc:
        sys.exit(str(exc))


def load_policy(c, dtype):
    path, max_seq = c["model"], 1024 + c["max_completion_length"]
    trust = bool(c.get("trust_remote_code"))  # as ticked in the run's form
    lo = c["lora"]
    if c["backend"] != "transformers":
        try:
            from unsloth import FastLanguageModel
        except Exception:
            FastLanguageModel = None
        if FastLanguageModel is not None:
            model, tok = FastLanguageModel.from_pretrained(path, max_seq_length=max_seq, dtype=dtype,
                                                           load_in_4bit=c["load_in_4bit"], trust_remote_code=trust)
            model = FastLanguageModel.get_peft_model(model, r=lo["r"], lora_alpha=lo["alpha"],
                                                     lora_dropout=lo["dropout"], target_modules=lo["target_modules"],
                                                     random_state=c["seed"],
                                                     use_gradient_checkpointing="unsloth"
                                                     if c.get("gradient_checkpointing") else False)
            return model, tok
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path, trust_remote_code=trust)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, trust_remote_code=trust)
    return get_peft_model(model, LoraConfig(r=lo["r"], lora_alpha=lo["alpha"], lora_dropout=lo["dropout"],
                                            target_modules=lo["target_modules"], task_type="CAUSAL_LM")), tok


def train(c, trainer_args, kit):
    """`c`: the run's config; `trainer_args`: what the run gave RLOOConfig; `kit`: reproduce.py's helpers."""
    from datasets import Dataset
    from rule_rewards import RULES
    from trl import RLOOConfig, RLOOTrainer

    unsupported = [r for r in c["rewards"] if r not in RULES]
    if unsupported:
        sys.exit(f"this script repeats the rule rewards ({', '.join(RULES)}) only; the run also used "
                 f"{', '.join(unsupported)}")
    rows = kit.read_jsonl(kit.HERE / "prompts.jsonl")  # the run's prompt set, as it was
    device, dtype = kit.device_args()
    model, tok = load_policy(c, dtype)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    funcs = rule_rewards(c["rewards"], tok, c.get("answer_format", "last_number"), c.get("enable_thinking", True))
    data = Dataset.from_list([{**r, "prompt": [{"role": "user", "content": r["prompt"]}]} for r in rows])
    args = RLOOConfig(**trainer_args, **device)
    trainer = RLOOTrainer(model=model, reward_funcs=funcs, args=args, train_dataset=data, processing_class=tok,
                          callbacks=[kit.metrics_callback()])
    trainer.train()
    trainer.save_model(str(kit.OUT / "adapter"))
