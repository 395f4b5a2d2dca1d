"""A million pairs in one workspace: import, re-import, a key press, Records, export, reward pre-flight, memory.

    .venv/bin/python bench/million.py [--rows 1000000] [--candidates 20000] [--repeats 5] [--compare OLD_TREE]
                                      [--compare-ws COPY_OF_THE_WORKSPACE_IN_THE_OLD_SCHEMA]
                                      [--only import,reimport,label,records,export,preflight,memory] [--keep DIR]

Builds, in a temporary folder (or --keep DIR, reused when it is there), a JSONL file of --rows preference rows
(demo-task prompts, a chosen response that reasons and is right, a rejected one that slips or skips the
reasoning: imported as labeled pairs) and a file of --candidates prompts with 3 candidate responses each (3 pairs
to label per prompt), imports both into one workspace through the real import path
(label.importing.import_file), then measures, each against its target:

  import     the --rows file into a new workspace: wall time and the peak RSS of the process (VmHWM; and of its
             checking processes, the largest: the memory in use at once is at most the sum), one
             subprocess per import so peaks are not shared; --compare OLD_TREE (a `git worktree` of an older
             commit) interleaves the same import run with that tree's code (new, old, new, old, ...)
  reimport   the same file again into the imported workspace: wall time, peak RSS, and that it adds nothing
             (pairs, labels, prompts, responses counted before and after)
  label      a key press -> next pair in the page (bench_label.time_browser: the app in Chromium, timed from the
             keydown to the frame that shows the next pair), or with --label-mode core the core level (save_on_screen +
             next_pair + progress), annotator ann0 timed while 4 others label in the background (bench_label.background)
  records    every Records search, filter and sort (label.records.query, as the Records tab's search() calls it:
             page 1 of 20 rows), a deep page, and the tab's filter choices (store.sources, records.annotators);
             the queries are interleaved, one uncounted round first; --compare alternates fresh processes of
             the two trees, one round each, and gives each query's ratio and whether both found as many pairs
  export     `export(ws, out.jsonl)` of every labeled pair, in a subprocess (wall time, peak RSS)
  preflight  the reward pre-flight as the Reward tab runs it (reward.job.preflight with its sample: token-length
             percentiles, over-length count) on the demo model's tokenizer, in a subprocess under a time limit
             (--preflight-limit); its parts timed apart
  memory     RSS of a process that opens the Studio on the workspace and computes the Label tab's first pair
             and the Records tab's first page, against the same on an empty workspace (interleaved subprocesses)

Prints one JSON line per measurement: medians, p95, ratios, the target and whether it is met, and the load
average (1-minute) at its start and end. An uncounted warm-up comes first wherever a step is repeated.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GB = 1024 ** 3


def load() -> float:
    return round(os.getloadavg()[0], 2)


def vm(key: str = "VmHWM") -> int:
    """Bytes of this process's VmHWM (peak RSS) or VmRSS, from /proc/self/status."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {key} in /proc/self/status")


def cpu_now() -> float:
    """CPU seconds of this process (user + system): less sensitive than wall time to other work on the machine."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def emit(**row) -> None:
    print(json.dumps(row), flush=True)


def pct(times: list[float]) -> dict:
    t = sorted(times)
    return {"n": len(t), "p50_ms": round(statistics.median(t), 1), "p95_ms": round(t[int(0.95 * (len(t) - 1))], 1),
            "max_ms": round(t[-1], 1)}


# -- the files --------------------------------------------------------------------------------------

def _problem(rng: random.Random, i: int) -> tuple[str, int, int]:
    from rloo_studio.core.demo_task import ITEMS, NAMES, TEMPLATES

    a, b = rng.randint(100, 999), rng.randint(100, 999)
    return rng.choice(TEMPLATES).format(a=a, b=b, name=rng.choice(NAMES), item=rng.choice(ITEMS)), a, b


def _slip(a: int, b: int, rng: random.Random) -> str:
    """A reasoning response with a wrong answer (a dropped carry or a slip), or one without reasoning."""
    from rloo_studio.core.demo_task import reasoning_steps

    wrong = a + b + rng.choice([-100, -10, -1, 1, 10, 100])
    if rng.random() < 0.5:
        return f"<think>\n\n</think>\n\nThe answer is {wrong}."
    return "<think>\n" + "\n\n".join(reasoning_steps(a, b)) + f"\n</think>\n\nThe answer is {wrong}."


def _right(a: int, b: int) -> str:
    from rloo_studio.core.demo_task import reasoning_steps

    return "<think>\n" + "\n\n".join(reasoning_steps(a, b)) + f"\n</think>\n\nThe answer is {a + b}."


def write_preferences(path: Path, n: int, seed: int = 0) -> None:
    """n distinct preference rows {prompt, chosen, rejected, answer} on demo-task prompts (a prompt may repeat)."""
    rng = random.Random(seed)
    with open(path, "w") as f:
        for i in range(n):
            prompt, a, b = _problem(rng, i)
            # the row number in the rejected answer's words keeps every pair distinct (810,000 problems x 5 templates)
            rejected = _slip(a, b, rng).replace("The answer is", f"Answer {i}:")
            f.write(json.dumps({"prompt": prompt, "chosen": _right(a, b), "rejected": rejected,
                                "answer": str(a + b)}) + "\n")


def write_candidates(path: Path, n: int, seed: int = 1) -> None:
    """n prompts with 3 candidate responses each (3 pairs each to label)."""
    rng = random.Random(seed)
    with open(path, "w") as f:
        for i in range(n):
            prompt, a, b = _problem(rng, i)
            prompt = f"{prompt} (candidate set {i})"
            f.write(json.dumps({"prompt": prompt, "responses": [_right(a, b), _slip(a, b, rng),
                                                                  f"The answer is {a + b + 1}."]}) + "\n")


# -- subprocess children: one measurement each, its own peak RSS ------------------------------------------

def child(args) -> None:
    """Run one measured step in this (fresh) process and print its JSON result. --tree: take the code from
    there (an older checkout, for --compare)."""
    if args.tree:
        sys.path.insert(0, str(Path(args.tree).resolve()))
    rss0 = vm("VmRSS")
    from rloo_studio.core.workspace import Workspace

    what = args.child
    t0, cpu0 = time.perf_counter(), cpu_now()
    out: dict = {}
    if what == "import":
        from rloo_studio.label.importing import import_file

        ws = Workspace(args.ws)
        before = counts(ws)
        rss0 = vm("VmRSS")  # after the imports, so that the peak growth is the import's
        t0, cpu0 = time.perf_counter(), cpu_now()
        res = import_file(ws, args.file)
        out = {"rows": res.rows, "pairs_written": res.pairs, "skipped": res.skipped, "labeled": res.labeled,
               "before": before, "after": counts(ws)}
    elif what == "export":
        from rloo_studio.label.exporting import export

        ws = Workspace(args.ws)
        rss0 = vm("VmRSS")
        t0, cpu0 = time.perf_counter(), cpu_now()
        res = export(ws, args.file)
        out = {"rows": res.rows, "ties": res.ties, "skipped": res.skipped, "bytes": Path(args.file).stat().st_size}
    elif what == "records":  # one round of every query (after a warm-up) with this tree's code
        times, totals, errors = time_records(Path(args.ws), 1)
        out = {"times": times, "totals": totals, "errors": errors}
    elif what == "preflight":
        out = preflight_child(args)
    elif what == "memory":
        out = memory_child(args)
        t0 = time.perf_counter() - out.pop("seconds")
    wall = time.perf_counter() - t0
    cpu, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    # the import's checking processes (label/check_parts.py): their CPU, and the largest one's peak RSS
    print(json.dumps({"wall_s": round(wall, 2), "cpu_s": round(cpu.ru_utime + cpu.ru_stime - cpu0, 2),
                      "children_cpu_s": round(kids.ru_utime + kids.ru_stime, 2),
                      "peak_rss_mb": round(vm("VmHWM") / 2 ** 20), "children_peak_rss_mb": round(kids.ru_maxrss / 1024),
                      "rss_start_mb": round(rss0 / 2 ** 20), **out}))


def counts(ws) -> dict:
    q = ws.query("SELECT (SELECT COUNT(*) FROM pairs), (SELECT COUNT(*) FROM labels), (SELECT COUNT(*) FROM prompts), "
                 "(SELECT COUNT(*) FROM responses)")[0]
    return {"pairs": q[0], "labels": q[1], "prompts": q[2], "responses": q[3]}


def run_child(what: str, ws: Path, file: Path | None = None, tree: str | None = None, timeout: float = 3600,
              extra: list[str] = ()) -> dict:
    cmd = [sys.executable, __file__, "--child", what, "--ws", str(ws)] + (["--file", str(file)] if file else []) \
        + (["--tree", tree] if tree else []) + list(extra)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"timed_out_s": timeout}
    if p.returncode != 0:
        raise RuntimeError(f"{what} failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])



def preflight_child(args) -> dict:
    """The reward pre-flight at this size as the Reward tab runs it (one streaming pass over the labels, lengths
    from a sample of PREFLIGHT_SAMPLE pairs), and its parts timed apart: resolving the labels (decided_pairs), the
    preference pairs as the job reads them, and tokenizing a sample of pairs (the rate; the job tokenizes all)."""
    from rloo_studio.core.models import load_tokenizer, resolve
    from rloo_studio.core.workspace import Workspace
    from rloo_studio.label.store import decided_pairs, preference_pairs
    from rloo_studio.reward.config import RewardJobConfig
    from rloo_studio.reward.job import PREFLIGHT_SAMPLE, _pair_length, pair_rows, preflight

    ws, cfg = Workspace(args.ws), RewardJobConfig()
    tok = load_tokenizer(resolve(cfg.model), cfg.trust_remote_code)
    out = {}
    if args.part == "parts":
        t0 = time.perf_counter()
        n = sum(1 for _ in decided_pairs(ws))
        out["decided_pairs_s"], out["decided"] = round(time.perf_counter() - t0, 2), n
        t0 = time.perf_counter()
        pairs = preference_pairs(ws)
        out["preference_pairs_s"], out["pairs"] = round(time.perf_counter() - t0, 2), len(pairs)
        sample = random.Random(0).sample(pairs, min(20_000, len(pairs)))
        del pairs
        t0 = time.perf_counter()
        lens = [_pair_length(tok, r) for r in pair_rows(tok, sample, cfg.enable_thinking)]
        dt = time.perf_counter() - t0
        out["tokenize_sample"], out["tokenize_pairs_per_s"] = len(sample), round(len(sample) / dt)
        out["tokenize_all_s_estimate"] = round(out["pairs"] / (len(sample) / dt), 1)
        out["sample_p50"] = sorted(lens)[len(lens) // 2]
    else:
        t0 = time.perf_counter()
        pf = preflight(ws, cfg, tok=tok, sample=PREFLIGHT_SAMPLE)  # as the Reward tab runs it
        out = {"preflight_s": round(time.perf_counter() - t0, 2), "pairs": pf["pairs"], "sampled": pf["sampled"],
               "lengths": pf["lengths"], "over_length": pf["over_length"]}
    return out


def memory_child(args) -> dict:
    """RSS of the app's process with this workspace open: the Studio, the built UI, the Label tab's first pair and
    progress line and the Records tab's first page with its filter choices (the core calls the tabs make)."""
    from rloo_studio.label import records, store
    from rloo_studio.studio import Studio
    from rloo_studio.ui.app import build_ui

    t0 = time.perf_counter()
    studio = Studio(args.ws, seed_demo=False)
    build_ui(studio)
    ws = studio.ws
    store.sources(ws)
    store.next_pair(ws, "memory", "memory-session")
    store.progress(ws, "memory")
    records.query(ws)
    records.annotators(ws)
    return {"rss_mb": round(vm("VmRSS") / 2 ** 20), "seconds": time.perf_counter() - t0, "pairs": counts(ws)["pairs"]}


# -- the steps ---------------------------------------------------------------------------------------

TARGETS = {"import": 60, "reimport": 30, "label_p95_ms": 150, "records_ms": 500, "export": 30, "preflight": 60,
           "memory_extra_mb": 1536, "import_peak_mb": 2048}


def step_import(d: Path, pref: Path, repeats: int, compare: str | None) -> Path:
    """Import the preference file into fresh workspaces (interleaved with --compare's tree); returns the last
    workspace of this tree's code, kept as the bench's workspace."""
    variants = [("now", None)] + ([("compare", compare)] if compare else [])
    small = d / "warmup.jsonl"
    if not small.exists():
        write_preferences(small, 10_000, seed=5)
    for name, tree in variants:  # uncounted warm-up: page cache, imports
        w = d / f"ws-warm-{name}"
        run_child("import", w, small, tree)
        shutil.rmtree(w)
    runs: dict[str, list[dict]] = {n: [] for n, _ in variants}
    keep = None
    for r in range(repeats):
        for name, tree in variants:
            w = d / f"ws-import-{name}-{r}"
            l0 = load()
            res = run_child("import", w, pref, tree)
            res["load_average"] = [l0, load()]
            runs[name].append(res)
            emit(step="import", variant=name, repeat=r, **res)
            if name == "now":
                if keep:
                    shutil.rmtree(keep)
                keep = w
            else:
                shutil.rmtree(w)
    for name, rs in runs.items():
        wall, peak = statistics.median(x["wall_s"] for x in rs), statistics.median(x["peak_rss_mb"] for x in rs)
        emit(step="import", variant=name, summary=True, rows=rs[0]["rows"], median_wall_s=wall, median_peak_rss_mb=peak,
             target_s=TARGETS["import"], met=wall <= TARGETS["import"], target_peak_mb=TARGETS["import_peak_mb"],
             peak_met=peak <= TARGETS["import_peak_mb"], loads=[x["load_average"] for x in rs])
    if compare:
        a, b = runs["now"], runs["compare"]
        emit(step="import", ratio_wall_now_over_compare=round(statistics.median(x["wall_s"] for x in a)
                                                              / statistics.median(x["wall_s"] for x in b), 3),
             ratio_peak_now_over_compare=round(statistics.median(x["peak_rss_mb"] for x in a)
                                               / statistics.median(x["peak_rss_mb"] for x in b), 3))
    return keep


def step_reimport(ws: Path, pref: Path, compare: str | None) -> None:
    for name, tree in [("now", None)] + ([("compare", compare)] if compare else []):
        l0 = load()
        res = run_child("import", ws, pref, tree)
        same = res["before"] == res["after"]
        emit(step="reimport", variant=name, **res, adds_nothing=same, target_s=TARGETS["reimport"],
             met=same and res["wall_s"] <= TARGETS["reimport"], load_average=[l0, load()])


def prepare_labels(ws_dir: Path, annotators: int = 5, share: float = 0.4, flagged: int = 200) -> None:
    """People's labels on `share` of the candidate pairs (written straight into SQLite, as bench_label.build does;
    the triggers keep the counts), a few ties and skips among them, and some flagged pairs."""
    from rloo_studio.core.workspace import Workspace

    ws = Workspace(ws_dir)
    if ws.query("SELECT COUNT(*) FROM annotators WHERE name LIKE 'ann%'")[0][0]:
        return
    rnd, now = random.Random(0), time.time()
    cand = [r[0] for r in ws.query("SELECT id FROM pairs WHERE n_import = 0 ORDER BY id")]
    done = cand[: int(len(cand) * share)]
    with ws.transaction() as con:
        anns = [con.execute("INSERT INTO annotators (name, created) VALUES (?, ?)", (f"ann{k}", now)).lastrowid
                for k in range(annotators)]
        rows = [(pid, anns[j % annotators], rnd.choice(["a", "b"] * 4 + ["tie", "skip"]), int(rnd.random() < 0.5),
                 now - len(done) + j) for j, pid in enumerate(done)]
        con.executemany("INSERT INTO labels (pair_id, annotator_id, choice, a_shown_left, created) "
                        "VALUES (?, ?, ?, ?, ?)", rows)
        con.executemany("INSERT OR IGNORE INTO pair_order (pair_id, annotator_id, a_shown_left) VALUES (?, ?, ?)",
                        ((r[0], r[1], r[3]) for r in rows))
        con.executemany("UPDATE pairs SET flag = 'bench' WHERE id = ?", ((pid,) for pid in rnd.sample(cand, flagged)))


def step_label(ws_dir: Path, labels: int, annotators: int = 5, pace: float = 2.0, mode: str = "browser") -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    from bench_label import background, stats, time_browser, time_core  # as bench_label.py --mode browser / core

    from rloo_studio.core.workspace import Workspace

    ws = Workspace(ws_dir)
    n = ws.query("SELECT COUNT(*) FROM pairs")[0][0]
    l0 = load()
    stop = threading.Event()
    bg = background(ws_dir, [f"ann{k}" for k in range(1, annotators)], pace, stop)
    driver = None
    try:  # the first 5 presses are the uncounted warm-up
        if mode == "browser":  # the app on this workspace, in Chromium, timed in the page (bench_label.py)
            times, driver = time_browser(ws_dir, "ann0", labels)
        else:
            times = time_core(ws, "ann0", labels)
    finally:
        stop.set()
        bg.join(30)
    s = stats(times)
    extra = {"driver": stats(driver)} if driver else {
        "note": "core only (save + next pair + progress); the page adds Gradio's round trip and the re-render"}
    emit(step=f"label_{mode}", pairs=n, annotators=annotators, labels=len(times), **s,
         target_p95_ms=TARGETS["label_p95_ms"], met=s["p95_ms"] <= TARGETS["label_p95_ms"] if mode == "browser"
         else None, load_average=[l0, load()], **extra)


def record_queries(ws) -> list[tuple[str, dict]]:
    """Every search, filter and sort of the Records tab (label.records.query), page 1 of 20 rows, and a deep page."""
    from rloo_studio.label import records, store

    sources = store.sources(ws)
    qs = [("all, newest (the tab's first page)", {}),
          ("search: a rare text", {"search": "candidate set 12345)"}),
          ("search: a common word", {"search": "apples"}),
          ("search: no match", {"search": "zzz-no-such-text"}),
          ("search: a rare response text", {"search": "Answer 749999:"}),
          ("search: a text in half the responses", {"search": "The answer is"}),
          ("search: a text in every response", {"search": "think"})]
    qs += [(f"source: {s}", {"source": s}) for s in sources]
    qs += [("annotator: ann1", {"annotator": "ann1"})]
    qs += [(f"label: {x}", {"label": x}) for x in records.LABELS if x != "any"]
    qs += [("annotator ann1 + label a", {"annotator": "ann1", "label": "a"})]
    qs += [(f"label: {x}, in ann1's letters (the tab's viewer)", {"label": x, "viewer": "ann1"}) for x in ("a", "b")]
    qs += [(f"flagged: {x}", {"flagged": x}) for x in records.FLAGGED if x != "any"]
    qs += [(f"sort: {x}", {"sort": x}) for x in records.SORTS]
    qs += [("page 25,000 (rows 500,001-500,020), newest", {"page": 25_000})]
    return qs


def time_records(ws_dir: Path, repeats: int, limit_s: float = 60) -> tuple[dict, dict, dict]:
    """({query: [ms]}, {query: matches}, {query: error}) of `repeats` rounds of every Records query, after an
    uncounted warm-up round."""
    from rloo_studio.core.workspace import Workspace
    from rloo_studio.label import records, store

    ws = Workspace(ws_dir)
    con = ws.connect()
    qs = record_queries(ws)
    calls = [(name, (lambda kw=kw: records.query(ws, per_page=20, **kw))) for name, kw in qs]
    calls += [("filter choices (store.sources + records.annotators)",
               lambda: (store.sources(ws), records.annotators(ws)))]
    pid = ws.query("SELECT MAX(id) FROM pairs")[0][0] // 2
    calls += [("a row clicked (records.pair + current_labels)",
               lambda: (records.pair(ws, pid), records.current_labels(ws, pid)))]
    times: dict[str, list[float]] = {n: [] for n, _ in calls}
    totals: dict[str, int] = {}
    errors: dict[str, str] = {}
    for r in range(repeats + 1):  # round 0: the uncounted warm-up
        for name, fn in calls:
            if name in errors:
                continue
            t0 = time.perf_counter()
            timer = threading.Timer(limit_s, con.interrupt)  # a query past the limit is stopped and said so
            timer.start()
            try:
                res = fn()
            except Exception as e:  # a broken or stopped query is reported, the others still measured
                errors[name] = (f"over {limit_s:.0f} s: stopped" if "interrupted" in str(e)
                                else f"{type(e).__name__}: {e}")
                continue
            finally:
                timer.cancel()
            dt = (time.perf_counter() - t0) * 1000
            if r:
                times[name].append(dt)
            if hasattr(res, "total"):
                totals[name] = res.total
    return times, totals, errors


def step_records(ws_dir: Path, repeats: int, compare: str | None = None, compare_ws: str | None = None) -> None:
    """Every Records query, `repeats` rounds in this process; with --compare, `repeats` fresh processes of each
    tree, alternating (now, old, now, old, ...), each timing one round after its warm-up (the old tree on
    compare_ws when given: a copy of the workspace in its schema)."""
    l0 = load()
    if compare:
        runs = {"now": [], "compare": []}
        for _ in range(repeats):
            for name, tree, ws in (("now", None, ws_dir), ("compare", compare, Path(compare_ws or ws_dir))):
                runs[name].append(run_child("records", ws, tree=tree))
        times = {v: {q: [t for rs in runs[v] for t in rs["times"][q]] for q in runs[v][0]["times"]} for v in runs}
        totals, errors = runs["now"][0]["totals"], runs["now"][0]["errors"]
        old_totals = runs["compare"][0]["totals"]
    else:
        times_now, totals, errors = time_records(ws_dir, repeats)
        times, old_totals = {"now": times_now}, {}
    l1 = load()
    for name in times["now"]:
        if name in errors:
            emit(step="records", query=name, error=errors[name])
            continue
        s = pct(times["now"][name])
        extra = {}
        if compare and times["compare"].get(name):
            old = pct(times["compare"][name])
            extra = {"compare_p50_ms": old["p50_ms"], "ratio_now_over_compare": round(s["p50_ms"] / old["p50_ms"], 3),
                     "same_matches": old_totals.get(name) == totals.get(name)}
        emit(step="records", query=name, matches=totals.get(name), **s, **extra, target_ms=TARGETS["records_ms"],
             met=s["p50_ms"] <= TARGETS["records_ms"], load_average=[l0, l1])


def step_export(ws: Path, d: Path) -> None:
    out = d / "export.jsonl"
    l0 = load()
    res = run_child("export", ws, out)
    emit(step="export", **res, target_s=TARGETS["export"], met=res["wall_s"] <= TARGETS["export"],
         load_average=[l0, load()])
    out.unlink(missing_ok=True)


def step_preflight(ws: Path, limit: float) -> None:
    l0 = load()
    parts = run_child("preflight", ws, extra=["--part", "parts"])
    emit(step="preflight_parts", **parts, load_average=[l0, load()])
    l0 = load()
    res = run_child("preflight", ws, timeout=limit, extra=["--part", "all"])
    met = "timed_out_s" not in res and res["preflight_s"] <= TARGETS["preflight"]
    emit(step="preflight", **res, target_s=TARGETS["preflight"], met=met, load_average=[l0, load()])


def step_memory(ws: Path, d: Path, repeats: int) -> None:
    from rloo_studio.core.workspace import Workspace

    empty = d / "ws-empty"
    Workspace(empty)
    got: dict[str, list[int]] = {"empty": [], "million": []}
    l0 = load()
    for r in range(repeats):
        for name, w in (("empty", empty), ("million", ws)):
            res = run_child("memory", w)
            got[name].append(res["rss_mb"])
            emit(step="memory", variant=name, repeat=r, **res)
    extra = statistics.median(got["million"]) - statistics.median(got["empty"])
    emit(step="memory", summary=True, empty_rss_mb=statistics.median(got["empty"]),
         million_rss_mb=statistics.median(got["million"]), extra_mb=extra, target_extra_mb=TARGETS["memory_extra_mb"],
         met=extra <= TARGETS["memory_extra_mb"], load_average=[l0, load()])
    shutil.rmtree(empty)


STEPS = ("import", "reimport", "label", "records", "export", "preflight", "memory")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="preference rows in the imported file")
    ap.add_argument("--candidates", type=int, default=20_000, help="prompts with 3 candidate responses each")
    ap.add_argument("--repeats", type=int, default=3, help="repeats of the records queries and the memory probe")
    ap.add_argument("--import-repeats", type=int, default=1, help="imports of the big file per variant")
    ap.add_argument("--labels", type=int, default=200, help="key presses timed")
    ap.add_argument("--label-mode", choices=["browser", "core"], default="browser",
                    help="a key press timed in the page (the app in Chromium) or the core's work alone")
    ap.add_argument("--compare", help="an older checkout (git worktree) whose import, re-import and Records queries "
                                      "run interleaved with this one")
    ap.add_argument("--compare-ws", help="a copy of the workspace for --compare's Records queries, made before this "
                                         "tree's schema changed it (an older tree refuses a newer schema)")
    ap.add_argument("--only", default=",".join(STEPS), help="steps to run, comma-separated: " + ",".join(STEPS))
    ap.add_argument("--keep", help="the folder for the files and the workspace (kept; reused when it is there)")
    ap.add_argument("--preflight-limit", type=float, default=900, help="seconds before the full pre-flight is stopped")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--part", help=argparse.SUPPRESS)
    ap.add_argument("--ws", help=argparse.SUPPRESS)
    ap.add_argument("--file", help=argparse.SUPPRESS)
    ap.add_argument("--tree", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    steps = [s for s in args.only.split(",") if s]
    d = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="million-"))
    d.mkdir(parents=True, exist_ok=True)
    pref, cand, ws = d / "preferences.jsonl", d / "candidates.jsonl", d / "ws"
    try:
        if not pref.exists():
            write_preferences(pref, args.rows)
            write_candidates(cand, args.candidates)
            emit(step="files", rows=args.rows, candidates=args.candidates, mb=round(pref.stat().st_size / 2 ** 20))
        if "import" in steps or not ws.exists():
            kept = step_import(d, pref, args.import_repeats, args.compare)
            shutil.rmtree(ws, ignore_errors=True)
            kept.rename(ws)
            l0 = load()
            res = run_child("import", ws, cand)
            emit(step="candidates import (building)", **res, load_average=[l0, load()])
            prepare_labels(ws)
        if "reimport" in steps:
            step_reimport(ws, pref, args.compare)
        if "label" in steps:
            step_label(ws, args.labels, mode=args.label_mode)
        if "records" in steps:
            step_records(ws, args.repeats, args.compare, args.compare_ws)
        if "export" in steps:
            step_export(ws, d)
        if "preflight" in steps:
            step_preflight(ws, args.preflight_limit)
        if "memory" in steps:
            step_memory(ws, d, args.repeats)
    finally:
        if not args.keep:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
