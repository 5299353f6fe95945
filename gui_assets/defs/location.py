"""The code location for a list of sources: their chains and checks, the publishing assets, the
sensors, the executor and the resources. `gui_assets.definitions` passes the registry; a test
can pass any list."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence

import dagster as dg

from gui_assets.defs.executors import executor_from_env
from gui_assets.defs.export_checks import build_export_checks
from gui_assets.defs.factory import build_source_defs
from gui_assets.defs.overlap_assets import screen_overlap_check
from gui_assets.defs.repo_assets import build_repo_assets
from gui_assets.defs.resources import AlertsResource, BuildSettings, GuiAssetsPaths, HubResource
from gui_assets.defs.run_summary import RUN_SUMMARY_HOOKS
from gui_assets.defs.sensors import run_failure_alerts
from gui_assets.defs.upstream_assets import observation_defs
from gui_assets.sources.spec import SourceSpec

CORE_LOGGER = "gui_assets"  # the core's stdlib loggers are `logging.getLogger(__name__)`


class _ToDagsterLog(logging.Handler):
    """Hands the core's records to Dagster's captured logger, so each stage's progress lines are
    in its step's run log (the core never imports Dagster); Dagster's loggers judge the level."""

    def emit(self, record: logging.LogRecord) -> None:
        dg.get_dagster_logger().handle(record)


def route_core_logs() -> None:
    """Once per process, when the definitions are built: the `gui_assets` logger passes every
    record on to Dagster (its own level would otherwise be the root logger's WARNING)."""
    core = logging.getLogger(CORE_LOGGER)
    if not any(isinstance(h, _ToDagsterLog) for h in core.handlers):
        core.addHandler(_ToDagsterLog())
    if core.level == logging.NOTSET:
        core.setLevel(logging.DEBUG)


def build_definitions(sources: Sequence[SourceSpec]) -> dg.Definitions:
    names = [s.name for s in sources]
    if len(set(names)) != len(names):
        raise ValueError(f"source names must be unique: {names}")
    per_source = [build_source_defs(spec) for spec in sources]
    assets = [a for d in per_source for a in (d.assets or [])] + build_repo_assets(sources)
    checks = [c for d in per_source for c in (d.asset_checks or [])] + build_export_checks()
    checks.append(screen_overlap_check())
    with warnings.catch_warnings():
        # Code references are a beta API; it warns once per asset on every load.
        warnings.simplefilter("ignore", dg.BetaWarning)
        # Link every asset to the file and line that defines it (shown in the UI).
        assets = dg.with_source_code_references(assets)
    # The run's closing summary, after whichever step ends it (source assets run no step).
    assets = [a.with_hooks(RUN_SUMMARY_HOOKS) if isinstance(a, dg.AssetsDefinition) else a for a in assets]
    observing = observation_defs(sources)
    route_core_logs()
    return dg.Definitions(
        assets=assets,
        asset_checks=checks,
        jobs=observing.jobs,
        sensors=[run_failure_alerts, *(observing.sensors or [])],
        executor=executor_from_env(),
        resources={
            "paths": GuiAssetsPaths(),
            "hub": HubResource(),
            "build": BuildSettings(),
            "alerts": AlertsResource(),
        },
    )
