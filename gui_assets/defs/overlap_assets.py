"""The screen-overlap audit as an asset downstream of every source, and its check.

    screen_overlap        <out>/screen_overlap.parquet (+ .json summary, .png picture):
                          gui_assets.publish.screen_overlap over every built directory
    screen_overlap_share  WARN when an evaluation set has more than checks.screen_overlap.MAX_SHARE
                          of its frames in training, or a directory has no fingerprints

Like the other repo-level assets it reads whatever directories have been built, so sources never
materialized are simply absent.
"""

from pathlib import Path

import dagster as dg

from gui_assets.checks import screen_overlap as overlap_check
from gui_assets.defs.checks import report
from gui_assets.defs.metadata import OWNERS, file_digest, inline_image
from gui_assets.defs.resources import AlertsResource, GuiAssetsPaths
from gui_assets.pipeline.lineage import stage_version
from gui_assets.publish import screen_overlap

KEY = dg.AssetKey("screen_overlap")
CHECK = "screen_overlap_share"


def screen_overlap_asset(info_keys: list[dg.AssetKey], group: str) -> dg.AssetsDefinition:
    @dg.asset(
        key=KEY,
        deps=info_keys,
        kinds={"parquet", "python"},
        code_version=stage_version("screen_overlap"),
        description="`<out>/screen_overlap.parquet`: one row per evaluation frame (an evaluation "
        "directory's, or a `_val_` holdout's) with a near-duplicate screen in a training directory: "
        "eval_directory, eval_episode_id, eval_step, train_directory, train_episode_id, train_step, "
        "distance (bits of the 512-bit screen fingerprint, at most 12); `screen_overlap.json` the shares "
        "per evaluation set (same source, other sources) and each directory's exact duplicates; "
        "`screen_overlap.png` matched frames side by side. Splits are never changed.",
        group_name=group,
        owners=OWNERS,
    )
    def screen_overlap_audit(paths: GuiAssetsPaths) -> dg.MaterializeResult:
        out = paths.out_dir()
        r = screen_overlap.audit(out)
        metadata = {
            "path": dg.MetadataValue.path(r["path"]),
            "matched_frames": r["matched_frames"],
            "evaluation_frames": r["evaluation_frames"],
            "training_frames": r["training_frames"],
            "threshold_bits": r["threshold_bits"],
            "table": dg.MetadataValue.md(screen_overlap.markdown_table(r)),
            "directories_without_fingerprints": dg.MetadataValue.json(r["directories_without_fingerprints"]),
        }
        if r["picture"]:
            png = Path(r["picture"]).read_bytes()
            metadata["picture"] = inline_image(png, "image/png", "matched frames side by side")
            metadata["picture_path"] = dg.MetadataValue.path(r["picture"])
        return dg.MaterializeResult(
            metadata=metadata, data_version=dg.DataVersion(file_digest(Path(r["path"])))
        )

    return screen_overlap_audit


def screen_overlap_check() -> dg.AssetChecksDefinition:
    @dg.asset_check(
        asset=KEY,
        name=CHECK,
        description=f"WARN when an evaluation set has more than {overlap_check.MAX_SHARE:.0%} of its frames "
        "with a near-duplicate in a training directory, or a built directory has no fingerprints (its "
        "shards predate them). The table of every evaluation set is attached every time.",
    )
    def screen_overlap_share(
        context: dg.AssetCheckExecutionContext, paths: GuiAssetsPaths, alerts: AlertsResource
    ) -> dg.AssetCheckResult:
        summary = screen_overlap.read_summary(paths.out_dir())
        verdict = overlap_check.screen_overlap(summary)
        table = screen_overlap.markdown_table(summary) if summary else "_no summary_"
        return report(context, alerts, paths, CHECK, verdict, {"table": dg.MetadataValue.md(table)})

    return screen_overlap_share
