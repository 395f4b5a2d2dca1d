"""A process reward run folder, as the prm job saves one (a whole token classifier in adapter/), made in seconds: the
demo model with its two-label score head set so that, on one given response, the steps before `doubt` are trusted
(p = 0.95) and step `doubt` is doubted (p = 0.05). The rest of the model is the bundled demo's, untrained for steps:
what a test of the Inspect tab needs is a run that names a known step, not one that learned to find it."""


def doubting_prm_run(ws, prompt: str, response: str, doubt: int = 2, rid: str = "prm-doubts") -> str:
    import torch

    from rloo_studio.core.models import load_token_cls
    from rloo_studio.core.paths import DEMO_MODEL
    from rloo_studio.inspect.process import encode

    model, tok = load_token_cls(str(DEMO_MODEL))
    enc = encode(tok, prompt, response)  # the scorer's defaults: thinking on, read after each step
    with torch.no_grad():
        hidden = model.base_model(input_ids=torch.tensor([enc.ids])).last_hidden_state[0, enc.positions].float()
        trusted, doubted = hidden[:doubt - 1].mean(0), hidden[doubt - 1]
        w = trusted - doubted  # margin(right - wrong) = c * w.h + b: +3 on the trusted steps' mean, -3 on step `doubt`
        c = 6.0 / float(w @ w)
        b = 3.0 - c * float(w @ trusted)
        head = model.score
        head.weight.copy_(torch.stack([-w * c / 2, w * c / 2]).to(head.weight.dtype))
        head.bias.copy_(torch.tensor([-b / 2, b / 2], dtype=head.bias.dtype))
    d = ws.run_dir(rid)
    model.save_pretrained(str(d / "adapter"))
    tok.save_pretrained(str(d / "adapter"))
    ws.upsert_run(rid, kind="prm", name=rid, status="completed")
    return rid
