"""The process-reward-model part of a run's reproduce.py (copied beside it as reproduce_job.py; imports no
rloo_studio): trains the same token classifier with transformers' Trainer on the run's exact tokenized examples
(examples.jsonl: each response's ids and its labels, -100 except at each labeled step's read position)."""


def train(c, trainer_args, kit):
    """`c`: the run's config; `trainer_args`: what the run gave TrainingArguments; `kit`: reproduce.py's helpers."""
    from datasets import Dataset
    from peft import LoraConfig, get_peft_model
    from transformers import (AutoModelForTokenClassification, AutoTokenizer, DataCollatorForTokenClassification,
                              Trainer, TrainingArguments, set_seed)

    rows = kit.read_jsonl(kit.HERE / "examples.jsonl")
    keep = ("input_ids", "labels")
    train_rows = [{k: r[k] for k in keep} for r in rows if r["split"] == "train"]
    held = [{k: r[k] for k in keep} for r in rows if r["split"] == "held_out"]
    device, dtype = kit.device_args()
    set_seed(c["seed"])  # the fresh head is drawn at load time
    trust = bool(c.get("trust_remote_code"))  # as ticked in the run's form
    tok = AutoTokenizer.from_pretrained(c["model"], trust_remote_code=trust)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    model = AutoModelForTokenClassification.from_pretrained(
        c["model"], num_labels=2, dtype=dtype, trust_remote_code=trust, id2label={0: "wrong", 1: "right"},
        label2id={"wrong": 0, "right": 1})
    model.config.pad_token_id = tok.pad_token_id
    if c["finetune"] == "lora":
        lo = c["lora"]
        model = get_peft_model(model, LoraConfig(r=lo["r"], lora_alpha=lo["alpha"], lora_dropout=lo["dropout"],
                                                 target_modules=lo["target_modules"], task_type="TOKEN_CLS"))
    args = TrainingArguments(**trainer_args, **device, eval_on_start=bool(held))
    trainer = Trainer(model=model, args=args, train_dataset=Dataset.from_list(train_rows),
                      eval_dataset=Dataset.from_list(held) if held else None, processing_class=tok,
                      data_collator=DataCollatorForTokenClassification(tok, label_pad_token_id=-100),
                      callbacks=[kit.metrics_callback()])
    trainer.train()
    trainer.save_model(str(kit.OUT / "adapter"))
