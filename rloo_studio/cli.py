"""Headless commands: the same core functions the UI calls.

    python -m rloo_studio serve       [--workspace DIR] [--host H] [--port P] [--auth USER:PASSWORD]
    python -m rloo_studio train-rloo   --workspace DIR [--config FILE.yaml] [--set key=value ...]
    python -m rloo_studio train-reward --workspace DIR [--config FILE.yaml] [--set key=value ...]
    python -m rloo_studio eval-demo   [--model PATH] [--adapter DIR] [--n 500]
    python -m rloo_studio runs [list | show RUN.. [--step N [--prompt K]] | compare RUN.. --metric KEY] --workspace DIR
    python -m rloo_studio score        --workspace DIR (--reward-run ID | --reward-model PATH) --prompt T --response T
                                       [--json]
    python -m rloo_studio score        --workspace DIR (--reward-run ID | --reward-model PATH) --file ROWS.jsonl
    python -m rloo_studio eval-prm     --workspace DIR --reward-run PRM_RUN [--file F | --held-out] [--threshold T]
                                       [--json]
    python -m rloo_studio import FILE  --workspace DIR [--name NAME] [--keep-duplicates]
    python -m rloo_studio export       --workspace DIR --out FILE [--format standard|conversational]
    python -m rloo_studio export-model RUN --workspace DIR --out DIR [--merged]
"""
from __future__ import annotations

import argparse
import json
import signal
import sys

from rloo_studio import cli_views
from rloo_studio.cli_views import StderrProgress, _trust_arg, _workspace_arg, parse_auth
from rloo_studio.core.config import build
from rloo_studio.core.errors import StudioError
from rloo_studio.core.paths import ASSETS
from rloo_studio.core.workspace import Workspace
from rloo_studio.label.demo_data import open_workspace, wants_demo
from rloo_studio.label.exporting import export, export_steps
from rloo_studio.label.importing import import_file
from rloo_studio.runs import jobs, lifecycle
from rloo_studio.runs.export_model import export_model
from rloo_studio.runs.jobs import KINDS, JobKind
from rloo_studio.runs.plan import check as check_plan
from rloo_studio.runs.runner import RunContext, execute, prepare_run


def _open(a) -> Workspace:
    """The command's workspace; a new one starts with the demo data when it is the default one or --demo asks."""
    return open_workspace(a.workspace, demo=wants_demo(a.workspace, a.demo))


def cmd_serve(a) -> int:
    from rloo_studio.core import paths
    from rloo_studio.studio import Studio
    from rloo_studio.ui.app import launch

    auth = parse_auth(a.auth)
    studio = Studio(a.workspace, seed_demo=wants_demo(a.workspace, a.demo))
    paths.restrict_to([studio.ws.root, ASSETS, *a.allow_path])
    print(f"RLOO Studio on http://{a.host}:{a.port}  workspace {studio.ws.root}  {studio.device['device']}", flush=True)
    launch(studio, a.host, a.port, auth, max_upload_mb=a.max_upload_mb)
    return 0


def _given_settings(a) -> list[str]:
    """The settings flags a command line gave (named as typed), which --resume refuses."""
    return ([f"--preset {a.preset}"] if a.preset else []) + ([f"--config {a.config}"] if a.config else []) \
        + [f"--set {s}" for s in a.set]


def _job_config(a, job: JobKind):
    """A new run's config: the kind's defaults, then --preset, then --config, then --set."""
    base = job.preset_config(a.preset, a.workspace) if a.preset else None  # the studio's, or the workspace's own
    return build(job.config_class(), a.config, a.set, base=base)


def _check(a, kind: str) -> int:
    """`train-<kind> --check [--gpu-memory GIB] [--fit]`: the pre-flight and the memory plan, printed; nothing
    starts. 0 when it passes, 2 when it will not fit or a check fails. Planning for a card (--gpu-memory) reads the
    workspace only if it exists and tells what this machine lacks (the model, the data) without failing on it."""
    from pathlib import Path

    if a.resume:
        raise StudioError("--check looks at a new run's settings; a resumed run continues its own saved config")
    cfg = _job_config(a, KINDS[kind])
    planning = a.gpu_memory is not None
    ws = _open(a) if not planning or Path(a.workspace).expanduser().exists() else None
    plan = check_plan(ws, kind, cfg, a.gpu_memory)
    if a.fit:
        print("fitted: " + ("; ".join(plan.changes) or "nothing to change"))
        if plan.changes:
            plan = check_plan(ws, kind, plan.fitted, a.gpu_memory)
    print(cli_views.plan_text(plan, a.workspace if ws is None else None, _given_settings(a)))
    return 0 if plan.passes else 2


def _train(a, kind: str) -> int:
    job = KINDS[kind]
    if a.check:
        return _check(a, kind)
    # Under `accelerate launch` every process runs this; they agree on one run folder, and only the
    # main process writes it (DDP / FSDP / DeepSpeed themselves are accelerate's and TRL's).
    from accelerate import PartialState

    state = PartialState()
    ctx = cfg = refused = None
    if state.is_main_process:  # creates and seeds a new workspace, and prepares the run, alone
        ws = _open(a)
        if job.demo_data and a.demo:  # the kind's own demo data (the process reward model's step labels), once
            jobs.load(job.demo_data)(ws)
        try:
            if a.resume:  # the saved config, never rebuilt from flags; settings given with it are refused
                rid, cfg = lifecycle.cli_resume_check(ws, kind, a.resume, _given_settings(a))
            else:
                cfg = _job_config(a, job)
                if a.fit:  # the nearest config that fits this machine's GPU (or the card --gpu-memory names)
                    cfg, _, changes = job.fit(cfg, ws, a.gpu_memory)
                    print("fitted: " + ("; ".join(changes) or "nothing to change"), flush=True)
                rid, cfg = None, lifecycle.new_run(ws, kind, cfg)
            lifecycle.refuse_if_busy(ws, None)
            ctx = prepare_run(ws, kind, cfg, rid)
        except StudioError as exc:
            refused = exc
    if state.num_processes > 1:  # the others open the workspace once the main process has made it
        from accelerate.utils import broadcast_object_list

        sent = (str(refused), None) if refused else (ctx.run_id, cfg) if ctx else None
        rid, cfg = broadcast_object_list([sent], from_process=0)[0]
        if cfg is None:  # the main process refused the run: every process says so and ends
            raise refused or StudioError(rid)
        if not state.is_main_process:
            ws = Workspace(a.workspace)
            ctx = RunContext(ws, rid, ws.run_dir(rid), main=False, kind=kind)
    if refused:
        raise refused
    # Ctrl-C stops gracefully: the trainer finishes its step and the adapter is saved.
    signal.signal(signal.SIGINT, lambda *_: ctx.stop_event.set())
    if state.is_main_process:
        print(f"run {ctx.run_id} in {ctx.dir}" + (" (resumed with its saved config)" if a.resume else ""), flush=True)
    status = execute(ws, ctx, kind, cfg, job.train_fn())
    if state.is_main_process:
        st = json.loads((ctx.dir / "status.json").read_text())
        print(f"{status}: {st.get('message', '')}")
    return 0 if status in ("completed", "stopped") else 1


def cmd_eval_demo(a) -> int:
    from rloo_studio.rloo.evaluate import evaluate_policy, figures_line

    m = evaluate_policy(a.model, a.adapter, n=a.n, seed=a.seed, backend=a.backend,
                        trust_remote_code=a.trust_remote_code)
    print(json.dumps(m))
    print(f"{figures_line(m)} ({m['n']} held-out prompts)", file=sys.stderr)  # the JSON line stays alone on stdout
    return 0


def cmd_import(a) -> int:
    progress = StderrProgress()
    try:
        res = import_file(_open(a), a.file, name=a.name, keep_duplicates=a.keep_duplicates, progress=progress)
    finally:
        progress.close()
    print(res.summary())
    return 0


def cmd_export(a) -> int:
    if a.steps:
        print(export_steps(_open(a), a.out, who=a.who).summary())
        return 0
    res = export(_open(a), a.out, a.format, ties_apart=a.ties_apart, test_fraction=a.test_fraction, seed=a.seed)
    print(res.summary())
    return 0


def cmd_export_model(a) -> int:
    print(export_model(Workspace(a.workspace), a.run, a.out, merged=a.merged).summary())
    return 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="rloo-studio",
                                 description="RLOO Studio: label, reward, inspect, RLOO (also: python -m rloo_studio).")
    sub = ap.add_subparsers(dest="cmd", required=True)
    for add in (_add_serve, _add_training, _add_data, _add_export_model, cli_views.add_score, cli_views.add_eval_prm,
                cli_views.add_runs, cli_views.add_presets):
        add(sub)
    return ap


def _add_serve(sub) -> None:
    p = sub.add_parser("serve", aliases=["app"], help="start the web app (rloo-studio app)")
    _workspace_arg(p)
    p.add_argument("--host", default="127.0.0.1",
                   help="interface to listen on (default: %(default)s, this machine only)")
    p.add_argument("--port", type=int, default=7860)
    p.add_argument("--auth", help="USER:PASSWORD required for every page and API call (or env RLOO_STUDIO_AUTH)")
    p.add_argument("--allow-path", action="append", default=[], metavar="DIR",
                   help="also let the app load models from this folder (default: workspace, assets, HF cache)")
    p.add_argument("--max-upload-mb", type=int, default=500, help="largest file the app accepts (default %(default)s)")
    p.set_defaults(fn=cmd_serve, loads_model=True)


def _add_training(sub) -> None:
    """train-rloo, train-reward and eval-demo."""
    from rloo_studio.core.config import settings_text

    for job in jobs.trainable():
        # --help lists every settable key with its default and help; the config classes load no torch
        p = sub.add_parser(job.cli, help=job.cli_help or f"train a {job.title} run headless",
                           epilog=settings_text(job.config_class()),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        _workspace_arg(p)
        p.add_argument("--preset", help="start from a preset "
                                        f"({', '.join(job.preset_names()).replace('%', '%%') or 'none yet'}), "
                                        "then --config, then --set")
        p.add_argument("--config", help="YAML file with config keys")
        p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="override a config key (the keys are listed below)")
        if job.memory:
            p.add_argument("--check", action="store_true",
                           help="print the pre-flight and the memory plan (its parts), start nothing; exit 0 when it "
                                "passes, 2 when it will not fit or a check fails")
            p.add_argument("--gpu-memory", type=float, metavar="GIB",
                           help="plan for a GPU of this many GiB, on any machine (with --check, or --fit)")
            p.add_argument("--fit", action="store_true",
                           help="change the settings to the nearest that fit (gradient checkpointing, generation "
                                "batch, 4-bit, micro-batch, lengths, in that order) before checking or training")
        if job.resumable:
            p.add_argument("--resume", metavar="RUN_ID", help="continue this run from its last checkpoint")
        p.set_defaults(fn=lambda a, k=job.name: _train(a, k), loads_model=True, resume=None, check=False,
                       gpu_memory=None, fit=False)
    p = sub.add_parser("eval-demo", help="format rate and accuracy of a policy on the demo held-out prompts, "
                                         "overall and among answers that reason and that do not")
    p.add_argument("--model", default=None, help="base model (default: the bundled demo model)")
    p.add_argument("--adapter", default=None, help="a trained LoRA adapter folder (e.g. runs/<id>/adapter)")
    p.add_argument("--backend", default="transformers")
    p.add_argument("--n", type=int, default=500)
    p.add_argument("--seed", type=int, default=1234)
    _trust_arg(p)
    p.set_defaults(fn=cmd_eval_demo, loads_model=True)


def _add_data(sub) -> None:
    """import and export of labeled data."""
    p = sub.add_parser("import", help="import preference pairs, candidates, stepwise step labels (prompt, completions, "
                                      "labels) or a prompt set (all or nothing)")
    p.add_argument("file", help="JSONL, CSV, Parquet, or a datasets folder")
    _workspace_arg(p)
    p.add_argument("--name", help="name of the prompt set / source (default: the file name)")
    p.add_argument("--keep-duplicates", action="store_true",
                   help="also import rows already in the workspace, as new pairs (by default they are skipped)")
    p.set_defaults(fn=cmd_import)
    p = sub.add_parser("export", help="export labeled, non-tie pairs as a TRL preference dataset")
    _workspace_arg(p)
    p.add_argument("--out", required=True, help="FILE.jsonl, FILE.parquet, or a folder (datasets save_to_disk)")
    p.add_argument("--format", default="standard", choices=["standard", "conversational"])
    p.add_argument("--ties-apart", action="store_true", help="also write ties to a separate file")
    p.add_argument("--test-fraction", type=float, default=0.0, help="hold out this share as a test split")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", action="store_true",
                   help="export step labels instead: prompt / completions / labels (stepwise supervision)")
    p.add_argument("--who", default="all",
                   help="with --steps: whose step labels: all, people, rollouts, or an annotator's name")
    p.set_defaults(fn=cmd_export)


def _add_export_model(sub) -> None:
    p = sub.add_parser("export-model", help="export an RLOO run's adapter, or base + adapter merged, for serving")
    p.add_argument("run", help="the RLOO run id (see: runs list)")
    p.add_argument("--out", required=True, help="a new or empty folder to write into")
    p.add_argument("--merged", action="store_true",
                   help="merge the adapter into its full-precision base (a safetensors model folder with its "
                        "tokenizer)")
    _workspace_arg(p)
    p.set_defaults(fn=cmd_export_model, loads_model=True)


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    if getattr(a, "loads_model", False):
        # Only commands that load a model pay for torch / Unsloth (and its banner): Unsloth must
        # patch TRL before transformers / trl / peft are imported. runs, import, export start fast.
        from rloo_studio.core import bootstrap  # noqa: F401
    try:
        return a.fn(a)
    except StudioError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
