#!/usr/bin/env python
"""Repeat an RLOO Studio run with Unsloth / TRL / PEFT directly.

    python reproduce.py            (from any folder; writes repro-out/ beside this file)

RLOO Studio copies this file into each reward and RLOO run folder as reproduce.py, beside
reproduce.json: the run's config and the exact keyword arguments the run gave RLOOConfig /
RewardConfig. It reads the data the run used from the same folder (the reward run's pairs.jsonl,
the RLOO run's prompts.jsonl), builds the same model and LoRA with the same seed, trains, and
writes metrics.jsonl to repro-out/. RLOO runs repeat the rule rewards only (think_format,
answer_present, correctness): RLOO Studio's rule_rewards.py, copied beside this file with the
thinking.py and answers.py it stands on (standard library only). It imports no rloo_studio package.
"""
import importlib
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "repro-out"


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

    from rule_rewards import RULES

    unsupported = [r for r in c["rewards"] if r not in RULES]
    if unsupported:
        sys.exit(f"this script repeats the rule rewards ({', '.join(RULES)}) only; the run also used "
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
