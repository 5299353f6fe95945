"""Which executor runs a run's steps: GUI_ASSETS_EXECUTOR, read when the code location loads.

in_process    (default) every step in the run's own process. A partition's heavy stage
              already uses every core through its own thread pool, and a step then costs
              milliseconds instead of a new Python process (about 1.5 s here).
multiprocess  Dagster's default: a process per step, steps of a run in parallel.
"""

from __future__ import annotations

import dagster as dg

from gui_assets.pipeline import settings

EXECUTORS = settings.EXECUTOR.choices


def executor_from_env() -> dg.ExecutorDefinition:
    name = settings.EXECUTOR.value() or "in_process"  # a bad value raises SettingError, naming them
    if name == "in_process":
        return dg.in_process_executor
    if name == "multiprocess":
        return dg.multiprocess_executor
    if name == "celery":
        from dagster_celery import celery_executor  # the `scale` extra

        broker = {"env": settings.CELERY_BROKER.name}
        has_backend = bool(settings.CELERY_BACKEND.read())
        backend = {"env": settings.CELERY_BACKEND.name} if has_backend else broker
        return celery_executor.configured({"broker": broker, "backend": backend}, name="celery")
    from dagster_k8s import k8s_job_executor  # "k8s", the last choice; the `scale` extra

    return k8s_job_executor
