"""A reward run folder with a real SEQ_CLS LoRA adapter (seeded, untrained), as the reward job saves it."""


def seeded_reward_run(ws, rid: str = "reward-seeded") -> str:
    import torch
    from peft import get_peft_model

    from rloo_studio.core.model_options import LoraSpec
    from rloo_studio.core.models import load_seq_cls, lora_config
    from rloo_studio.core.paths import DEMO_MODEL

    torch.manual_seed(0)
    model, tok = load_seq_cls(str(DEMO_MODEL))
    model = get_peft_model(model, lora_config(LoraSpec(r=4, alpha=8), "SEQ_CLS"))
    d = ws.run_dir(rid)
    model.save_pretrained(str(d / "adapter"))
    tok.save_pretrained(str(d / "adapter"))
    ws.upsert_run(rid, kind="reward", name=rid, status="completed")
    return rid
