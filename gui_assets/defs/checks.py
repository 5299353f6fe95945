"""The six asset checks of a source, per partition: thin wrappers over gui_assets.invariants.

    on S_shards:        alignment_leakage (blocking: an ERROR stops everything downstream),
                        causal_cursor, action_mask, scroll_histogram
    on S_splits:        split_disjointness
    on S_dataset_info:  shard_integrity

A failed check of any severity sends one alert (asset, partition, check, severity, key figures,
run id) from inside its own evaluation, so CLI runs alert as well as daemon-driven ones.
"""

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dagster as dg

from gui_assets import charts, integrity, invariants, shard_reader
from gui_assets.alerts import Alert
from gui_assets.defs.metadata import inline_image
from gui_assets.defs.partitions import source_partitions
from gui_assets.defs.resources import AlertsResource, GuiAssetsPaths
from gui_assets.episode_store import ImageStore
from gui_assets.invariants import Verdict
from gui_assets.layout import OutLayout
from gui_assets.source_spec import SourceSpec
from gui_assets.stages.split import read_split_rows


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


def report(
    context: dg.AssetCheckExecutionContext,
    alerts: AlertsResource,
    paths: GuiAssetsPaths,
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
            asset=context.check_specs[0].asset_key.to_user_string(),
            partition=context.partition_key if context.has_partition_key else None,
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


def _shards(paths: GuiAssetsPaths, spec: SourceSpec, key: str) -> list[Path]:
    out = OutLayout(paths.out_dir())
    return shard_reader.shard_files(out.directory(spec.directory(key)), spec.directory(key))


def _on_shards(spec: SourceSpec, name: str, blocking: bool, description: str) -> Callable[..., Any]:
    return dg.asset_check(
        asset=dg.AssetKey(f"{spec.name}_shards"),
        name=name,
        partitions_def=source_partitions(spec),
        blocking=blocking,
        description=description,
    )


def _alignment_leakage(spec: SourceSpec) -> dg.AssetChecksDefinition:
    @_on_shards(
        spec,
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
            _shards(paths, spec, key), out.episodes(spec.directory(key)), ImageStore(out.image_store)
        )
        return report(context, alerts, paths, "alignment_leakage", verdict)

    return alignment_leakage


def _judge_shards(
    spec: SourceSpec, name: str, description: str, judge: Callable[[list[Path]], Verdict]
) -> dg.AssetChecksDefinition:
    """A non-blocking check on S_shards whose verdict is `judge` over the partition's shards."""

    @_on_shards(spec, name, blocking=False, description=description)
    def check(
        context: dg.AssetCheckExecutionContext, paths: GuiAssetsPaths, alerts: AlertsResource
    ) -> dg.AssetCheckResult:
        return report(context, alerts, paths, name, judge(_shards(paths, spec, context.partition_key)))

    return check


def _causal_cursor(spec: SourceSpec) -> dg.AssetChecksDefinition:
    return _judge_shards(
        spec,
        "causal_cursor",
        "ERROR when an eye_rect is not the clamped 128 px window on where the previous action left the "
        "pointer (step 0: the screen centre), or its pixels are not the agentview's under it.",
        invariants.causal_cursor,
    )


def _action_mask(spec: SourceSpec) -> dg.AssetChecksDefinition:
    return _judge_shards(
        spec,
        "action_mask",
        "ERROR when a step's mask is neither its type's row nor all-zero, a masked slot is not 0, or a "
        "coordinate is outside [0, 1].",
        invariants.action_mask,
    )


def _scroll_histogram(spec: SourceSpec) -> dg.AssetChecksDefinition:
    @_on_shards(
        spec,
        "scroll_histogram",
        blocking=False,
        description="WARN when a source with scrolling yields no SCROLL step, or a SCROLL desc is not the "
        "view direction (the inverse of the gesture). The histogram is attached every time.",
    )
    def scroll_histogram(
        context: dg.AssetCheckExecutionContext, paths: GuiAssetsPaths, alerts: AlertsResource
    ) -> dg.AssetCheckResult:
        key = context.partition_key
        verdict = invariants.scroll_histogram(_shards(paths, spec, key), spec.scrolls)
        hist = verdict.figures["histogram"]
        chart = OutLayout(paths.out_dir()).work(spec.directory(key)) / "checks" / "scroll_histogram.png"
        png = charts.write_scroll_chart(hist, f"{spec.directory(key)}: SCROLL steps", chart)
        extra = {
            "histogram_table": dg.MetadataValue.md(charts.histogram_table(hist)),
            "histogram_chart": inline_image(png, "image/png", "scroll histogram"),
            "histogram_png": dg.MetadataValue.path(str(chart)),
        }
        return report(context, alerts, paths, "scroll_histogram", verdict, extra)

    return scroll_histogram


def _split_disjointness(spec: SourceSpec) -> dg.AssetChecksDefinition:
    @dg.asset_check(
        asset=dg.AssetKey(f"{spec.name}_splits"),
        name="split_disjointness",
        partitions_def=source_partitions(spec),
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
        return report(context, alerts, paths, "split_disjointness", verdict)

    return split_disjointness


def _shard_integrity(spec: SourceSpec) -> dg.AssetChecksDefinition:
    @dg.asset_check(
        asset=dg.AssetKey(f"{spec.name}_dataset_info"),
        name="shard_integrity",
        partitions_def=source_partitions(spec),
        description="ERROR when a shard cannot be opened, numbering has a gap, a shard passes the size "
        "cap by more than its last episode, or dataset_info.json's counts, sizes or hashes differ from "
        "the files.",
    )
    def shard_integrity(
        context: dg.AssetCheckExecutionContext, paths: GuiAssetsPaths, alerts: AlertsResource
    ) -> dg.AssetCheckResult:
        directory = spec.directory(context.partition_key)
        verdict = integrity.shard_integrity(OutLayout(paths.out_dir()).directory(directory))
        return report(context, alerts, paths, "shard_integrity", verdict)

    return shard_integrity


CHECK_BUILDERS = (
    _alignment_leakage,
    _causal_cursor,
    _action_mask,
    _scroll_histogram,
    _split_disjointness,
    _shard_integrity,
)


def build_source_checks(spec: SourceSpec) -> list[dg.AssetChecksDefinition]:
    """The six checks on a source's chain, each per partition."""
    with warnings.catch_warnings():
        # Partitioned asset checks are a preview API in 1.13; it warns once per check at every load.
        warnings.simplefilter("ignore", dg.PreviewWarning)
        return [build(spec) for build in CHECK_BUILDERS]
