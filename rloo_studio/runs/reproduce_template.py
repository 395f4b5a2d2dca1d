#!/usr/bin/env python
"""Repeat an RLOO Studio run with Unsloth / TRL / PEFT directly.

    python reproduce.py            (from any folder; writes repro-out/ beside this file)

RLOO Studio copies this file into each reward and RLOO run folder as reproduce.py, beside
reproduce.json: the run's config and the exact keyword arguments the run gave RLOOConfig /
RewardConfig. It reads the data the run used from the same folder (the reward run's pairs.jsonl,
the RLOO run's prompts.jsonl), builds the same model and LoRA with the same seed, trains, and
writes metrics.jsonl to repro-out/. RLOO runs repeat the rule rewards only (think_format,
answer_present, correctness); those stand on thinking.py and answers.py, copied beside this file.
It imports no RLOO Studio code.
"""
import importlib
import json
import os
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "repro-out"
RULE_REWARDS = ("correctness", "think_format", "answer_present")
SELF_QUESTION = re.compile(r"\?|\b(wait|let me check|double[- ]check|is that right)\b", re.I)


def read_jsonl(path):
    return [json.loads(x) for x in Path(path).read_text().splitlines() if x.strip()]


def metrics_callback():
    from transformers import TrainerCallback

    class WriteMetrics(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kw):
            if state.is_world_process_zero:
                with open(OUT / "metrics.jsonl", "a") as f:
                    f.write(json.dumps({"step": state.global_step, **(logs or {})}) + "\n")

    return WriteMetrics()


def device_args():
    """What the run took from its machine rather than its config: this machine's."""
    import torch

    cuda = torch.cuda.is_available()
    bf16 = cuda and torch.cuda.is_bf16_supported()
    dtype = (torch.bfloat16 if bf16 else torch.float16) if cuda else torch.float32
    return dict(output_dir=str(OUT / "checkpoints"), use_cpu=not cuda, bf16=bf16, report_to=[]), dtype


# -- reward model ------------------------------------------------------------------------------

def train_reward(c, trl_args):
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, set_seed
    from trl import RewardConfig, RewardTrainer

    if c.get("over_length") == "truncate_thinking" or c.get("step_pairs"):
        sys.exit("this script trains on pairs.jsonl as it is; the run also cut pairs (over_length=truncate_thinking "
                 "or step_pairs), which only RLOO Studio does")
    rows = read_jsonl(HERE / "pairs.jsonl")  # the run's exact split, prompts already chat-formatted
    keep = ("prompt", "chosen", "rejected")
    train = [{k: r[k] for k in keep} for r in rows if r["split"] == "train"]
    held = [{k: r[k] for k in keep} for r in rows if r["split"] == "held_out"]
    device, dtype = device_args()
    set_seed(c["seed"])  # the fresh score head is drawn at load time
    trust = bool(c.get("trust_remote_code"))  # as ticked in the run's form
    tok = AutoTokenizer.from_pretrained(c["model"], trust_remote_code=trust)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    model = AutoModelForSequenceClassification.from_pretrained(c["model"], num_labels=1, dtype=dtype,
                                                               trust_remote_code=trust)
    model.config.pad_token_id = tok.pad_token_id
    lo = c["lora"]
    lora = LoraConfig(r=lo["r"], lora_alpha=lo["alpha"], lora_dropout=lo["dropout"], task_type="SEQ_CLS",
                      target_modules=lo["target_modules"], modules_to_save=c.get("modules_to_save") or None)
    args = RewardConfig(**trl_args, **device, eval_on_start=bool(held))
    trainer = RewardTrainer(model=model, args=args, processing_class=tok, train_dataset=Dataset.from_list(train),
                            eval_dataset=Dataset.from_list(held) if held else None, peft_config=lora,
                            callbacks=[metrics_callback()])
    trainer.train()
    trainer.save_model(str(OUT / "adapter"))


# -- RLOO --------------------------------------------------------------------------------------

def think_token_ids(tok):
    unk = tok.unk_token_id
    ids = [tok.convert_tokens_to_ids(t) for t in ("<think>", "</think>")]
    return tuple(None if i is None or i == unk else i for i in ids)


def text_of(completion):
    # conversational prompts give completions as [{"role": "assistant", "content": ...}]
    if isinstance(completion, list):
        return "".join(m.get("content", "") for m in completion)
    return completion


def rule_rewards(names, tok, answer_format, enable_thinking):
    """The run's rule rewards, named as TRL logs them (the same rules as RLOO Studio's rloo/rewards.py)."""
    from answers import EXTRACTORS, matches
    from thinking import parse, split_ids, template_info

    open_id, close_id = think_token_ids(tok)
    start = template_info(tok, enable_thinking).start  # where the generation prompt leaves a completion
    extract = EXTRACTORS[answer_format]

    def think_format(prompts=None, completions=None, completion_ids=None, **kwargs):
        out = []
        for ids in completion_ids:
            s = split_ids(ids, open_id, close_id, start)
            if not s.closed:
                out.append(-1.0)
                continue
            n = len(s.thinking)
            r = 0.3 if n < 10 else 0.7 if n < 30 else 1.0
            if n and SELF_QUESTION.search(tok.decode(s.thinking, skip_special_tokens=True)):
                r += 0.1
            out.append(r)
        return out

    def answer_present(prompts=None, completions=None, completion_ids=None, **kwargs):
        eos = {tok.eos_token_id, tok.pad_token_id}
        out = []
        for ids in completion_ids:
            s = split_ids(ids, open_id, close_id, start) if close_id is not None else None
            ans = [t for t in (s.answer if s and s.closed else []) if t not in eos]
            out.append(1.0 if tok.decode(ans, skip_special_tokens=True).strip() else 0.0)
        return out

    def correctness(prompts=None, completions=None, answer=None, **kwargs):
        out = []
        for c, a in zip(completions, answer):
            p = parse(text_of(c), start=start)
            out.append(1.0 if p.closed and matches(extract(p.answer), a) else 0.0)
        return out

    if close_id is None and "think_format" in names:
        sys.exit("the tokenizer has no </think> token; the think_format reward needs one")
    funcs = {"think_format": think_format, "answer_present": answer_present, "correctness": correctness}
    return [funcs[n] for n in names]


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
                                                     random_state=c["seed"], use_gradient_checkpointing=False)
            return model, tok
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path, trust_remote_code=trust)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, trust_remote_code=trust)
    return get_peft_model(model, LoraConfig(r=lo["r"], lora_alpha=lo["alpha"], lora_dropout=lo["dropout"],
                                            target_modules=lo["target_modules"], task_type="CAUSAL_LM")), tok


def train_rloo(c, trl_args):
    from datasets import Dataset
    from trl import RLOOConfig, RLOOTrainer

    unsupported = [r for r in c["rewards"] if r not in RULE_REWARDS]
    if unsupported:
        sys.exit(f"this script repeats the rule rewards ({', '.join(RULE_REWARDS)}) only; the run also used "
                 f"{', '.join(unsupported)}")
    rows = read_jsonl(HERE / "prompts.jsonl")  # the run's prompt set, as it was
    device, dtype = device_args()
    model, tok = load_policy(c, dtype)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    funcs = rule_rewards(c["rewards"], tok, c.get("answer_format", "last_number"), c.get("enable_thinking", True))
    data = Dataset.from_list([{**r, "prompt": [{"role": "user", "content": r["prompt"]}]} for r in rows])
    args = RLOOConfig(**trl_args, **device)
    trainer = RLOOTrainer(model=model, reward_funcs=funcs, args=args, train_dataset=data, processing_class=tok,
                          callbacks=[metrics_callback()])
    trainer.train()
    trainer.save_model(str(OUT / "adapter"))


def main():
    spec = json.loads((HERE / "reproduce.json").read_text())
    if "trl_args" not in spec:
        sys.exit(f"run {spec['run_id']} stopped before it started training; there is nothing to repeat")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:  # Unsloth patches TRL's trainers; it must come before transformers / trl / peft
        importlib.import_module("unsloth")
    except Exception:
        pass
    OUT.mkdir(exist_ok=True)
    (OUT / "metrics.jsonl").unlink(missing_ok=True)
    train = {"reward": train_reward, "rloo": train_rloo}[spec["kind"]]
    train(spec["config"], spec["trl_args"])


if __name__ == "__main__":
    sys.exit(main())
