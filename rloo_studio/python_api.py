"""The studio from Python: the same functions as the tabs and the CLI, for a notebook or a script.

    import rloo_studio as rs
    ws = rs.open_workspace("ws", demo=True)            # no torch is loaded for what touches no model
    rs.import_file(ws, "pairs.jsonl"); rs.export(ws, "out.jsonl")
    run = rs.train_reward(ws, preset="demo-cpu", max_steps=20)   # or config="file.yaml", or any setting by name
    run.wait()                                          # a progress bar: the step, the loss, the time left
    run.metrics()                                       # a pandas DataFrame of every logged record
    run.plot()                                          # the tab's charts, drawn inline
    rs.score(ws, run.id, "Add 820 and 634.", "<think>...</think> The answer is 1454.")
    rs.eval_prm(ws, prm_run.id, file="processbench.jsonl")   # a process reward run on ProcessBench's terms

Jobs run in this process on one job runner per workspace (the app's, when `rloo_studio.launch` serves the same
workspace in this kernel), one at a time, as in the app. A refused call raises the studio's error (StudioError)
with the words the tab would show.
"""
from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path
from typing import Any

from rloo_studio.core.config import build, from_dict
from rloo_studio.core.errors import DataError, StudioError
from rloo_studio.core.workspace import Workspace
from rloo_studio.runs import catalog, lifecycle
from rloo_studio.runs.jobs import KINDS, load
from rloo_studio.runs.runner import ACTIVE, JobRunner, read_jsonl, read_metrics

_RUNNERS: dict[Path, JobRunner] = {}
_LOCK = threading.Lock()


def open_workspace(path: str | Path, demo: bool = False) -> Workspace:
    """A workspace folder (made when it is not there; `demo` seeds a new one with the bundled demo data)."""
    from rloo_studio.label.demo_data import open_workspace as opened

    return opened(path, demo=demo)


def _ws(workspace) -> Workspace:
    return workspace if isinstance(workspace, Workspace) else open_workspace(workspace)


def use_runner(ws: Workspace, runner: JobRunner) -> None:
    """Jobs of this workspace go to `runner` (the app's, when it serves the workspace in this process)."""
    with _LOCK:
        _RUNNERS[ws.root] = runner


def runner_for(ws: Workspace) -> JobRunner:
    with _LOCK:
        if ws.root not in _RUNNERS:
            _RUNNERS[ws.root] = JobRunner(ws)
        return _RUNNERS[ws.root]


# -- data ----------------------------------------------------------------------------------------------------------

def import_file(workspace, path: str | Path, name: str | None = None, keep_duplicates: bool = False):
    """Import preference pairs, candidates, stepwise step labels or a prompt set (all or nothing); returns the
    import's result (`.summary()` says what was written)."""
    from rloo_studio.label.importing import import_file as imported

    return imported(_ws(workspace), path, name=name, keep_duplicates=keep_duplicates)


def export(workspace, out: str | Path, fmt: str = "standard", steps: bool = False, who: str = "all", **kw):
    """Export the labeled pairs as a TRL preference dataset (fmt standard or conversational), or with `steps` the
    step labels in the stepwise shape; returns the export's result (`.summary()`)."""
    from rloo_studio.label.exporting import export as exported
    from rloo_studio.label.exporting import export_steps

    ws = _ws(workspace)
    return export_steps(ws, out, who=who) if steps else exported(ws, out, fmt, **kw)


SESSION = "python:"  # + the annotator's name: the claim a script's next_pair holds (as the /next_pair API's)


def next_pair(workspace, annotator: str, filter: str = "unlabeled", source: str = "") -> dict | None:
    """The pair this annotator should label next, held for them as the Label tab holds the pair on screen:
    {pair_id, prompt, left, right, source, flag, current} in their A/B order (None when no pair is left)."""
    from rloo_studio.label import store

    shown = store.next_pair(_ws(workspace), annotator, SESSION + annotator, filter, source)
    if shown is None:
        return None
    return {"pair_id": shown.pair_id, "prompt": shown.prompt, "left": shown.left, "right": shown.right,
            "source": shown.source, "flag": shown.flag, "current": shown.current}


def label_pair(workspace, annotator: str, pair_id: int, choice: str, comment: str = "") -> int:
    """Label the pair next_pair handed to this annotator: 'left' or 'right' (the better one, as next_pair returned
    them), 'tie' or 'skip'; stored like a key press in the Label tab. Returns the label's id once committed."""
    from rloo_studio.label import store

    if choice not in ("left", "right", "tie", "skip"):
        raise DataError(f"choice must be 'left', 'right', 'tie' or 'skip', not {str(choice)[:40]!r}.")
    ws = _ws(workspace)
    held = store.next_pair(ws, annotator, SESSION + annotator)
    if not store.on_screen(held, pair_id):
        now = f"it holds pair {held.pair_id}" if held else "no pair is left to label"
        raise DataError(f"Pair {pair_id} is not the pair handed to {annotator} ({now}): call next_pair first.")
    try:
        return store.save_on_screen(ws, held, pair_id, annotator, SESSION + annotator, choice, comment)
    except ValueError as exc:  # no name, or a reserved one
        raise DataError(str(exc)) from None


# -- jobs ----------------------------------------------------------------------------------------------------------

def config(kind: str, preset: str | None = None, config_file: str | Path | None = None, workspace=None,
           **settings) -> Any:
    """A new run's config: the kind's defaults, then the preset (the studio's, or the workspace's own), then the YAML
    file, then each setting by name (nested ones as dicts: lora={"r": 8})."""
    job = _kind(kind)
    base = job.preset_config(preset, workspace) if preset else None
    cfg = build(job.config_class(), config_file, [], base=base)
    return from_dict(job.config_class(), settings, base=cfg) if settings else cfg


def train(kind: str, workspace, preset: str | None = None, config_file: str | Path | None = None, demo: bool = False,
          **settings) -> Run:
    """Start a new run of `kind` (train_reward, train_rloo, train_prm, label_steps are this for one kind); returns
    its handle at once. The kind's pre-flight refuses, in words, a run that could only fail. `demo`: first add the
    kind's own demo data where it has some (the process reward model's step labels, once per workspace), as the
    CLI's --demo does."""
    ws = _ws(workspace)
    job = _kind(kind)
    if demo and job.demo_data:
        load(job.demo_data)(ws)
    cfg = config(kind, preset, config_file, ws, **settings)
    return Run(ws, lifecycle.start(ws, runner_for(ws), kind, cfg))


def train_reward(workspace, preset=None, config_file=None, **settings) -> Run:
    return train("reward", workspace, preset, config_file, **settings)


def train_rloo(workspace, preset=None, config_file=None, **settings) -> Run:
    return train("rloo", workspace, preset, config_file, **settings)


def train_prm(workspace, preset=None, config_file=None, demo: bool = False, **settings) -> Run:
    """A process reward model on the workspace's step labels (`demo`: the demo's step labels added first)."""
    return train("prm", workspace, preset, config_file, demo, **settings)


def label_steps(workspace, preset=None, config_file=None, **settings) -> Run:
    """Step labels from rollouts (Math-Shepherd), as the Process reward tab makes them."""
    return train("rollouts", workspace, preset, config_file, **settings)


def run(workspace, run_id: str) -> Run:
    """The handle of an existing run (see list_runs())."""
    ws = _ws(workspace)
    return Run(ws, catalog.find_run(ws, run_id)["id"])


def list_runs(workspace):
    """Every run with its key figures, newest first, as a pandas DataFrame."""
    import pandas as pd

    return pd.DataFrame(catalog.summaries(_ws(workspace)))


def score(workspace, run_id: str, prompt: str, response: str, split: str = "blank") -> dict:
    """A response scored by a reward-model run (`total` and each step's prefix score) or a process-reward run
    (each step's `p_correct`), as `score --json` prints it."""
    from rloo_studio.inspect.scorers import score_json

    return score_json(_ws(workspace), run_id, prompt, response, split)


def eval_prm(workspace, run_id: str, file: str | Path | None = None, threshold: float | None = None,
             held_out: bool = False) -> dict:
    """A process reward run measured on ProcessBench's terms, as `eval-prm --json` prints it: {f1, erroneous_accuracy
    (the first wrong step named exactly), correct_accuracy (no step flagged), threshold, n, erroneous, correct,
    left_out}, on the workspace's step labels, on a file of step labels (ProcessBench, stepwise or PRM800K), or on the
    run's own held-out rows. A step is flagged when its p_correct is below `threshold` (default: the studio's 0.5)."""
    from rloo_studio.prm.evaluate import eval_prm as evaluated

    return evaluated(_ws(workspace), run_id, file, threshold, held_out)


def _kind(name: str):
    if name not in KINDS or not KINDS[name].cli:
        kinds = ", ".join(k.name for k in KINDS.values() if k.cli)
        raise StudioError(f"unknown job kind {name!r}; choose one of {kinds}")
    return KINDS[name]


@dataclasses.dataclass
class Run:
    """A run of the workspace: its state, its records, and what the tabs do with it (wait, stop, resume, plot)."""

    ws: Workspace
    id: str

    def __repr__(self) -> str:
        return f"Run({self.id!r}, {self.status!r})"

    @property
    def kind(self) -> str:
        return self.ws.run(self.id)["kind"]

    @property
    def folder(self) -> Path:
        return self.ws.run_dir(self.id)

    def state(self) -> dict:
        """The run's status.json, with its progress while this process runs it."""
        return runner_for(self.ws).status(self.id)

    @property
    def status(self) -> str:
        return self.state().get("status", "?")

    def wait(self, timeout: float | None = None, progress: bool = True) -> str:
        """Block until the run has ended (a progress bar with the step, the loss and the time left); returns its
        final status, and raises the run's failure in words when it failed."""
        bar, end = _bar(progress), time.time() + (timeout or 1e12)
        try:
            while (st := self.state()).get("status") in ACTIVE:
                if time.time() > end:
                    raise TimeoutError(f"run {self.id} is still {st.get('status')} after {timeout} s")
                _tick(bar, st, self.metrics_records())
                time.sleep(0.5)
        finally:
            if bar is not None:
                bar.close()
        st = self.state()
        if st.get("status") == "failed":
            raise StudioError(f"Run {self.id} failed: {st.get('message', '')}")
        return st.get("status")

    def stop(self) -> str:
        """Ask the run to stop (it finishes its step, then saves a checkpoint and its model)."""
        return lifecycle.stop(self.ws, runner_for(self.ws), self.id)

    def resume(self) -> Run:
        """Continue a stopped, failed or interrupted run from its last checkpoint, with its saved config."""
        lifecycle.resume(self.ws, runner_for(self.ws), self.kind, self.id)
        return self

    def metrics_records(self) -> list[dict]:
        return runner_for(self.ws).feed(self.id)

    def metrics(self):
        """Every logged record (one row per step and kind of record) as a pandas DataFrame."""
        import pandas as pd

        return pd.DataFrame(read_metrics(self.folder))

    def samples(self):
        """An RLOO run's completions (samples.jsonl: rewards, advantage, length) as a pandas DataFrame."""
        import pandas as pd

        path = self.folder / "samples.jsonl"
        if not path.exists():
            raise DataError(f"Run {self.id} recorded no completions (only RLOO runs do).")
        return pd.DataFrame(read_jsonl(path))

    def before_after(self) -> dict:
        """An RLOO run's held-out evaluation, read as the tab's before/after panel reads it: {'before': …, 'after': …},
        each with accuracy, format and reasoning rates (written when a run with eval_prompts > 0 ends)."""
        from rloo_studio.rloo.evaluate import read_eval_file

        ev = read_eval_file(self.folder)
        if not ev.get("after"):
            raise DataError(f"Run {self.id} has no before/after evaluation yet: an RLOO run with eval_prompts above 0 "
                            "writes one when it ends.")
        return ev

    def compare(self, n: int = 50):
        """The tab's "Compare base and trained": the same `n` held-out prompts answered by the base and the trained
        policy; (summary {'base': …, 'trained': …}, a DataFrame of prompt, answer, base, trained)."""
        import pandas as pd

        from rloo_studio.rloo.compare import compare

        res = compare(self.ws, catalog.find_run(self.ws, self.id, "rloo")["id"], int(n))
        return {k: res[k] for k in ("base", "trained")}, pd.DataFrame(res["rows"])

    def plot(self, show: bool = True) -> list:
        """The run's charts as its tab draws them (Plotly figures); shown inline in a notebook."""
        from rloo_studio.ui.charts import figure

        draw = KINDS[self.kind].chart_fn()
        if draw is None:
            raise DataError(f"A {self.kind} run has no charts.")
        figs = [figure(c) for c in draw(read_metrics(self.folder))]
        if show:
            for f in figs:
                f.show()
        return figs


def _bar(on: bool):
    if not on:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=None, unit="step", dynamic_ncols=True)


def _tick(bar, status: dict, records: list[dict]) -> None:
    if bar is None:
        return
    p = status.get("progress") or {}
    if p.get("total"):
        bar.total = p["total"]
        bar.n = p.get("done", 0)
    loss = next((r["loss"] for r in reversed(records) if isinstance(r.get("loss"), (int, float))), None)
    left = lifecycle.describe_time(p["eta_s"]) + " left" if p.get("eta_s") is not None else ""
    bar.set_postfix_str(", ".join(x for x in (f"loss {loss:.4g}" if loss is not None else "", left) if x))
    bar.refresh()
