"""The code location: every source's chain from one factory, plus shared resources."""

from __future__ import annotations

import warnings

import dagster as dg

from gui_assets.defs.executors import executor_from_env
from gui_assets.defs.factory import build_source_defs
from gui_assets.defs.repo_assets import REPO_ASSETS
from gui_assets.defs.resources import AlertsResource, BuildSettings, GuiAssetsPaths, HubResource
from gui_assets.defs.sensors import run_failure_alerts
from gui_assets.sources import SOURCES


def _definitions() -> dg.Definitions:
    per_source = [build_source_defs(spec) for spec in SOURCES]
    assets = [a for d in per_source for a in (d.assets or [])] + REPO_ASSETS
    checks = [c for d in per_source for c in (d.asset_checks or [])]
    with warnings.catch_warnings():
        # Code references are a beta API; it warns once per asset on every load.
        warnings.simplefilter("ignore", dg.BetaWarning)
        # Link every asset to the file and line that defines it (shown in the UI).
        assets = dg.with_source_code_references(assets)
    return dg.Definitions(
        assets=assets,
        asset_checks=checks,
        sensors=[run_failure_alerts],
        executor=executor_from_env(),
        resources={
            "paths": GuiAssetsPaths(),
            "hub": HubResource(),
            "build": BuildSettings(),
            "alerts": AlertsResource(),
        },
    )


defs = _definitions()
