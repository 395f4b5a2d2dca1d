"""Diagnostic: does the bundled demo LM 'know' the right step tokens? A step is flagged wrong if any of its tokens
(teacher-forced) is not the LM's argmax. Agreement with the exact labels on data/pol_heldout.jsonl."""
import torch
from common import DEMO_MODEL, LAB, chat, load_causal, read_jsonl
from prm import batchify

m, tok = load_causal(DEMO_MODEL)
rows = [r for r in read_jsonl(LAB / "data/pol_heldout.jsonl") if r["steps"]]
agree = n = fw = fwn = 0
for i in range(0, len(rows), 256):
    chunk = rows[i:i+256]
    items = []
    spans_tok = []
    for r in chunk:
        head = chat(tok, r["prompt"])
        text = head + r["response"] + tok.eos_token
        enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
        ids, offs = enc["input_ids"], enc["offset_mapping"]
        st = []
        for s, e in r["spans"]:
            s, e = s + len(head), e + len(head)
            ks = [k for k, (a, b) in enumerate(offs) if b > a and a < e and b > s]
            st.append((ks[0], ks[-1] + 1))  # include the token after? no
        items.append((ids, [0.0]*len(ids)))
        spans_tok.append(st)
    ids, mask, _ = batchify(tok, items)
    with torch.no_grad():
        pred = m(input_ids=ids, attention_mask=mask).logits.argmax(-1)
    for j, r in enumerate(chunk):
        ok = True
        labs = []
        for (a, b) in spans_tok[j]:
            # token k predicted at k-1; also the separator after the step (b) checks the step's length
            ok = ok and all(pred[j, k-1].item() == ids[j, k].item() for k in range(a, b + 1))
            labs.append(ok)
        for e, lab in zip(r["labels"], labs):
            n += 1
            agree += e == lab
        if r["first_wrong"] is not None:
            fwn += 1
            fw += next((k for k, lab in enumerate(labs) if not lab), None) == r["first_wrong"]
print({"step_agreement": agree/n, "first_wrong_found": fw/fwn, "n": n})
