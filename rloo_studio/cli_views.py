"""The CLI's commands that look at what the workspace holds, without training: `score` (a response with a reward
model or a process reward model, or every row of a file), `eval-prm` (a process reward run on ProcessBench's terms)
and `runs` (list, show one, compare); and what every
command shares: the --workspace and --trust-remote-code arguments, and progress on stderr. cli.py builds the parser
and runs the commands."""
from __future__ import annotations

import json
import os
import sys
import time
from contextlib import nullcontext

from rloo_studio.core.errors import DataError, StudioError
from rloo_studio.core.paths import DEFAULT_WORKSPACE
from rloo_studio.core.workspace import Workspace
from rloo_studio.runs import catalog, jobs, lifecycle, run_warnings
from rloo_studio.runs.jobs import KINDS
from rloo_studio.runs.runner import read_status


def _trust_arg(p, extra: str = "") -> None:
    p.add_argument("--trust-remote-code", action="store_true",
                   help="run Python code shipped with the model; only for a model whose source you trust" + extra)


def _workspace_arg(p) -> None:
    p.add_argument("--workspace", default=str(DEFAULT_WORKSPACE), help="workspace folder (default: %(default)s)")
    p.add_argument("--demo", action="store_true",
                   help="a new workspace starts with the bundled demo data (the default workspace always does)")


def parse_auth(value: str | None) -> tuple[str, str] | None:
    value = value or os.environ.get("RLOO_STUDIO_AUTH")
    if not value:
        return None
    user, sep, pw = value.partition(":")
    if not sep or not user or not pw:
        raise StudioError("--auth expects USER:PASSWORD (both non-empty)")
    return user, pw


PROGRESS_EVERY_S = 2.0  # a progress line at most this often; none for work that ends sooner


class StderrProgress:
    """progress(fraction, text) for long work from the command line: a bar and the text on stderr, one line
    redrawn on a terminal, else a line each time (a log), at most every PROGRESS_EVERY_S and at the end; nothing
    for work that ends within PROGRESS_EVERY_S, unless `eager` (the first call shows at once)."""

    def __init__(self, eager: bool = False):
        self.tty, self.last, self.shown = sys.stderr.isatty(), float("-inf") if eager else time.monotonic(), False

    def __call__(self, fraction: float, text: str) -> None:
        if time.monotonic() - self.last < PROGRESS_EVERY_S and not (fraction >= 1 and self.shown):
            return
        self.last, self.shown = time.monotonic(), True
        line = f"[{'#' * int(20 * fraction):<20}] {100 * fraction:3.0f}%  {text}"
        print(f"\r{line}\033[K" if self.tty else line, end="" if self.tty else "\n", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.tty and self.shown:
            print(file=sys.stderr, flush=True)


def cmd_score(a) -> int:
    from rloo_studio.inspect.scoring import score_json

    if a.file:
        return score_file(a)
    if a.prompt is None or a.response is None:
        raise DataError("score needs --prompt and --response, or --file with one JSON object per line.")
    ws = Workspace(a.workspace) if a.reward_run else None
    response = sys.stdin.read() if a.response == "-" else a.response
    if a.reward_run and catalog.scorer_of(ws, a.reward_run) == "process":
        return score_process(a, ws, response)
    think = None if a.enable_thinking is None else a.enable_thinking == "true"
    out = score_json(ws, a.reward_run, a.reward_model, a.prompt, response, a.split, a.trust_remote_code, think)
    if a.json:
        print(json.dumps(out))
    else:
        alone = "—" if out["answer"] is None else f"{out['answer']:+.4f}"  # None: cut before its answer
        print(f"total {out['total']:+.4f}  answer alone {alone}  ({out['reward_model']})"
              + ("  (truncated: reasoning never closed)" if out["truncated"] else ""))
        for k, s in enumerate(out["steps"], 1):
            print(f"  step {k:>2} {s['score']:+.4f} ({s['delta']:+.4f})  {s['text'][:60]!r}")
    return 0


def score_process(a, ws, response: str) -> int:
    """`score --reward-run PRM_RUN`: each <think> step's probability of being right (inspect/process.py)."""
    from rloo_studio.inspect.process import score_json as process_json

    out = process_json(ws, a.reward_run, a.prompt, response, a.split)
    if a.json:
        print(json.dumps(out))
        return 0
    doubt = out["first_doubt"]
    print(f"{len(out['steps'])} steps; min {_p(out['min'])}, product {_p(out['product'])}  ({out['reward_model']})"
          + (f"; first step it doubts: {doubt + 1}" if doubt is not None else "; it doubts no step")
          + ("  (truncated: reasoning never closed)" if out["truncated"] else ""))
    for k, s in enumerate(out["steps"], 1):
        print(f"  step {k:>2} p_correct {s['p_correct']:.3f}{'  <- doubted' if k - 1 == doubt else ''}  "
              f"{s['text'][:60]!r}")
    return 0


def _p(x) -> str:
    return "—" if x is None else f"{x:.3f}"


def score_file(a) -> int:
    """`score --file F`: every row of a JSON-lines file scored (inspect.dataset.score_rows), one JSON line out
    per row; progress on stderr; a reward run's scores kept in its folder (a second look is read)."""
    from rloo_studio.inspect.dataset import run_cache, score_rows
    from rloo_studio.inspect.scoring import load_scorer
    from rloo_studio.label.reading import iter_rows

    unit, numbered = iter_rows(a.file)
    numbers, rows = zip(*numbered) if (numbered := list(numbered)) else ((), ())
    ws = Workspace(a.workspace) if a.reward_run else None
    if a.reward_run and catalog.scorer_of(ws, a.reward_run) == "process":
        raise DataError("score --file reads rows with an outcome reward model (a reward-model run); for a "
                        "process-reward run, score one response at a time with --prompt and --response.")
    think = None if a.enable_thinking is None else a.enable_thinking == "true"
    scorer = load_scorer(ws, a.reward_run, a.reward_model, a.trust_remote_code, think)
    progress = StderrProgress(eager=True)

    def tell(p) -> None:
        left = f", about {lifecycle.describe_time(p.eta)} left" if p.eta is not None and p.done < p.total else ""
        progress(p.done / p.total if p.total else 1.0, f"scored {p.done:,} of {p.total:,} responses{left}")

    try:
        with run_cache(ws, a.reward_run, scorer) or nullcontext() as cache:  # a run's scores kept in its folder
            for row in score_rows(scorer, list(rows), cache, tell, list(numbers), unit.capitalize()):
                print(json.dumps(row, ensure_ascii=False))
    finally:
        progress.close()
    return 0


def cmd_runs(a) -> int:
    ws = Workspace(a.workspace)
    if a.action == "list":
        rows = catalog.summaries(ws)
        if not rows:
            print(f"No runs in {ws.root} yet: {', '.join(k.cli for k in jobs.trainable())} or the app start one.")
        for r in rows:
            print(f"{r['id']:34} {r['kind']:8} {r['status']:11} {r['duration_s']:>6}s  {r['figures']}")
        return 0
    if not a.run_ids:
        raise StudioError(f"runs {a.action} needs one or more run ids (see: runs list)")
    for rid in a.run_ids:
        if ws.run(rid) is None:
            raise StudioError(f"no run {rid} in {ws.root}")
    if a.action == "show" and a.step is not None:  # the token view of one step (rloo/tokens.py)
        from rloo_studio.rloo import tokens

        for rid in a.run_ids:
            rows = tokens.read_tokens(ws.run_dir(rid), step=a.step, prompt=a.prompt)
            groups = sorted({r["prompt"] for r in rows}) or [a.prompt if a.prompt is not None else 0]
            print("\n\n".join(tokens.describe([r for r in rows if r["prompt"] == k]) for k in groups))
        return 0
    if a.action == "show":
        for rid in a.run_ids:
            d = ws.run_dir(rid)
            kind = ws.run(rid)["kind"]
            extra = KINDS[kind].show_extra(d) if kind in KINDS else {}  # what the kind adds (runs.jobs.JobKind.show)
            print(json.dumps({**read_status(d), "folder": str(d),
                              "config": (d / "config.yaml").read_text() if (d / "config.yaml").exists() else None,
                              "last": catalog.last_values(catalog.read_metrics(d)), **extra,
                              "warnings": run_warnings.read(d)}, indent=1))
        return 0
    keys = a.metric or ["loss"]
    print("run".ljust(34) + "".join(k[:18].rjust(20) for k in keys))
    for rid in a.run_ids:
        last = catalog.last_values(catalog.read_metrics(ws.run_dir(rid)))
        print(rid.ljust(34) + "".join((f"{last[k]:.4g}" if k in last else "-").rjust(20) for k in keys))
    return 0


def add_score(sub) -> None:
    p = sub.add_parser("score", help="score a prompt + response with a reward model, per <think> step")
    _workspace_arg(p)
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--reward-run", metavar="RUN_ID", help="a trained reward-model run of the workspace (whole "
                   "response and each step's prefix), or a process-reward run (each step's probability of being right)")
    g.add_argument("--reward-model", metavar="PATH", help="a reward adapter folder, or a base model (untrained head)")
    p.add_argument("--prompt")
    p.add_argument("--response", help="the response text ('-' reads it from stdin)")
    p.add_argument("--file", metavar="JSONL", help="score every row instead: {prompt, response} rows get a score, "
                   "{prompt, chosen, rejected} rows both scores and the margin; one JSON line out per row")
    p.add_argument("--split", choices=["blank", "line", "sentence"], default="blank",
                   help="step split (default: %(default)s)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--enable-thinking", choices=["true", "false"], default=None,
                   help="hybrid chat templates (Qwen3): reasoning on or off (default: as the reward run was trained)")
    _trust_arg(p, " (a --reward-run uses what its run was told)")
    p.set_defaults(fn=cmd_score, loads_model=True)


def cmd_eval_prm(a) -> int:
    """`eval-prm`: a process reward run on ProcessBench's terms (prm/evaluate.py): F1 of the accuracy on erroneous rows
    (the first wrong step named exactly) and on correct rows (no step flagged)."""
    from rloo_studio.inspect.processbench import summary
    from rloo_studio.prm.evaluate import eval_prm

    ws = Workspace(a.workspace)
    progress = StderrProgress()
    try:
        out = eval_prm(ws, a.reward_run, a.file, a.threshold, a.held_out,
                       progress=lambda done, total: progress(done / total, f"judged {done:,} of {total:,} rows"))
    finally:
        progress.close()
    if a.json:
        print(json.dumps(out))
    else:
        on = f"file {a.file}" if a.file else "its held-out rows" if a.held_out else "the workspace's step labels"
        print(summary(out, f"process reward run {a.reward_run} on {on}"))
    return 0


def add_eval_prm(sub) -> None:
    p = sub.add_parser("eval-prm", help="measure a process reward run on ProcessBench's terms: F1 of the first wrong "
                                        "step named exactly (erroneous rows) and no step flagged (correct rows)")
    p.add_argument("--workspace", default=str(DEFAULT_WORKSPACE), help="workspace folder (default: %(default)s)")
    p.add_argument("--reward-run", required=True, metavar="RUN_ID", help="a process reward run of the workspace")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--file", metavar="FILE", help="a labeled set instead of the workspace's step labels: ProcessBench "
                   "(problem, steps, label), stepwise (prompt, completions, labels) or PRM800K's JSONL; JSONL, "
                   "Parquet or a datasets folder")
    g.add_argument("--held-out", action="store_true",
                   help="the run's own held-out rows (the rows its held-out figures were computed on)")
    p.add_argument("--threshold", type=float, default=None,
                   help="a step is flagged when its p_correct is below this (default: the studio's 0.5)")
    p.add_argument("--json", action="store_true", help="print one JSON object: " + ", ".join(_eval_keys()))
    p.set_defaults(fn=cmd_eval_prm, loads_model=True)


def _eval_keys() -> tuple[str, ...]:
    from rloo_studio.inspect.processbench import KEYS

    return KEYS


def add_runs(sub) -> None:
    p = sub.add_parser("runs", help="list runs, show one, or compare final metrics")
    p.add_argument("action", nargs="?", default="list", choices=["list", "show", "compare"])
    p.add_argument("run_ids", nargs="*")
    p.add_argument("--metric", action="append", help="metric to compare (repeatable; default loss)")
    p.add_argument("--step", type=int, default=None,
                   help="show: an RLOO step's token view (tokens.jsonl): each completion's advantage, Δ log-prob "
                        "and KL, per <think> step")
    p.add_argument("--prompt", type=int, default=None, help="show --step: only this prompt's group (0, 1, ...)")
    _workspace_arg(p)
    p.set_defaults(fn=cmd_runs)



def cmd_presets(a) -> int:
    """presets list [KIND] | show KIND NAME | cp KIND NAME FILE: the studio's preset files and the workspace's own."""
    from rloo_studio.core import presets

    root = a.workspace
    if a.action == "list":
        kinds = [a.args[0]] if a.args else [k.name for k in jobs.KINDS.values() if k.presets(root)]
        for kind in kinds:
            _kind_named(kind)
            for p in presets.listing(kind, root):
                print(f"{kind:<9} {p.label:<28} {p.description}")
        return 0
    if len(a.args) != (2 if a.action == "show" else 3):
        raise StudioError(f"presets {a.action} takes KIND NAME" + (" FILE" if a.action == "cp" else ""))
    kind, name = _kind_named(a.args[0]).name, a.args[1]
    if a.action == "show":
        p = presets.find(kind, name, root)
        print(f"# {p.path}\n" + p.path.read_text().rstrip())
        return 0
    to, home = presets.copy(kind, name, a.args[2], root), presets.user_dir(root, kind)
    print(f"copied to {to}: " + (f"listed as {to.stem} (yours) among this workspace's {kind} presets; edit it there"
                                 if to.parent == home else f"put it in {home} to list it among the {kind} presets"))
    return 0


def _kind_named(name: str):
    if name not in jobs.KINDS or not jobs.KINDS[name].cli:
        raise StudioError(f"unknown job kind {name!r}; choose one of {', '.join(k.name for k in jobs.trainable())}")
    return jobs.KINDS[name]


def add_presets(sub) -> None:
    p = sub.add_parser("presets", help="list the presets of each job kind, show one's file, copy one to change it")
    p.add_argument("action", choices=["list", "show", "cp"])
    p.add_argument("args", nargs="*", metavar="KIND NAME [FILE]",
                   help="show KIND NAME; cp KIND NAME FILE (a FILE.yaml, a folder, or a new preset's name, which goes "
                        "into the workspace's presets/KIND/)")
    _workspace_arg(p)
    p.set_defaults(fn=cmd_presets)


def plan_text(plan, no_workspace: str | None = None, given: list[str] | None = None) -> str:
    """What `train-<kind> --check` prints: the settings' verdict, the pre-flight, the memory line and its parts."""
    where = f"a {plan.card_gib:g} GiB card" if plan.card_gib is not None else "this machine"
    lines = [f"{KINDS[plan.kind].title} run, {' '.join(given or []) or 'default settings'}, planned for {where}:"]
    if plan.problem is None:
        lines.append("pre-flight: passed" + (f" (no workspace at {no_workspace}: its data was not checked)"
                                             if no_workspace else ""))
    elif plan.card_gib is not None:
        lines.append(f"pre-flight, on this machine (not judged when planning for a card): {plan.problem}")
    else:
        lines.append(f"pre-flight: {plan.problem}")
    lines.append(plan.line)
    width = max((len(k) for k, _ in plan.parts()), default=0)
    lines += [f"  {k:<{width}}  {v:>11}" for k, v in plan.parts()]
    verdict = "will not fit" if plan.fits is False else "does not pass its pre-flight" if not plan.passes else \
        "fits" if plan.fits else "passes (memory not checked: no GPU; --gpu-memory GIB plans for one)"
    lines.append(f"result: {verdict}")
    return "\n".join(lines)
