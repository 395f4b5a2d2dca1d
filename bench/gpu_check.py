"""GPU check: peak memory, step time and generation speed of reward-model and RLOO steps on
Qwen3-0.6B- and Qwen3-4B-shaped models with random weights (built from configs, no download),
next to the memory pre-flight's estimate.

    python bench/gpu_check.py [--steps 5] [--sizes 0.6B,4B]      # a CUDA machine, < 8 min on an H200
    python bench/gpu_check.py --tiny                              # CPU, small shapes (a test runs this)
    python bench/gpu_check.py --jobs [--vllm http://127.0.0.1:8000]   # + the studio's jobs' CUDA memory before and
                                                                  # after each; + vLLM server vs transformers

Variants: (a) Unsloth 4-bit LoRA (FastLanguageModel; needs unsloth and a GPU; on CPU or without
unsloth, transformers + bitsandbytes 4-bit is used and labelled so), (b) transformers + PEFT
16-bit LoRA. The steps are written out here (pairwise loss on a score head; sample k completions,
leave-one-out advantages, policy-gradient loss) so that the script needs only torch,
transformers, peft and bitsandbytes (+ unsloth for (a)), not TRL.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SHAPES = {
    "0.6B": dict(vocab_size=151936, hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
                 num_attention_heads=16, num_key_value_heads=8, head_dim=128),
    "4B": dict(vocab_size=151936, hidden_size=2560, intermediate_size=9728, num_hidden_layers=36,
               num_attention_heads=32, num_key_value_heads=8, head_dim=128),
    "tiny": dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, head_dim=16),
}
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def build(size: str, variant: str, device: str, tmp: Path):
    """(model with LoRA, label of what was really used)."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    cfg = Qwen3Config(**SHAPES[size], tie_word_embeddings=True, max_position_embeddings=4096, pad_token_id=0,
                      eos_token_id=1, bos_token_id=None)
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    if variant == "16bit":
        from peft import LoraConfig, get_peft_model

        torch.manual_seed(0)
        with torch.device(device):
            model = Qwen3ForCausalLM(cfg).to(dtype)
        return get_peft_model(model, LoraConfig(r=16, lora_alpha=16, target_modules=TARGETS)), "transformers+PEFT 16-bit"
    # 4-bit needs weights on disk to quantize while loading.
    path = tmp / f"qwen3-{size}"
    if not path.exists():
        torch.manual_seed(0)
        Qwen3ForCausalLM(cfg).to(torch.bfloat16).save_pretrained(path)
        from transformers import AutoTokenizer

        from rloo_studio.core.paths import DEMO_MODEL

        AutoTokenizer.from_pretrained(DEMO_MODEL).save_pretrained(path)  # loaders want a tokenizer beside the weights
    if device == "cuda":
        try:
            from unsloth import FastLanguageModel

            model, _ = FastLanguageModel.from_pretrained(str(path), max_seq_length=4096, load_in_4bit=True, dtype=None)
            model = FastLanguageModel.get_peft_model(model, r=16, lora_alpha=16, target_modules=TARGETS,
                                                     use_gradient_checkpointing="unsloth")
            return model, "Unsloth 4-bit"
        except Exception as e:  # no unsloth, or it refused the tokenizer-less folder
            log(f"unsloth unavailable ({type(e).__name__}: {str(e)[:120]}); using transformers + bitsandbytes 4-bit")
    from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training
    from transformers import BitsAndBytesConfig

    q = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                           bnb_4bit_compute_dtype=dtype)
    model = Qwen3ForCausalLM.from_pretrained(path, quantization_config=q, dtype=dtype,
                                             device_map={"": 0} if device == "cuda" else {"": "cpu"})
    model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=True)
    return get_peft_model(model, LoraConfig(r=16, lora_alpha=16, target_modules=TARGETS)), "transformers+bnb 4-bit"


def decoder(model):
    """The decoder stack under the PEFT wrapper (hidden states without the LM head)."""
    m = model
    while not hasattr(m, "layers"):
        m = m.model if hasattr(m, "model") else m.base_model
    return m


def reward_steps(model, steps: int, batch: int, seq: int, device: str, vocab: int) -> list[float]:
    import torch

    hidden = model.config.hidden_size
    head = torch.nn.Linear(hidden, 1, device=device, dtype=torch.float32)
    params = [p for p in model.parameters() if p.requires_grad] + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=1e-5)
    times = []
    for _ in range(steps):
        ids = torch.randint(2, vocab, (2 * batch, seq), device=device)
        t = time.perf_counter()
        h = decoder(model)(input_ids=ids).last_hidden_state[:, -1].float()
        r = head(h).squeeze(-1)
        loss = -torch.nn.functional.logsigmoid(r[:batch] - r[batch:]).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        sync(device)
        times.append(time.perf_counter() - t)
    return times


def rloo_steps(model, steps: int, prompts: int, k: int, prompt_len: int, new_tokens: int, device: str,
               vocab: int) -> tuple[list[float], list[float]]:
    import torch

    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-5)
    times, tps = [], []
    for _ in range(steps):
        ids = torch.randint(2, vocab, (prompts, prompt_len), device=device).repeat_interleave(k, 0)
        t = time.perf_counter()
        model.eval()
        with torch.no_grad():
            g0 = time.perf_counter()
            out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=True,
                                 max_new_tokens=new_tokens, min_new_tokens=new_tokens, pad_token_id=0)
            sync(device)
            tps.append(out[:, prompt_len:].numel() / (time.perf_counter() - g0))
        model.train()
        logits = model(input_ids=out).logits[:, prompt_len - 1 : -1].float()
        logp = torch.log_softmax(logits, -1).gather(-1, out[:, prompt_len:, None]).squeeze(-1).sum(-1)
        reward = torch.rand(prompts, k, device=device)
        baseline = (reward.sum(1, keepdim=True) - reward) / (k - 1)  # leave-one-out
        loss = -((reward - baseline).flatten() * logp).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        sync(device)
        times.append(time.perf_counter() - t)
    return times, tps


def sync(device: str) -> None:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()


def peak_reset(device: str) -> None:
    import torch

    if device == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def peak(device: str) -> float | None:
    import torch

    return torch.cuda.max_memory_allocated() / 2**30 if device == "cuda" else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tiny", action="store_true", help="CPU, small shapes, 2 steps")
    ap.add_argument("--sizes", default="0.6B,4B")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--reward-batch", type=int, default=8, help="pairs per reward step")
    ap.add_argument("--seq", type=int, default=1024, help="tokens per reward sequence")
    ap.add_argument("--prompts", type=int, default=4)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--prompt-len", type=int, default=256)
    ap.add_argument("--new-tokens", type=int, default=512)
    ap.add_argument("--variants", default="4bit,16bit")
    ap.add_argument("--vllm", metavar="URL", help="also time a vLLM server (make vllm-server) against transformers "
                                                 "generate on its model (bench/vllm_timing.py)")
    ap.add_argument("--jobs", action="store_true", help="also run the studio's own reward and RLOO jobs on the demo, "
                                                        "recording CUDA memory before and after each "
                                                        "(bench/bench_jobs_memory.py)")
    args = ap.parse_args()
    import torch
    from transformers import Qwen3Config

    from rloo_studio.core.memory import GiB, ModelShape, estimate

    device = "cuda" if torch.cuda.is_available() and not args.tiny else "cpu"
    if args.tiny:
        args.sizes, args.steps, args.reward_batch, args.seq = "tiny", 2, 2, 32
        args.prompts, args.k, args.prompt_len, args.new_tokens = 2, 2, 8, 8
    elif device != "cuda":
        sys.exit("no CUDA device: run with --tiny for the CPU smoke check")
    info = {"device": torch.cuda.get_device_name(0) if device == "cuda" else "CPU", "torch": torch.__version__,
            "date": time.strftime("%Y-%m-%d")}
    log(json.dumps(info))
    tmp = Path(tempfile.mkdtemp(prefix="gpu_check-"))
    results = []
    try:
        for size in args.sizes.split(","):
            shape = ModelShape.from_config(Qwen3Config(**SHAPES[size]))
            for variant in args.variants.split(","):
                t0 = time.time()
                peak_reset(device)
                model, used = build(size, variant, device, tmp)
                load_peak = peak(device)
                peak_reset(device)
                rt = reward_steps(model, args.steps, args.reward_batch, args.seq, device, shape.vocab)
                reward_peak = peak(device)
                peak_reset(device)
                st, tps = rloo_steps(model, args.steps, args.prompts, args.k, args.prompt_len, args.new_tokens,
                                     device, shape.vocab)
                rloo_peak = peak(device)
                q4 = variant == "4bit"
                est_r = estimate(shape, batch=2 * args.reward_batch, seq_len=args.seq, load_in_4bit=q4,
                                 chunked_ce=True).total / GiB  # the reward step builds no LM logits
                est_l = estimate(shape, batch=args.prompts * args.k, seq_len=args.prompt_len + args.new_tokens,
                                 load_in_4bit=q4, generation_batch=args.prompts * args.k,
                                 generation_len=args.prompt_len + args.new_tokens).total / GiB
                row = {
                    "size": size, "variant": used, "load_peak_gib": load_peak,
                    "reward_step_s_median": statistics.median(rt[1:] or rt), "reward_peak_gib": reward_peak,
                    "reward_estimate_gib": round(est_r, 2),
                    "rloo_step_s_median": statistics.median(st[1:] or st), "rloo_peak_gib": rloo_peak,
                    "rloo_estimate_gib": round(est_l, 2), "gen_tokens_per_s": statistics.median(tps),
                    "wall_s": round(time.time() - t0, 1),
                }
                results.append(row)
                print(json.dumps(row), flush=True)
                del model
                if device == "cuda":
                    torch.cuda.empty_cache()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.vllm:
        from vllm_timing import timing

        print(json.dumps({"vllm_vs_transformers": timing(args.vllm, args.prompts, args.k, args.new_tokens)}), flush=True)
    if args.jobs:  # memory given back after each job: allocated and reserved before the first and after each
        import subprocess

        subprocess.run([sys.executable, str(Path(__file__).with_name("bench_jobs_memory.py")), "--rounds", "3"],
                       check=False)
    print(json.dumps({**info, "results": len(results)}))


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    main()
