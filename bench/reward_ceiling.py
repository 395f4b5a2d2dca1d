"""What a reward model over the demo model can learn about the arithmetic, measured five ways.

    .venv/bin/python bench/reward_ceiling.py sample  [--prompts 4000]   # cache 8 samples per prompt (~5 min)
    .venv/bin/python bench/reward_ceiling.py logprob                    # the base model's own likelihood
    .venv/bin/python bench/reward_ceiling.py probe                      # linear probe on frozen features
    .venv/bin/python bench/reward_ceiling.py verdict [--seconds 240]    # full fine-tune: a verdict after EOS
    .venv/bin/python bench/reward_ceiling.py lines   [--seconds 200]    # full fine-tune: every line classified
    .venv/bin/python bench/reward_ceiling.py pairs   [--mode full|lora --step-loss 1 --steps 800 ...]

Data: the demo policy's own samples (8 per prompt at temperature 1, prompts from the demo's pair pool,
never the RLOO prompt sets), graded by the known answer. "Slip" pairs: a right response against a wrong
one, both reasoning and well formed (demo_task.answer_key_pairs; `pairs --all-pairs` takes every right x
wrong combination of a prompt). Held out by prompt. Each mode prints JSON lines; docs/REWARD.md has the
figures. Reads the score head at positions the way inspect/scoring.py does (one forward pass).
"""
from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rloo_studio.core import bootstrap  # noqa: E402,F401  (unsloth first, as in the app)

# isort: split
import torch  # noqa: E402
from transformers import AutoModelForSequenceClassification, PreTrainedTokenizerFast, Qwen3ForCausalLM  # noqa: E402

from rloo_studio.core import demo_task as demo  # noqa: E402
from rloo_studio.core.paths import DEMO_MODEL  # noqa: E402
from rloo_studio.core.reward_input import format_text  # noqa: E402
from rloo_studio.core.sampling import sample  # noqa: E402
from rloo_studio.core.thinking import chat_prompt, template_info, token_span  # noqa: E402
from rloo_studio.inspect.scoring import parse_response  # noqa: E402

CACHE = ROOT / "test-artifacts" / "reward_ceiling" / "samples.jsonl"
LINE = re.compile(r"^(\d)\+(\d)\+(\d)=(\d+)$")
F = torch.nn.functional


def pool(n: int) -> list[dict]:
    """The prompts scripts/build_demo.py draws its demo pairs from (same seed, same order)."""
    rng, seen, problems = random.Random(0), set(), []
    while len(problems) < 21000:
        p = demo.make_problem(rng)
        if p["prompt"] not in seen:
            seen.add(p["prompt"])
            problems.append(p)
    return (problems[1000:1300] + problems[1400:])[:n]


def cmd_sample(a, tok) -> None:
    model = Qwen3ForCausalLM.from_pretrained(DEMO_MODEL).eval()
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    t0, chunk = time.time(), 200
    with open(CACHE, "w") as f:
        probs = pool(a.prompts)
        for c in range(0, len(probs), chunk):
            part = probs[c:c + chunk]
            outs = sample(model, tok, [p["prompt"] for p in part], n=8, max_new_tokens=64, seed=7 + c, batch_size=256)
            for i, p in enumerate(part):
                f.write(json.dumps({**p, "samples": [[o.text, o.stopped] for o in outs[i * 8:(i + 1) * 8]]}) + "\n")
            print(json.dumps({"prompts": c + len(part), "seconds": round(time.time() - t0)}), flush=True)


def groups() -> list[dict]:
    if not CACHE.exists():
        sys.exit(f"No samples yet: run `{sys.argv[0]} sample` first ({CACHE}).")
    g = [json.loads(x) for x in CACHE.read_text().splitlines()]
    random.Random(2).shuffle(g)
    return g


def slip_pairs(gs: list[dict], every: bool = False) -> list[dict]:
    rng, out = random.Random(1), []
    for g in gs:
        if every:
            graded = [(t, demo.grade(t, g["answer"], st)) for t, st in g["samples"]]
            ok = [(t, x) for t, x in graded if x["formatted"] and x["thinking"]]
            right = sorted({t for t, x in ok if x["correct"]})
            wrong = sorted({t for t, x in ok if not x["correct"]})
            out += [{"prompt": g["prompt"], "chosen": c, "rejected": r, "kind": "slip"} for c in right for r in wrong]
        out += [p for p in demo.answer_key_pairs(g["prompt"], g["answer"], [tuple(s) for s in g["samples"]], rng)
                if not every or p["kind"] == "format"]
    return out


def split(gs):
    k = len(gs) // 4
    return gs[:k], gs[k:]  # held-out prompts, training prompts


def encode(tok, tpl, prompt, response):
    """(ids, token index of each <think> step's last token, step texts), as scoring reads them."""
    text = format_text(tok, prompt, response)
    enc = tok(text, return_offsets_mapping=True)
    base = len(chat_prompt(tok, prompt)) - 0
    pr = parse_response(tpl, response, "blank")
    ends, texts = [], []
    for st in pr.steps:
        i, j = token_span(enc["offset_mapping"], base + st.start, base + st.end)
        if j > i:
            ends.append(j - 1)
            texts.append(st.text)
    return enc["input_ids"], ends, texts


def padded(seqs, pad):
    w = max(map(len, seqs))
    ids = torch.full((len(seqs), w), pad)
    mask = torch.zeros((len(seqs), w), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = torch.tensor(s)
        mask[i, :len(s)] = 1
    return ids, mask


@torch.no_grad()
def cmd_logprob(a, tok) -> None:
    """Pair accuracy of the base model's own log-likelihood of the response (sum and min over its tokens)."""
    model = Qwen3ForCausalLM.from_pretrained(DEMO_MODEL).eval()
    held, _ = split(groups())
    pairs = [p for p in slip_pairs(held) if p["kind"] == "slip"][:a.n]

    def lp(prompt, resp):
        head = tok(chat_prompt(tok, prompt))["input_ids"]
        ids = tok(format_text(tok, prompt, resp))["input_ids"]
        out = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0, :-1], -1)
        t = out[torch.arange(len(ids) - 1), torch.tensor(ids[1:])][len(head) - 1:]
        return t.sum().item(), t.min().item()

    s = [(lp(p["prompt"], p["chosen"]), lp(p["prompt"], p["rejected"])) for p in pairs]
    print(json.dumps({"mode": "logprob", "slip_pairs": len(s),
                      "sum_logp_accuracy": round(sum(c[0] > r[0] for c, r in s) / len(s), 3),
                      "min_logp_accuracy": round(sum(c[1] > r[1] for c, r in s) / len(s), 3)}))


@torch.no_grad()
def cmd_probe(a, tok) -> None:
    """Logistic regression on the frozen base's hidden states (all layers) at the first step where a slip
    pair's two responses differ: is 'this line is right' linearly there?"""
    model = Qwen3ForCausalLM.from_pretrained(DEMO_MODEL).eval()
    tpl = template_info(tok)
    X, Y = [], []
    for p in [p for p in slip_pairs(groups()) if p["kind"] == "slip"][:a.n]:
        (ci, ce, ct), (ri, re_, rt) = (encode(tok, tpl, p["prompt"], p["chosen"]),
                                       encode(tok, tpl, p["prompt"], p["rejected"]))
        k = next((i for i, (x, y) in enumerate(zip(ct, rt)) if x != y), None)
        if k is None or k >= min(len(ce), len(re_)):
            continue
        for ids, pos, y in ((ci, ce[k], 1.0), (ri, re_[k], 0.0)):
            hs = model(input_ids=torch.tensor([ids]), output_hidden_states=True).hidden_states
            X.append(torch.cat([h[0, pos] for h in hs]))
            Y.append(y)
    X, Y = torch.stack(X), torch.tensor(Y)
    tr = int(len(Y) * 0.75)
    X = (X - X[:tr].mean(0)) / (X[:tr].std(0) + 1e-5)
    w, b = torch.zeros(X.shape[1], requires_grad=True), torch.zeros(1, requires_grad=True)
    opt = torch.optim.Adam([w, b], lr=1e-2)
    with torch.enable_grad():
        for _ in range(500):
            loss = F.binary_cross_entropy_with_logits(X[:tr] @ w + b, Y[:tr]) + 1e-3 * (w ** 2).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
    acc = lambda s: ((((X[s] @ w + b) > 0).float() == Y[s]).float().mean().item())  # noqa: E731
    print(json.dumps({"mode": "probe", "examples": len(Y), "train_accuracy": round(acc(slice(0, tr)), 3),
                      "held_out_accuracy": round(acc(slice(tr, None)), 3)}))


def graded(tok, tpl, gs, lines=False):
    """Every well-formed reasoning sample: (ids, correct, prompt[, line positions, line labels])."""
    out = []
    for g in gs:
        for text, stopped in g["samples"]:
            gr = demo.grade(text, g["answer"], stopped)
            if not (gr["formatted"] and gr["thinking"]):
                continue
            ids, ends, texts = encode(tok, tpl, g["prompt"], text)
            pos, lab = [], []
            for e, t in zip(ends, texts):
                m = LINE.match(t.strip())
                if m:
                    x, y, c, s = map(int, m.groups())
                    pos.append(e)
                    lab.append(float(x + y + c == s))
            out.append((ids, gr["correct"], g["prompt"], pos, lab))
    return [o for o in out if o[3]] if lines else out


def cmd_verdict(a, tok) -> None:
    """Full fine-tune of the demo model to predict a verdict token ('Y' right / 'N' wrong) right after EOS:
    can the last position learn to check the whole response?"""
    model = Qwen3ForCausalLM.from_pretrained(DEMO_MODEL)
    tpl, (held, train) = template_info(tok), split(groups())
    y_id, n_id = tok("Y")["input_ids"][0], tok("N")["input_ids"][0]
    TR, HO = graded(tok, tpl, train), graded(tok, tpl, held)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr)

    def logits_at_end(b):
        ids, mask = padded([x[0] for x in b], tok.pad_token_id)
        lg = model(input_ids=ids, attention_mask=mask).logits
        end = lg[torch.arange(len(b)), torch.tensor([len(x[0]) - 1 for x in b])]
        return end[:, y_id] - end[:, n_id]

    @torch.no_grad()
    def evaluate():
        model.eval()
        s = torch.cat([logits_at_end(HO[i:i + 128]) for i in range(0, len(HO), 128)]).tolist()
        model.train()
        return {"verdict_accuracy": round(sum((v > 0) == x[1] for v, x in zip(s, HO)) / len(HO), 3),
                "right_share": round(sum(x[1] for x in HO) / len(HO), 3), "pair_accuracy": pair_acc(s, HO)}

    # two-way softmax over (Y - N, 0): class 0 is "right", so a right response pushes Y above N
    train_loop(a, lambda b: F.cross_entropy(torch.stack([logits_at_end(b), torch.zeros(len(b))], 1),
                                            torch.tensor([0 if x[1] else 1 for x in b])), TR, opt, evaluate, "verdict")


def pair_acc(scores, rows) -> float:
    """Share of (right, wrong) response pairs of one prompt that the scores order right."""
    by = {}
    for v, x in zip(scores, rows):
        by.setdefault(x[2], []).append((v, x[1]))
    ok = tot = 0
    for v in by.values():
        for s1, c1 in v:
            for s2, c2 in v:
                if c1 and not c2:
                    tot += 1
                    ok += s1 > s2
    return round(ok / max(tot, 1), 3)


def cmd_lines(a, tok) -> None:
    """Full fine-tune of the demo model with a one-output head read at the last token of every reasoning
    line, each line labeled right / wrong (dense, step-level supervision from the answer key)."""
    model = AutoModelForSequenceClassification.from_pretrained(DEMO_MODEL, num_labels=1)
    backbone, head = model.model, model.score
    tpl, (held, train) = template_info(tok), split(groups())
    TR, HO = graded(tok, tpl, train, lines=True), graded(tok, tpl, held, lines=True)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr)

    def scores(b):
        ids, mask = padded([x[0] for x in b], tok.pad_token_id)
        return head(backbone(input_ids=ids, attention_mask=mask).last_hidden_state).squeeze(-1)

    def loss(b):
        s = scores(b)
        logits = torch.cat([s[j, x[3]] for j, x in enumerate(b)])
        y = torch.tensor([v for x in b for v in x[4]])
        return F.binary_cross_entropy_with_logits(logits, y, weight=torch.where(y > 0, 1.0, 3.0))

    @torch.no_grad()
    def evaluate():
        model.eval()
        ok = n = caught = wrong = 0
        worst = []
        for i in range(0, len(HO), 128):
            b = HO[i:i + 128]
            s = scores(b)
            for j, x in enumerate(b):
                v = s[j, x[3]].tolist()
                worst.append(min(v))
                for pv, lab in zip(v, x[4]):
                    ok += (pv > 0) == bool(lab)
                    n += 1
                    wrong += not lab
                    caught += (not lab) and pv <= 0
        model.train()
        return {"line_accuracy": round(ok / n, 3), "wrong_lines_caught": round(caught / max(wrong, 1), 3),
                "pair_accuracy_min_line": pair_acc(worst, HO)}

    train_loop(a, loss, TR, opt, evaluate, "lines")


def train_loop(a, loss_fn, rows, opt, evaluate, mode) -> None:
    rng, t0, step = random.Random(0), time.time(), 0
    print(json.dumps({"mode": mode, "step": 0, "train_rows": len(rows), **evaluate()}), flush=True)
    while time.time() - t0 < a.seconds and step < a.steps:
        loss = loss_fn(rng.sample(rows, a.bs))
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if step % a.every == 0:
            print(json.dumps({"mode": mode, "step": step, "seconds": round(time.time() - t0),
                              "loss": round(loss.item(), 3), **evaluate()}), flush=True)
    print(json.dumps({"mode": mode, "step": step, "seconds": round(time.time() - t0), "final": True, **evaluate()}))


def cmd_pairs(a, tok) -> None:
    """The pairwise loss RewardTrainer uses (-log sigmoid of the margin at the last token, plus the centring
    term), optionally plus the same loss at the first step where the two responses differ (what the job's
    step_pairs trains), LoRA (as the job) or full fine-tuning; held-out slip accuracy read at the last token
    and at that step."""
    model = AutoModelForSequenceClassification.from_pretrained(DEMO_MODEL, num_labels=1)
    model.config.pad_token_id = tok.pad_token_id
    if a.mode == "lora":
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=a.r, lora_alpha=a.r * 2, lora_dropout=0.0, task_type="SEQ_CLS",
                                                 target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
                                                                 "up_proj", "down_proj"]))
    inner = model.get_base_model() if hasattr(model, "get_base_model") else model
    backbone, head = inner.model, inner.score
    tpl, (held, train) = template_info(tok), split(groups())

    def prep(p):
        (ci, ce, ct), (ri, re_, rt) = (encode(tok, tpl, p["prompt"], p["chosen"]),
                                       encode(tok, tpl, p["prompt"], p["rejected"]))
        k = next((i for i, (x, y) in enumerate(zip(ct, rt)) if x != y), None)
        k = k if k is not None and k < min(len(ce), len(re_)) else None
        return {"c": ci, "r": ri, "ck": ce[k] if k is not None else None, "rk": re_[k] if k is not None else None}

    TR = [prep(p) for p in slip_pairs(train, a.all_pairs)]
    HO = [prep(p) for p in slip_pairs(held) if p["kind"] == "slip"][:a.n]
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=a.lr)

    def margins(b):
        ids, mask = padded([x["c"] for x in b] + [x["r"] for x in b], tok.pad_token_id)
        s, n = head(backbone(input_ids=ids, attention_mask=mask).last_hidden_state).squeeze(-1), len(b)
        last_c = torch.stack([s[i, len(x["c"]) - 1] for i, x in enumerate(b)])
        last_r = torch.stack([s[n + i, len(x["r"]) - 1] for i, x in enumerate(b)])
        step = [s[i, x["ck"]] - s[n + i, x["rk"]] for i, x in enumerate(b) if x["ck"] is not None]
        return last_c, last_r, step

    def loss(b):
        c, r, step = margins(b)
        out = -F.logsigmoid(c - r).mean() + 0.01 * ((c + r) ** 2).mean()
        if a.step_loss and step:
            out = out + a.step_loss * -F.logsigmoid(torch.stack(step)).mean()
        return out

    @torch.no_grad()
    def evaluate():
        model.eval()
        last = step = n_step = 0
        for i in range(0, len(HO), 64):
            c, r, st = margins(HO[i:i + 64])
            last += (c > r).sum().item()
            step += sum(float(d > 0) for d in st)
            n_step += len(st)
        model.train()
        return {"slip_last_token": round(last / len(HO), 3),
                "slip_at_first_differing_step": round(step / max(n_step, 1), 3)}

    train_loop(a, loss, TR, opt, evaluate, f"pairs-{a.mode}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["sample", "logprob", "probe", "verdict", "lines", "pairs"])
    ap.add_argument("--prompts", type=int, default=4000, help="sample: prompts (8 samples each)")
    ap.add_argument("--n", type=int, default=300, help="held-out slip pairs (logprob, pairs) / probe pairs")
    ap.add_argument("--seconds", type=float, default=200, help="training budget (wall time) ...")
    ap.add_argument("--steps", type=int, default=10 ** 9, help="... or this many steps, whichever ends first")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--bs", type=int, default=16)
    ap.add_argument("--every", type=int, default=100, help="evaluate every this many steps")
    ap.add_argument("--mode", choices=["full", "lora"], default="full")
    ap.add_argument("--r", type=int, default=8)
    ap.add_argument("--step-loss", type=float, default=0.0)
    ap.add_argument("--all-pairs", action="store_true", help="pairs: every right x wrong combination of a prompt")
    a = ap.parse_args()
    torch.manual_seed(0)
    tok = PreTrainedTokenizerFast.from_pretrained(DEMO_MODEL)
    globals()[f"cmd_{a.what}"](a, tok)


if __name__ == "__main__":
    main()
