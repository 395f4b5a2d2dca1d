"""The process-reward-model part of a run's reproduce.py (copied beside it as reproduce_job.py; imports no
rloo_studio): trains the same token classifier with transformers' Trainer on the run's exact tokenized examples
(examples.jsonl: each response's ids and its labels: at each labeled step's read position, and with a teacher's
labels on every token of the reasoning, -100 elsewhere)."""
import re


def extra_layers(c, trust) -> dict:
    """from_pretrained's overrides for the run's fresh layers on top of the base (none when extra_layers is 0)."""
    from transformers import AutoConfig

    n = c.get("extra_layers") or 0
    if not n:
        return {}
    conf = AutoConfig.from_pretrained(c["model"], trust_remote_code=trust)
    more = {"num_hidden_layers": conf.num_hidden_layers + n}
    if getattr(conf, "layer_types", None):
        more["layer_types"] = list(conf.layer_types) + [conf.layer_types[-1]] * n
    return more


def train(c, trainer_args, kit):
    """`c`: the run's config; `trainer_args`: what the run gave TrainingArguments; `kit`: reproduce.py's helpers."""
    from datasets import Dataset
    from peft import LoraConfig, get_peft_model
    from transformers import (
        AutoModelForTokenClassification,
        AutoTokenizer,
        DataCollatorForTokenClassification,
        Trainer,
        TrainingArguments,
        set_seed,
    )

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
        label2id={"wrong": 0, "right": 1}, **extra_layers(c, trust))
    model.config.pad_token_id = tok.pad_token_id
    if c["finetune"] == "frozen":  # only the fresh layers, the final norm and the head learn
        n_base = model.config.num_hidden_layers - c["extra_layers"]
        for name, p in model.named_parameters():
            layer = re.match(r"model\.layers\.(\d+)\.", name)
            p.requires_grad_(bool(layer and int(layer.group(1)) >= n_base)
                             or name.startswith(("score.", "model.norm.")))
    if c["finetune"] == "lora":
        lo = c["lora"]
        model = get_peft_model(model, LoraConfig(r=lo["r"], lora_alpha=lo["alpha"], lora_dropout=lo["dropout"],
                                                 target_modules=lo["target_modules"], task_type="TOKEN_CLS"))
    args = TrainingArguments(**trainer_args, **device, eval_on_start=bool(held))
    from batches import length_batch_trainer  # RLOO Studio's training order, beside this file

    trainer_cls = (length_batch_trainer(Trainer, [len(r["input_ids"]) for r in train_rows])  # the run's order
                   if c.get("length_batches") else Trainer)
    trainer = trainer_cls(model=model, args=args, train_dataset=Dataset.from_list(train_rows),
                          eval_dataset=Dataset.from_list(held) if held else None, processing_class=tok,
                          data_collator=DataCollatorForTokenClassification(tok, label_pad_token_id=-100),
                          callbacks=[kit.metrics_callback()])
    trainer.train()
    trainer.save_model(str(kit.OUT / "adapter"))
