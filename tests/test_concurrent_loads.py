"""Two threads loading models at once (a training job and the Playground or Inspect tab) each get a whole
model: from_pretrained runs one at a time (models.LOAD_LOCK), so no parameter is left on the meta device
and the tied lm_head is the embedding, not a random one."""
import threading

import torch

from rloo_studio.core.models import load_causal_lm, load_seq_cls
from rloo_studio.core.paths import DEMO_MODEL


def test_loads_in_two_threads_at_once_give_whole_models():
    out, errors = {}, []

    def load(k, fn):
        try:
            out[k] = fn()
        except Exception as exc:  # noqa: BLE001 — reported below
            errors.append(exc)

    jobs = {"unsloth": lambda: load_causal_lm(str(DEMO_MODEL), "auto")[0],
            "transformers": lambda: load_causal_lm(str(DEMO_MODEL), "transformers")[0],
            "reward": lambda: load_seq_cls(str(DEMO_MODEL))[0]}
    threads = [threading.Thread(target=load, args=(k, fn)) for k, fn in jobs.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    ids = torch.tensor([[5, 6, 7, 8]])
    logits = []
    for k in ("unsloth", "transformers"):
        m = out[k]
        assert not any(p.is_meta for p in m.parameters()), k
        assert torch.equal(m.lm_head.weight, m.model.embed_tokens.weight), k
        with torch.no_grad():
            logits.append(m(input_ids=ids).logits)
    assert torch.allclose(logits[0], logits[1], atol=1e-5)
    assert not any(p.is_meta for p in out["reward"].parameters())
