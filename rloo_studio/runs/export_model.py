"""Export an RLOO run's policy for serving: the trained LoRA adapter alone, or merged into its base model.

Merged: the base model the run was launched with is loaded in full precision with transformers (a run
that trained on a 4-bit copy is merged into the full-precision weights, and the result says so), the
adapter is applied with PEFT and folded in (`merge_and_unload`), and the result is written as a
standard safetensors folder with the tokenizer and its chat template: `AutoModelForCausalLM.
from_pretrained(DIR)` loads it, no PEFT needed. Adapter alone: the trained adapter and the tokenizer,
without the frozen reference copy (`ref/`) that TRL's RLOOTrainer saves beside it and without the
pickled training arguments.

Both write `rloo_studio_export.json` into the folder: which run, which base, merged or not, 4-bit or not.

From the app, an export is a job of kind 'export' (`export_job`, one `ExportConfig`): it runs on the job
runner like the other jobs, so the page never waits on it, it shows its stage, and its result (the folder
written) stays in the Runs table after a reload.
"""
from __future__ import annotations

import json
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from rloo_studio.core.errors import DataError
from rloo_studio.core.paths import outside_allowed, typed_path
from rloo_studio.core.workspace import Workspace
from rloo_studio.runs.catalog import adapter_dir, find_run, run_config
from rloo_studio.runs.jobs import article, policy_kinds, title
from rloo_studio.runs.runner import ACTIVE

INFO_FILE = "rloo_studio_export.json"
# Files of a saved adapter folder that a server does not need: TRL's frozen reference adapter and the
# Trainer's pickled arguments (a pickle is code; never hand one on).
_LEFT_OUT = {"ref", "training_args.bin"}


@dataclass
class ExportResult:
    run_id: str
    out: str
    merged: bool
    base: str
    base_4bit: bool  # the run trained on a 4-bit copy of the base (a merge uses the full-precision base)
    dtype: str  # of the written weights
    files: list[str]

    def summary(self) -> str:
        what = "merged model (base + adapter, loads with AutoModelForCausalLM.from_pretrained)" if self.merged \
            else "adapter alone (load it on top of its base with PEFT)"
        s = f"Exported run {self.run_id} to {self.out}: {what}; base {self.base}, {self.dtype}."
        if self.base_4bit:
            s += (" The run trained on a 4-bit copy of the base; " + (
                "the adapter was merged into the full-precision base weights, not into the 4-bit ones."
                if self.merged else "load the adapter on the full-precision base or on a 4-bit one."))
        return s


def check_out(out: str | Path) -> Path:
    """The export folder: new, or an existing empty folder. Anything else is refused in plain words."""
    if not str(out or "").strip():
        raise DataError("No export folder given: type the folder to write the model to (a new or empty folder).")
    p = typed_path(out, "export folder")
    if p.exists() and not p.is_dir():
        raise DataError(f"{p} is a file, not a folder: choose a new or empty folder to export to.")
    if p.is_dir() and any(p.iterdir()):
        raise DataError(f"{p} already exists and is not empty: choose a new or empty folder, so that nothing "
                        "in it is overwritten.")
    return p


def run_adapter(ws: Workspace, run_id: str) -> tuple[str, Path, dict]:
    """(run id, adapter folder, run config) of an RLOO run that saved its adapter; a DataError otherwise."""
    typed = str(run_id or "").strip()
    if len(policy_kinds()) == 1 and (not typed or ws.run(typed) is None):
        find_run(ws, typed, policy_kinds()[0])  # "There is no RLOO run ...": raises, naming what to pick
    r = find_run(ws, run_id)
    if r["kind"] not in policy_kinds():
        what, policy = title(r["kind"]), " or ".join(title(k) for k in policy_kinds())
        raise DataError(f"{r['id']} is {article(what)} {what} run: only {article(policy)} {policy} run's trained "
                        f"policy can be exported as a model. Pick {article(policy)} {policy} run.")
    rid = r["id"]
    if r["status"] in ACTIVE:
        raise DataError(f"Run {rid} is still {r['status']}: export it once it has finished (stopping it saves "
                        "its adapter).")
    ad = adapter_dir(ws, rid)
    if not (ad / "adapter_config.json").exists():
        raise DataError(f"Run {rid} saved no adapter (did it fail before training ended?): nothing to export.")
    cfg = run_config(ws, rid)
    return rid, ad, cfg


def resolve_out(ws: Workspace, typed: str | Path) -> Path:
    """A folder typed in the app: an absolute path as it is, a bare name (or relative path) under exports/."""
    if not str(typed or "").strip():
        return check_out(typed)  # says that no folder was given
    p = typed_path(typed, "export folder")
    return p if p.is_absolute() else ws.exports_dir / p


def app_out(ws: Workspace, typed: str | Path) -> Path:
    """The export folder typed in the app (resolve_out), new or empty, and inside the folders the app may use
    (the workspace, the studio's assets, the Hugging Face cache, --allow-path: core.paths.ALLOWED_ROOTS): a page never
    writes elsewhere on the server's disk."""
    p = resolve_out(ws, typed)
    roots = outside_allowed(p)
    if roots:
        raise DataError(f"{p} is outside the folders this app may write to ({roots}): "
                        "type a bare name to export under the workspace's exports/ folder, or restart the app with "
                        "--allow-path FOLDER.")
    return check_out(p)  # looked at only once it is known to lie where the app may write


def default_out(ws: Workspace, run_id: str, merged: bool) -> Path:
    """exports/<run>-merged (or -adapter); -2, -3 ... when that folder is taken."""
    stem = f"{run_id}-{'merged' if merged else 'adapter'}"
    p, n = ws.exports_dir / stem, 1
    while p.exists() and (not p.is_dir() or any(p.iterdir())):
        n += 1
        p = ws.exports_dir / f"{stem}-{n}"
    return p


Progress = Callable[[int, int, str], None]  # (stage done, stages, what is happening now)


def export_model(ws: Workspace, run_id: str, out: str | Path, merged: bool = False,
                 progress: Progress | None = None) -> ExportResult:
    """Write run `run_id`'s adapter (merged=False) or base + adapter merged (merged=True) into `out`.

    Nothing is left behind when it fails: the folder is written under a temporary name and renamed at the end.
    `progress(done, total, what)` hears each stage."""
    say = progress or (lambda done, total, what: None)
    rid, ad, cfg = run_adapter(ws, run_id)
    dest = check_out(out)
    base = str(cfg.get("model") or json.loads((ad / "adapter_config.json").read_text()).get("base_model_name_or_path"))
    base_4bit = bool(cfg.get("load_in_4bit", False))
    tmp = dest.with_name(f".{dest.name}.partial-{int(time.time() * 1000)}")
    tmp.mkdir(parents=True)
    try:
        if merged:
            dtype = _write_merged(ad, base, tmp, say)
        else:
            say(0, 1, "copying the adapter")
            dtype = _write_adapter(ad, tmp)
        res = ExportResult(rid, str(dest.resolve()), merged, base, base_4bit, dtype, [])
        (tmp / INFO_FILE).write_text(json.dumps({**asdict(res), "exported": time.time()}, indent=1))
        res.files = sorted(p.name for p in tmp.iterdir())
        if dest.exists():
            dest.rmdir()  # checked empty above
        tmp.rename(dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    say(1, 1, "written")
    return res


@dataclass
class ExportConfig:
    """An export from the app, run as a job of kind 'export'."""

    run: str = field(default="", metadata={"help": "The RLOO run whose policy is exported."})
    out: str = field(default="", metadata={"help": "The folder to write: new, or an existing empty one."})
    merged: bool = field(default=True, metadata={"help": (
        "True: base + adapter merged into one full-precision model folder; False: the adapter alone.")})


def export_job(cfg: ExportConfig, ctx) -> str:
    """The job runner's function: export, reporting each stage; the final message is the result's summary."""
    def stage(done: int, total: int, what: str) -> None:
        ctx.set_progress(done, total, what)
        ctx.log(what)

    return export_model(ctx.ws, cfg.run, cfg.out, bool(cfg.merged), progress=stage).summary()


def _write_adapter(ad: Path, to: Path) -> str:
    for f in ad.iterdir():
        if f.name in _LEFT_OUT or f.is_dir():
            continue
        shutil.copy2(f, to / f.name)
    from safetensors import safe_open

    with safe_open(str(ad / "adapter_model.safetensors"), "pt") as st:
        keys = list(st.keys())
        name = st.get_slice(keys[0]).get_dtype() if keys else "F32"
    return {"F32": "float32", "BF16": "bfloat16", "F16": "float16", "F64": "float64"}.get(name, name.lower())


def _write_merged(ad: Path, base: str, to: Path, say: Progress) -> str:
    """Base in its stored precision (never 4-bit, on the CPU) + adapter, merged and saved as safetensors."""
    from rloo_studio.core.models import load_policy, load_tokenizer  # first: unsloth before transformers

    say(0, 3, f"loading the base model {base} in full precision")
    # trust as the run's user ticked it; 4-bit off whatever the run trained on: the merge goes into the full weights
    model, tok = load_policy(base, ad, of_run=True, load_in_4bit=False, dtype="auto", device=None)
    if (ad / "tokenizer_config.json").exists():
        tok = load_tokenizer(str(ad))  # the one the run saved (its chat template), no code of its own
    say(1, 3, "merging the adapter into the base weights")
    model = model.merge_and_unload()
    say(2, 3, "writing the safetensors folder")
    model.save_pretrained(str(to), safe_serialization=True)
    tok.save_pretrained(str(to))
    return str(next(model.parameters()).dtype).replace("torch.", "")
