"""The LeRobot export's checks (gui_assets.checks.lerobot_verify): counts, frames and tasks against the
shards, each ERROR when broken and alerting as the source checks do."""

from collections.abc import Callable

import dagster as dg

from gui_assets.checks import lerobot_verify
from gui_assets.checks.verdict import Verdict
from gui_assets.defs.checks import report
from gui_assets.defs.resources import AlertsResource, GuiAssetsPaths

EXPORT = dg.AssetKey("lerobot_export")
LEROBOT_CHECKS: dict[str, tuple[Callable[..., Verdict], str]] = {
    "lerobot_counts": (
        lerobot_verify.counts,
        "ERROR when a built directory's datasets hold other episode or frame counts than its "
        "dataset_info.json, or an info.json disagrees with its own files.",
    ),
    "lerobot_frames": (
        lerobot_verify.frames,
        "ERROR when a sampled step (8 per dataset: 4 in each of 2 seeded episodes) is not "
        "pixel-equal to the shard in agentview or eye-in-hand, or its action type or parameters differ.",
    ),
    "lerobot_tasks": (
        lerobot_verify.tasks,
        "ERROR when an episode's task is not its demo's language instruction.",
    ),
}


def _check(name: str, verify: Callable[..., Verdict], description: str) -> dg.AssetChecksDefinition:
    @dg.asset_check(asset=EXPORT, name=name, description=description)
    def lerobot_check(
        context: dg.AssetCheckExecutionContext, paths: GuiAssetsPaths, alerts: AlertsResource
    ) -> dg.AssetCheckResult:
        return report(context, alerts, paths, name, verify(paths.out_dir()))

    return lerobot_check


def build_export_checks() -> list[dg.AssetChecksDefinition]:
    return [_check(name, verify, text) for name, (verify, text) in LEROBOT_CHECKS.items()]
