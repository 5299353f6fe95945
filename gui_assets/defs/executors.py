"""Which executor runs a run's steps: GUI_ASSETS_EXECUTOR, read when the code location loads.

in_process    (default) every step in the run's own process. A partition's heavy stage
              already uses every core through its own thread pool, and a step then costs
              milliseconds instead of a new Python process (about 1.5 s here).
multiprocess  Dagster's default: a process per step, steps of a run in parallel.
"""

from __future__ import annotations

import os

import dagster as dg

EXECUTORS = ("in_process", "multiprocess")


def executor_from_env() -> dg.ExecutorDefinition:
    name = (os.environ.get("GUI_ASSETS_EXECUTOR") or "in_process").strip().lower()
    if name == "in_process":
        return dg.in_process_executor
    if name == "multiprocess":
        return dg.multiprocess_executor
    raise ValueError(f"GUI_ASSETS_EXECUTOR must be one of {', '.join(EXECUTORS)}, not {name!r}")
