"""Which runs a run used, and which runs used it: an RLOO run rewarded by a reward-model or process-reward run names
it in its config.yaml (reward_model_run / process_reward_run), and nothing else records the link. Read from the
config.yaml files, so a run launched from the CLI or another process is linked the same way."""
from __future__ import annotations

from dataclasses import dataclass, field

import yaml

from rloo_studio.core.workspace import Workspace
from rloo_studio.runs import catalog

# (config key that names a run, the reward function that reads that run, the run in words). A key set while its
# reward is not among `rewards` is left over from a form and rewarded nothing, so it is no link.
SCORER_KEYS = (("reward_model_run", "reward_model", "reward model"),
               ("process_reward_run", "process_reward", "process reward model"))


@dataclass
class RunLinks:
    uses: list[tuple[str, str]] = field(default_factory=list)  # (what it was in words, run id), as configured
    used_by: list[str] = field(default_factory=list)  # the runs whose config names this one, oldest first


def used(config: dict) -> list[tuple[str, str]]:
    """(what in words, run id) of the runs a run's config (its config.yaml as a dict) rewarded it with."""
    rewards = config.get("rewards")
    out = []
    for key, reward, words in SCORER_KEYS:
        rid = str(config.get(key) or "").strip()
        if rid and (not isinstance(rewards, list) or reward in rewards):
            out.append((words, rid))
    return out


def run_links(ws: Workspace) -> dict[str, RunLinks]:
    """Every run's links, both ways, by run id (a run without any has an empty RunLinks)."""
    runs = ws.runs()
    out = {r["id"]: RunLinks() for r in runs}
    for r in reversed(runs):  # oldest first, so that 'used by' lists runs in the order they were made
        for words, rid in _used(ws, r["id"]):
            out[r["id"]].uses.append((words, rid))
            if rid in out:
                out[rid].used_by.append(r["id"])
    return out


# config.yaml path -> (its size and time, the runs it names). The Runs tab asks every few seconds, and parsing every
# run's commented YAML took most of the table's time; a run's config.yaml is written once (a resume keeps it).
_SEEN: dict[str, tuple[tuple[int, int], list[tuple[str, str]]]] = {}


def _used(ws: Workspace, run_id: str) -> list[tuple[str, str]]:
    """`used` of the run's config.yaml; [] when it is missing or unreadable (the row is still listed, unlinked)."""
    path = ws.run_dir(run_id) / "config.yaml"
    try:
        st = path.stat()
    except OSError:
        return []
    stamp = (st.st_mtime_ns, st.st_size)
    if str(path) in _SEEN and _SEEN[str(path)][0] == stamp:
        return list(_SEEN[str(path)][1])
    try:
        data = catalog.run_config(ws, run_id)
    except yaml.YAMLError:
        data = {}
    found = used(data) if isinstance(data, dict) else []
    _SEEN[str(path)] = (stamp, found)
    return list(found)


def links_text(links: RunLinks, known: set[str] | None = None) -> str:
    """The links in words, one line each: 'rewarded by prm-… (process reward model)', 'rewarded rloo-…, rloo-…'.
    A run in `known` (the workspace's run ids) that is gone is said to be deleted."""
    gone = (lambda rid: known is not None and rid not in known)  # noqa: E731
    lines = [f"rewarded by {rid} ({words}{', deleted' if gone(rid) else ''})" for words, rid in links.uses]
    if links.used_by:
        lines.append("rewarded " + ", ".join(links.used_by))
    return "\n".join(lines)
