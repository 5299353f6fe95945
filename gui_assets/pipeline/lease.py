"""One run at a time per partition: a lease on the partition's work folder.

Two runs building one partition at once would remove each other's work (the first to publish
clears the shard units the other is still writing). Every stage of a run claims the partition's
lease before it writes: the first claim takes it, later claims of the same run confirm it, and a
claim while another run holds it fails at once, naming that run. A lease needs no release: it is
free once its run is over. Whether it is over is asked of the Dagster instance when that knows
the run; else (another DAGSTER_HOME) the run's process is looked for, on this host.

`<out>/_work/<directory>/lease.json` holds {run_id, host, pid, since}; `lease.lock` serializes
the claims (flock). Deleting lease.json frees the partition by hand.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from gui_assets.core.atomic import atomic_write_text, file_lock

LEASE = "lease.json"
LOCK = "lease.lock"


class PartitionBusy(Exception):
    """Another run holds the partition; the message names it."""


@dataclass(frozen=True, slots=True)
class Holder:
    run_id: str
    host: str
    pid: int | None  # the run's own process (None: a step on a machine of its own)
    since: float

    def describe(self) -> str:
        where = f" (process {self.pid} on {self.host})" if self.pid else f" (on {self.host})"
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(self.since))
        return f"run {self.run_id}{where}, since {started} UTC"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def holds(holder: Holder, run_finished: Callable[[str], bool | None]) -> bool:
    """Whether `holder`'s run is still going: not finished by the instance's word, and its
    process (when it is on this host) still there."""
    finished = run_finished(holder.run_id)
    if finished:
        return False
    if holder.host == socket.gethostname() and holder.pid is not None:
        return _alive(holder.pid)
    return True  # another host, or a run this instance does not know: taken at its word


def read_holder(work: Path) -> Holder | None:
    try:
        d = json.loads((work / LEASE).read_text(encoding="utf-8"))
        return Holder(str(d["run_id"]), str(d["host"]), d.get("pid"), float(d["since"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None  # none, or unreadable: nobody can be shown to hold it


def claim(
    work: Path, directory: str, run_id: str, run_pid: int | None, run_finished: Callable[[str], bool | None]
) -> Holder:
    """Take or confirm `directory`'s lease for `run_id`; PartitionBusy when another run holds it."""
    with file_lock(work / LOCK):
        current = read_holder(work)
        if current is not None and current.run_id != run_id and holds(current, run_finished):
            raise PartitionBusy(
                f"{directory}: another run is building this partition: {current.describe()}. "
                f"Wait for it to finish (or, if it is gone, delete {work / LEASE})"
            )
        since = current.since if current is not None and current.run_id == run_id else time.time()
        mine = Holder(run_id, socket.gethostname(), run_pid, since)
        atomic_write_text(work / LEASE, json.dumps(asdict(mine)))
        return mine
