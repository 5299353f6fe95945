"""The six asset checks of a source, per partition: thin wrappers over gui_assets.checks.invariants.

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

from gui_assets.checks import charts, integrity, invariants
from gui_assets.checks.alerts import Alert
from gui_assets.checks.verdict import Verdict
from gui_assets.core import shard_reader
from gui_assets.core.episode_store import ImageStore
from gui_assets.core.layout import OutLayout
from gui_assets.defs.metadata import inline_image
from gui_assets.defs.partitions import source_partitions
from gui_assets.defs.resources import AlertsResource, GuiAssetsPaths
from gui_assets.pipeline.split import read_split_rows
from gui_assets.sources.spec import SourceSpec


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


def _check(
    spec: SourceSpec,
    asset: str,
    name: str,
    description: str,
    judge: Callable[[GuiAssetsPaths, str], Verdict],
    blocking: bool = False,
    attach: Callable[[GuiAssetsPaths, str, Verdict], dict[str, Any]] | None = None,
) -> dg.AssetChecksDefinition:
    """A per-partition check on S_<asset>: `judge(paths, partition key)` is its verdict, reported
    (and alerted) with the metadata `attach` adds."""

    @dg.asset_check(
        asset=dg.AssetKey(f"{spec.name}_{asset}"),
        name=name,
        partitions_def=source_partitions(spec),
        blocking=blocking,
        description=description,
    )
    def check(
        context: dg.AssetCheckExecutionContext, paths: GuiAssetsPaths, alerts: AlertsResource
    ) -> dg.AssetCheckResult:
        key = context.partition_key
        verdict = judge(paths, key)
        return report(context, alerts, paths, name, verdict, attach(paths, key, verdict) if attach else None)

    return check


def _alignment_leakage(spec: SourceSpec) -> dg.AssetChecksDefinition:
    def judge(paths: GuiAssetsPaths, key: str) -> Verdict:
        out = OutLayout(paths.out_dir())
        return invariants.alignment_leakage(
            _shards(paths, spec, key), out.episodes(spec.directory(key)), ImageStore(out.image_store)
        )

    return _check(
        spec,
        "shards",
        "alignment_leakage",
        "ERROR (blocking) when the target lies inside the eye-in-hand crop on >= 90% of grounded "
        "pointer steps, or a frame is not its step's pre-action observation in the IR; WARN when the rate "
        "is outside 0.05..0.35 over 20 or more steps.",
        judge,
        blocking=True,
    )


def _causal_cursor(spec: SourceSpec) -> dg.AssetChecksDefinition:
    return _check(
        spec,
        "shards",
        "causal_cursor",
        "ERROR when an eye_rect is not the clamped 128 px window on where the previous action left the "
        "pointer (step 0: the screen centre), or its pixels are not the agentview's under it.",
        lambda paths, key: invariants.causal_cursor(_shards(paths, spec, key)),
    )


def _action_mask(spec: SourceSpec) -> dg.AssetChecksDefinition:
    return _check(
        spec,
        "shards",
        "action_mask",
        "ERROR when a step's mask is neither its type's row nor all-zero (all-zero for a SCROLL of a "
        "source that records a scroll's direction only), a masked slot is not 0, or a coordinate is "
        "outside [0, 1].",
        lambda paths, key: invariants.action_mask(_shards(paths, spec, key), spec.scroll_gestures),
    )


def _scroll_histogram(spec: SourceSpec) -> dg.AssetChecksDefinition:
    def chart(paths: GuiAssetsPaths, key: str, verdict: Verdict) -> dict[str, Any]:
        """The histogram as a table and a chart (inline, and the PNG's path)."""
        hist = verdict.figures["histogram"]
        path = OutLayout(paths.out_dir()).work(spec.directory(key)) / "checks" / "scroll_histogram.png"
        png = charts.write_scroll_chart(hist, f"{spec.directory(key)}: SCROLL steps", path)
        return {
            "histogram_table": dg.MetadataValue.md(charts.histogram_table(hist)),
            "histogram_chart": inline_image(png, "image/png", "scroll histogram"),
            "histogram_png": dg.MetadataValue.path(str(path)),
        }

    return _check(
        spec,
        "shards",
        "scroll_histogram",
        "WARN when a source with scrolling yields no SCROLL step, or a SCROLL desc is not the "
        "view direction (the inverse of the gesture). The histogram is attached every time. For a "
        "source that records a scroll's direction only: WARN when a SCROLL carries a gesture or names "
        "no single direction; the direction counts are attached.",
        lambda paths, key: invariants.scroll_histogram(
            _shards(paths, spec, key), spec.scrolls, spec.scroll_gestures
        ),
        attach=chart,
    )


def _split_disjointness(spec: SourceSpec) -> dg.AssetChecksDefinition:
    def judge(paths: GuiAssetsPaths, key: str) -> Verdict:
        out = OutLayout(paths.out_dir())
        this = invariants.SplitTable(key, read_split_rows(out, spec.directory(key)))
        others = [
            invariants.SplitTable(k, read_split_rows(out, spec.directory(k)))
            for k in spec.partition_keys
            if k != key and out.splits(spec.directory(k)).is_file()
        ]
        return invariants.split_disjointness(this, others, spec.split_rule.val_fraction)

    return _check(
        spec,
        "splits",
        "split_disjointness",
        "ERROR when an episode (by content hash) or a group id (AgentNet: task_id) is on both "
        "sides of a split, inside this partition or against any other built partition of the source.",
        judge,
    )


def _shard_integrity(spec: SourceSpec) -> dg.AssetChecksDefinition:
    return _check(
        spec,
        "dataset_info",
        "shard_integrity",
        "ERROR when a shard cannot be opened, numbering has a gap, a shard passes the size "
        "cap by more than its last episode, or dataset_info.json's counts, sizes or hashes differ from "
        "the files.",
        lambda paths, key: integrity.shard_integrity(
            OutLayout(paths.out_dir()).directory(spec.directory(key))
        ),
    )


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
