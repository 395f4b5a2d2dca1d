"""The reward-model part of a run's reproduce.py (copied beside it as reproduce_job.py; imports no rloo_studio):
trains the same LoRA reward model with TRL's RewardTrainer on the run's exact split (pairs.jsonl)."""
import sys


def train(c, trainer_args, kit):
    """`c`: the run's config; `trainer_args`: what the run gave RewardConfig; `kit`: reproduce.py's helpers."""
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, set_seed
    from trl import RewardConfig, RewardTrainer

    if c.get("over_length") == "truncate_thinking" or c.get("step_pairs"):
        sys.exit("this script trains on pairs.jsonl as it is; the run also cut pairs (over_length=truncate_thinking "
                 "or step_pairs), which only RLOO Studio does")
    rows = kit.read_jsonl(kit.HERE / "pairs.jsonl")  # the run's exact split, prompts already chat-formatted
    keep = ("prompt", "chosen", "rejected")
    train_rows = [{k: r[k] for k in keep} for r in rows if r["split"] == "train"]
    held = [{k: r[k] for k in keep} for r in rows if r["split"] == "held_out"]
    device, dtype = kit.device_args()
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
    args = RewardConfig(**trainer_args, **device, eval_on_start=bool(held))
    trainer = RewardTrainer(model=model, args=args, processing_class=tok, train_dataset=Dataset.from_list(train_rows),
                            eval_dataset=Dataset.from_list(held) if held else None, peft_config=lora,
                            callbacks=[kit.metrics_callback()])
    trainer.train()
    trainer.save_model(str(kit.OUT / "adapter"))
