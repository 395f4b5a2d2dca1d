"""A process reward run folder in seconds that judges steps as an imperfect model would: the bundled demo model with
its two-label score head fit (logistic regression on the frozen hidden states at each step's read position) to the
exact step labels of the slipping demo policy's bundled responses. About two steps in three judged right on responses
it was not fit on, rarely sure (p beyond 0.1 / 0.9): a model whose verdicts a person must check, which is what a test
of accepting a model's verdicts needs. The demo preset's trained model is far better (docs/PRM.md)."""
import json


def probe_prm_run(ws, rid: str = "prm-probe", responses: int = 240) -> str:
    import torch

    from rloo_studio.core import demo_task
    from rloo_studio.core.models import load_token_cls
    from rloo_studio.core.paths import DEMO_DATA, DEMO_MODEL
    from rloo_studio.inspect.process import encode, padded

    model, tok = load_token_cls(str(DEMO_MODEL))
    rows = [json.loads(x) for x in (DEMO_DATA / "step_labels.jsonl").read_text().splitlines()][:responses]
    encs, truth = [], []
    for r in rows:
        exact = demo_task.step_labels(r["prompt"], r["response"])
        enc = encode(tok, r["prompt"], r["response"])  # the scorer's defaults: thinking on, read after each step
        if exact is not None and len(enc.positions) == len(exact):
            encs.append(enc)
            truth += [float(x) for x in exact]
    feats = []
    with torch.no_grad():
        for i in range(0, len(encs), 64):
            idx = list(range(i, min(i + 64, len(encs))))
            ids, mask = padded([e.ids for e in encs], idx, tok.pad_token_id or 0)
            hidden = model.base_model(input_ids=ids, attention_mask=mask).last_hidden_state.float()
            feats += [hidden[r, p] for r, j in enumerate(idx) for p in encs[j].positions]
    x, y = torch.stack(feats), torch.tensor(truth)
    w, b = torch.zeros(x.shape[1], requires_grad=True), torch.zeros(1, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], max_iter=100)

    def loss():
        opt.zero_grad()
        out = torch.nn.functional.binary_cross_entropy_with_logits(x @ w + b, y) + 1e-3 * (w @ w)
        out.backward()
        return out

    opt.step(loss)
    with torch.no_grad():  # logit(right) - logit(wrong) = w.h + b
        model.score.weight.copy_(torch.stack([-w / 2, w / 2]).to(model.score.weight.dtype))
        model.score.bias.copy_(torch.cat([-b / 2, b / 2]).to(model.score.bias.dtype))
    d = ws.run_dir(rid)
    model.save_pretrained(str(d / "adapter"))
    tok.save_pretrained(str(d / "adapter"))
    ws.upsert_run(rid, kind="prm", name=rid, status="completed")
    return rid
