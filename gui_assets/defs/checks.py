"""The six asset checks of a source, per partition: thin wrappers over gui_assets.invariants.

    on S_shards:        alignment_leakage (blocking: an ERROR stops everything downstream),
                        causal_cursor, action_mask, scroll_histogram
    on S_splits:        split_disjointness
    on S_dataset_info:  shard_integrity

A failed check of any severity sends one alert (asset, partition, check, severity, key figures,
run id) from inside its own evaluation, so CLI runs alert as well as daemon-driven ones.
"""

import base64
from collections.abc import Callable
from typing import Any

import dagster as dg

from gui_assets import charts, invariants
from gui_assets.alerts import Alert
from gui_assets.atomic import atomic_write_bytes
from gui_assets.defs.resources import AlertsResource, GuiAssetsPaths
from gui_assets.episode_store import ImageStore
from gui_assets.invariants import Verdict
from gui_assets.layout import OutLayout
from gui_assets.pipeline import read_split_rows
from gui_assets.sources import SourceSpec


def _scalar_metadata(figures: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in figures.items():
        v = v.item() if hasattr(v, "item") else v  # a numpy scalar
        if isinstance(v, bool) or v is None:
            out[k] = dg.MetadataValue.text(str(v))
        elif isinstance(v, int):
            out[k] = dg.MetadataValue.int(v)
        elif isinstance(v, float):
            out[k] = dg.MetadataValue.float(v)
        else:
            out[k] = dg.MetadataValue.json(v)
    return out


def _report(
    context: dg.AssetCheckExecutionContext,
    alerts: AlertsResource,
    paths: GuiAssetsPaths,
    asset: dg.AssetKey,
    check: str,
    verdict: Verdict,
    extra: dict[str, Any] | None = None,
) -> dg.AssetCheckResult:
    metadata: dict[str, Any] = {
        "summary": dg.MetadataValue.text(verdict.summary),
        **_scalar_metadata(verdict.figures),
    }
    if verdict.examples:
        metadata["examples"] = dg.MetadataValue.md("\n".join(f"- `{e}`" for e in verdict.examples))
    metadata.update(extra or {})
    severity = (
        dg.AssetCheckSeverity.WARN if verdict.severity == invariants.WARN else dg.AssetCheckSeverity.ERROR
    )
    if not verdict.passed:
        alert = Alert(
            kind="asset_check",
            asset=asset.to_user_string(),
            partition=context.partition_key,
            check=check,
            severity=verdict.severity,
            summary=verdict.summary,
            run_id=context.run.run_id,
            figures=verdict.figures,
            examples=verdict.examples,
        )
        delivery = alerts.send(alert, paths.out_dir(), context.log)
        metadata["alert"] = dg.MetadataValue.text(
            f"sent to {delivery.sink} after {delivery.attempts} attempt(s)"
        )
    return dg.AssetCheckResult(
        passed=verdict.passed, severity=severity, metadata=metadata, description=verdict.summary
    )


def build_source_checks(
    spec: SourceSpec,
    partitions: dg.PartitionsDefinition,
    shards_key: dg.AssetKey,
    splits_key: dg.AssetKey,
    info_key: dg.AssetKey,
) -> list[dg.AssetChecksDefinition]:
    def shards_of(paths: GuiAssetsPaths, key: str) -> list:
        out = OutLayout(paths.out_dir())
        return invariants.shard_files(out.directory(spec.directory(key)), spec.directory(key))

    def shard_check(name: str, blocking: bool, description: str) -> Callable[..., dg.AssetChecksDefinition]:
        return dg.asset_check(
            asset=shards_key, name=name, partitions_def=partitions, blocking=blocking, description=description
        )

    @shard_check(
        "alignment_leakage",
        blocking=True,
        description="ERROR (blocking) when the target lies inside the eye-in-hand crop on >= 90% of grounded "
        "pointer steps, or a frame is not its step's pre-action observation in the IR; WARN when the rate "
        "is outside 0.05..0.35 over 20 or more steps.",
    )
    def alignment_leakage(
        context: dg.AssetCheckExecutionContext, paths: GuiAssetsPaths, alerts: AlertsResource
    ) -> dg.AssetCheckResult:
        key = context.partition_key
        out = OutLayout(paths.out_dir())
        verdict = invariants.alignment_leakage(
            shards_of(paths, key), out.episodes(spec.directory(key)), ImageStore(out.image_store)
        )
        return _report(context, alerts, paths, shards_key, "alignment_leakage", verdict)

    @shard_check(
        "causal_cursor",
        blocking=False,
        description="ERROR when an eye_rect is not the clamped 128 px window on where the previous action "
        "left the pointer (step 0: the screen centre), or its pixels are not the agentview's under it.",
    )
    def causal_cursor(
        context: dg.AssetCheckExecutionContext, paths: GuiAssetsPaths, alerts: AlertsResource
    ) -> dg.AssetCheckResult:
        verdict = invariants.causal_cursor(shards_of(paths, context.partition_key))
        return _report(context, alerts, paths, shards_key, "causal_cursor", verdict)

    @shard_check(
        "action_mask",
        blocking=False,
        description="ERROR when a step's mask is neither its type's row nor all-zero, a masked slot is "
        "not 0, or a coordinate is outside [0, 1].",
    )
    def action_mask(
        context: dg.AssetCheckExecutionContext, paths: GuiAssetsPaths, alerts: AlertsResource
    ) -> dg.AssetCheckResult:
        verdict = invariants.action_mask(shards_of(paths, context.partition_key))
        return _report(context, alerts, paths, shards_key, "action_mask", verdict)

    @shard_check(
        "scroll_histogram",
        blocking=False,
        description="WARN when a source with scrolling yields no SCROLL step, or a SCROLL desc is not the "
        "view direction (the inverse of the gesture). The histogram is attached every time.",
    )
    def scroll_histogram(
        context: dg.AssetCheckExecutionContext, paths: GuiAssetsPaths, alerts: AlertsResource
    ) -> dg.AssetCheckResult:
        key = context.partition_key
        verdict = invariants.scroll_histogram(shards_of(paths, key), spec.scrolls)
        hist = verdict.figures["histogram"]
        png = charts.scroll_histogram_png(hist, f"{spec.directory(key)}: SCROLL steps")
        chart = OutLayout(paths.out_dir()).work(spec.directory(key)) / "checks" / "scroll_histogram.png"
        atomic_write_bytes(chart, png)
        picture = f"![scroll histogram](data:image/png;base64,{base64.b64encode(png).decode()})"
        extra = {
            "histogram_table": dg.MetadataValue.md(invariants.histogram_table(hist)),
            "histogram_chart": dg.MetadataValue.md(picture),
            "histogram_png": dg.MetadataValue.path(str(chart)),
        }
        return _report(context, alerts, paths, shards_key, "scroll_histogram", verdict, extra)

    @dg.asset_check(
        asset=splits_key,
        name="split_disjointness",
        partitions_def=partitions,
        description="ERROR when an episode (by content hash) or a group id (AgentNet: task_id) is on both "
        "sides of a split, inside this partition or against any other built partition of the source.",
    )
    def split_disjointness(
        context: dg.AssetCheckExecutionContext, paths: GuiAssetsPaths, alerts: AlertsResource
    ) -> dg.AssetCheckResult:
        key = context.partition_key
        out = OutLayout(paths.out_dir())
        this = invariants.SplitTable(key, read_split_rows(out, spec.directory(key)))
        others = [
            invariants.SplitTable(k, read_split_rows(out, spec.directory(k)))
            for k in spec.partition_keys
            if k != key and out.splits(spec.directory(k)).is_file()
        ]
        verdict = invariants.split_disjointness(this, others, spec.split_rule.val_fraction)
        return _report(context, alerts, paths, splits_key, "split_disjointness", verdict)

    @dg.asset_check(
        asset=info_key,
        name="shard_integrity",
        partitions_def=partitions,
        description="ERROR when a shard cannot be opened, numbering has a gap, a shard passes the size "
        "cap by more than its last episode, or dataset_info.json's counts, sizes or hashes differ from "
        "the files.",
    )
    def shard_integrity(
        context: dg.AssetCheckExecutionContext, paths: GuiAssetsPaths, alerts: AlertsResource
    ) -> dg.AssetCheckResult:
        directory = spec.directory(context.partition_key)
        verdict = invariants.shard_integrity(OutLayout(paths.out_dir()).directory(directory), directory)
        return _report(context, alerts, paths, info_key, "shard_integrity", verdict)

    return [
        alignment_leakage,
        causal_cursor,
        action_mask,
        scroll_histogram,
        split_disjointness,
        shard_integrity,
    ]
