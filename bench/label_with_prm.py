"""Step labeling with and without a process reward model beside the steps, measured in Chromium on fresh responses.

    .venv/bin/python bench/label_with_prm.py --workspace WS [--run latest] [--responses 30] [--seed 0]

WS holds a trained process reward run (`train-prm --workspace WS --demo`). In a new workspace (a temporary folder)
this puts a copy of that run and fresh responses of the demo's slipping policy to the held-out prompts (no process
reward run trained on them), starts the app on it, and lets the scripted annotator of tests/step_annotator.py (who
knows the exact verdicts) label --responses responses from the keyboard, first with "(none)" chosen, then with the
run. Prints keys per response each way, the presses of `a` (accepting the model's verdicts; how many without
checking, the model being sure), the accepted verdicts that were wrong, and the Label tab panel's person vs model
figures (label/agreement.py) as JSON.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
from rloo_studio.core import bootstrap  # noqa: E402, F401  (unsloth before transformers)

# isort: split
from rloo_studio.core.workspace import Workspace  # noqa: E402
from rloo_studio.label.prompts import add_prompt, add_response, get_or_create_set  # noqa: E402
from rloo_studio.runs import catalog  # noqa: E402

SOURCE = "model:slippy-heldout"


def fresh_responses(ws: Workspace, n: int, seed: int) -> int:
    """The slipping policy's answers to the first n * 2 held-out prompts (one each), stored under SOURCE."""
    from rloo_studio.core.models import load_policy
    from rloo_studio.core.paths import DEMO_DATA, DEMO_SLIPPY_MODEL
    from rloo_studio.core.sampling import sample

    problems = [json.loads(x) for x in (DEMO_DATA / "prompts_heldout.jsonl").read_text().splitlines() if x.strip()]
    problems = problems[:n * 2]  # some answers have no steps; twice as many as labeled is plenty
    policy, tok = load_policy(str(DEMO_SLIPPY_MODEL))
    got = sample(policy, tok, [p["prompt"] for p in problems], n=1, max_new_tokens=64, seed=seed)
    with ws.transaction() as con:
        sid = get_or_create_set(con, "bench-heldout", "bench")
        for p, s in zip(problems, got):
            add_response(con, add_prompt(con, sid, p["prompt"], {"answer": p["answer"]}), s.response, SOURCE)
    return len(got)


def copy_run(src: Workspace, dst: Workspace, run_id: str) -> None:
    shutil.copytree(src.run_dir(run_id), dst.run_dir(run_id))
    row = src.run(run_id)
    dst.upsert_run(run_id, kind=row["kind"], name=row["name"], status=row["status"], config=row["config"])


def measure(url: str, ws_dir: Path, n: int) -> dict:
    from browser import open_page
    from step_annotator import accepted_figures, label, no_model, start

    from rloo_studio.label import agreement

    with open_page(url) as page:
        start(page, "bench-alone")
        no_model(page)
        alone = label(page, ws_dir, n, use_model=False)
    with open_page(url) as page:
        start(page, "bench-with-model")
        helped = label(page, ws_dir, n, use_model=True)
    vs = {v["name"]: v for v in agreement.model_agreement(Workspace(ws_dir))}.get("bench-with-model", {})
    return {"responses": n, "same_responses": alone.finished == helped.finished,
            "keys_per_response_alone": round(alone.per_response(), 2),
            "keys_per_response_with_model": round(helped.per_response(), 2),
            "accept_presses": helped.accepts, "accepted_without_checking": helped.sure_accepts,
            **accepted_figures(ws_dir, "bench-with-model"), "own_verdicts_beside_the_model": vs.get("steps"),
            "own_verdicts_agreeing": vs.get("agree"), "first_wrong_step_agrees": vs.get("first_agree")}


def main() -> None:
    from browser import running_app

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workspace", required=True)
    ap.add_argument("--run", default="latest")
    ap.add_argument("--responses", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t0 = time.time()
    src = Workspace(args.workspace)
    run = catalog.scorer_runs(src, ("process",))[0][1] if args.run == "latest" else args.run
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(Path(tmp) / "ws")
        copy_run(src, ws, run)
        sampled = fresh_responses(ws, args.responses, args.seed)
        with running_app(ws.root, seed=False) as app:
            out = measure(app.url, ws.root, args.responses)
    out.update(run=run, sampled=sampled, seconds=round(time.time() - t0, 1))
    print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in out.items()}, indent=1))


if __name__ == "__main__":
    main()
