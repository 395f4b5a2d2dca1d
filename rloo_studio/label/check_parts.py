"""Check a big JSONL file's rows on every core: the file is cut at line ends into one part per core, and each part
is read, checked and spooled by its own process (python -m rloo_studio.label.check_parts), into a temporary file
of the caller's (an unlinked file, handed over by its descriptor: a killed import leaves nothing behind).

Why processes: reading and checking a row is Python work (JSON, the shapes' checks, pickling), 8 s of CPU at
1,000,000 rows, which one process does on one core while the others wait; threads would queue for Python's lock.
The parts' rows come back in file order, their errors name the file's own line numbers, and the first part with
an error gives the error, as a one-process read would (every row before it is valid)."""
from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import tempfile
from pathlib import Path

from rloo_studio.core.errors import DataError
from rloo_studio.label.checking import check_all, record
from rloo_studio.label.reading import MAX_ROWS, Progress, jsonl_lines

PARALLEL_BYTES = 32 * 2 ** 20  # a smaller file is checked in the caller's process (a process starts in ~0.1 s)
MAX_PARTS = 4
ROOT = Path(__file__).resolve().parents[2]  # the folder holding rloo_studio, for the parts' `python -m`


def parts_for(p: Path) -> int:
    """How many processes check this file: one per core (at most MAX_PARTS) for a big JSONL file of lines, else 1."""
    if p.suffix.lower() not in (".jsonl", ".json", ".ndjson") or p.stat().st_size < PARALLEL_BYTES:
        return 1
    with open(p, "rb") as f:
        if f.read(1) == b"[":  # a whole-file JSON array is read whole
            return 1
    if os.name != "posix":  # (a descriptor is handed to each part: POSIX only)
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1  # (macOS)
    return max(1, min(MAX_PARTS, cores))


def split(p: Path, n: int) -> list[tuple[int, int, int]]:
    """(start byte, end byte, number of the first line) of n parts of the file, each cut at a line end."""
    size, cuts = p.stat().st_size, [0]
    with open(p, "rb") as f:
        for k in range(1, n):
            f.seek(max(cuts[-1], size * k // n))
            f.readline()
            cuts.append(f.tell())
        cuts.append(size)
        lines, starts = 1, []
        f.seek(0)
        for a, b in zip(cuts, cuts[1:]):
            starts.append(lines)
            left = b - a
            while left:
                block = f.read(min(left, 16 * 2 ** 20))
                lines, left = lines + block.count(b"\n"), left - len(block)
    return [(a, b, first) for a, b, first in zip(cuts, cuts[1:], starts) if b > a]


def check_in_parts(p: Path, kind: str, resp_cols: list[str], spool_dir: Path, progress: Progress | None = None):
    """Check every row of the file in parts; the spools (open temporary files, in file order), the rows' number
    and their extra columns. A DataError for the first bad row, as a one-process read gives it."""
    p, spools, procs = p.resolve(), [], []
    try:
        for start, end, first in split(p, parts_for(p)):
            spool, err = (tempfile.TemporaryFile(dir=spool_dir, prefix="import-") for _ in range(2))
            spools += [spool, err]
            job = {"path": str(p), "start": start, "end": end, "first_line": first, "kind": kind,
                   "resp_cols": resp_cols, "fd": spool.fileno()}
            procs.append(subprocess.Popen([sys.executable, "-m", "rloo_studio.label.check_parts", json.dumps(job)],
                                          stdout=subprocess.PIPE, stderr=err, bufsize=0, pass_fds=[spool.fileno()],
                                          env={**os.environ, "PYTHONPATH": _path()}))
        finals = _follow(p, procs, spools[1::2], progress)
    except BaseException:
        for s in spools:
            s.close()
        raise
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
    for err in spools[1::2]:
        err.close()
    spools = spools[::2]
    error = next((f["error"] for f in finals if "error" in f), None)
    n = sum(f.get("rows", 0) for f in finals)
    if error or n > MAX_ROWS or not n:
        for s in spools:
            s.close()
        raise DataError(error or (f"{p.name}: more than {MAX_ROWS:,} rows; split the file" if n
                                  else f"{p.name}: the file has no rows"))
    for s in spools:
        s.seek(0)
    return spools, n, {c for f in finals for c in f["columns"]}


def _path() -> str:
    return os.pathsep.join([str(ROOT)] + [x for x in [os.environ.get("PYTHONPATH")] if x])


def _follow(p: Path, procs, errs, progress: Progress | None) -> list[dict]:
    """Read the parts' reports as they come (bytes read so far; at the end, rows and columns or the error). Their
    stdout is unbuffered here: a line read is never left waiting in a buffer that select() does not see."""
    size, done, finals = p.stat().st_size, [0] * len(procs), [{} for _ in procs]
    sel = selectors.DefaultSelector()
    for k, proc in enumerate(procs):
        sel.register(proc.stdout, selectors.EVENT_READ, k)
    while sel.get_map():
        for key, _ in sel.select():
            k, line = key.data, key.fileobj.readline()
            if not line:
                sel.unregister(key.fileobj)
                continue
            msg = json.loads(line)
            if "bytes" in msg:
                done[k] = msg["bytes"]
                if progress:
                    progress(sum(done) / size, f"reading {p.name} in {len(procs)} parts: {sum(done) / 2 ** 20:,.0f} "
                                               f"of {size / 2 ** 20:,.0f} MB")
            else:
                finals[k] = msg
    for k, proc in enumerate(procs):
        if proc.wait() != 0 or not finals[k]:
            errs[k].seek(0)
            err = errs[k].read().decode("utf-8", "replace").strip().splitlines()
            raise RuntimeError(f"checking part {k + 1} of {p.name} failed: {err[-1] if err else proc.returncode}")
    return finals


def _check_part(job: dict) -> dict:
    """One part: its rows checked and spooled (checking.check_all) into the file descriptor it was given."""
    p, end = Path(job["path"]), job["end"]
    with open(p, "rb") as f, open(job["fd"], "wb", closefd=False) as spool:
        f.seek(job["start"])

        def rows():
            for i, obj in jsonl_lines(p, f, job["first_line"], end):
                yield record(job["kind"], job["resp_cols"], obj, f"{p.name} line {i}")
                if i % 5000 == 0:
                    print(json.dumps({"bytes": f.tell() - job["start"]}), flush=True)
        try:
            n, columns = check_all(rows(), spool)
        except DataError as e:
            return {"error": str(e)}
    print(json.dumps({"bytes": end - job["start"]}), flush=True)
    return {"rows": n, "columns": sorted(columns)}


if __name__ == "__main__":
    print(json.dumps(_check_part(json.loads(sys.argv[1]))), flush=True)
