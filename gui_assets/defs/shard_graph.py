"""`S_shards`, a graph asset: plan -> one step per shard unit (fanned out; executors place the
steps on processes, Celery workers or Kubernetes Jobs) -> publish. The shards are the same
whatever the executor: the plan depends only on the data and the config."""

import json
import shlex
from collections.abc import Iterator
from typing import Any

import dagster as dg

from gui_assets.checks import charts
from gui_assets.core import shard_reader
from gui_assets.core.errors import DiskFullError, EmptyPartitionError
from gui_assets.core.layout import OutLayout
from gui_assets.defs.metadata import claim_partition, digest, fail, inline_image, md_table
from gui_assets.defs.resources import BuildSettings, GuiAssetsPaths
from gui_assets.defs.upstream_assets import maintain_condition
from gui_assets.pipeline import shards as shards_stage
from gui_assets.pipeline.lineage import stage_version
from gui_assets.pipeline.shard_records import PublishError, ShardManifest
from gui_assets.sources.spec import SourceSpec

SHEET_CAPTION = (
    "Sampled frames: red cross = the action's point; orange arrow = a scroll or drag gesture (start to "
    "end; a scroll's label names the view direction, the inverse of the gesture); green box = the "
    "eye-in-hand window (where the previous action left the pointer)."
)


def _unit_tags(spec: SourceSpec) -> dict[str, str]:
    return {
        "gui_assets/stage": "shard_unit",
        "gui_assets/source": spec.name,
        # With the k8s_job_executor: each unit's Job gets two cores for its decode/deflate threads.
        "dagster-k8s/config": json.dumps(
            {"container_config": {"resources": {"requests": {"cpu": "2", "memory": "2Gi"}}}}
        ),
    }


def _shards_metadata(spec: SourceSpec, key: str, out: OutLayout, manifest: ShardManifest) -> dict[str, Any]:
    shards = manifest.all_shards
    stats = manifest.stats.to_dict()
    directory = spec.directory(key)
    metadata: dict[str, Any] = {
        "path": dg.MetadataValue.path(str(out.directory(directory))),
        # What opens this partition in the viewer (gui_assets.viewer.viewer_command's form).
        "viewer_command": dg.MetadataValue.text(
            f"gui-assets view {shlex.quote(str(out.directory(directory)))}"
        ),
        "shards": len(manifest.shards),
        "val_shards": len(manifest.val_shards),
        "units": manifest.units,
        # What this build wrote and what it linked back from the last one (unit_reuse).
        **manifest.reuse,
        "demos": sum(s.demos for s in shards),
        "steps": sum(s.steps for s in shards),
        "bytes": sum(s.bytes for s in shards),
        "target_inside_eye_in_hand_rate": manifest.stats.target_inside_eye_in_hand_rate,
        "drops": dg.MetadataValue.json(stats["drops"]),
        "scroll_histogram": dg.MetadataValue.json(stats["scroll_histogram"]),
        "shard_list": dg.MetadataValue.md(
            md_table(
                {s.file: f"{s.demos} demos, {s.steps} steps, {s.bytes} B" for s in shards},
                ("file", "contents"),
            )
        ),
    }
    sheet_path = out.work(directory) / "contact_sheet.jpg"
    sheet = charts.write_contact_sheet(
        shard_reader.shard_files(out.directory(directory), directory), sheet_path
    )
    if sheet is not None:
        metadata["contact_sheet"] = inline_image(sheet, "image/jpeg", "contact sheet", SHEET_CAPTION)
        metadata["contact_sheet_jpg"] = dg.MetadataValue.path(str(sheet_path))
    return metadata


def _asset_ins(spec: SourceSpec) -> dict[str, dg.AssetIn]:
    """The units read the split table and, through it, the IR episodes and their frames: both
    are inputs, so a change to either marks the shards stale."""
    return {
        stage: dg.AssetIn(key=dg.AssetKey(f"{spec.name}_{stage}"), dagster_type=dg.Nothing)
        for stage in ("splits", "episodes")
    }


def shards_asset(spec: SourceSpec, common: dict[str, Any]) -> dg.AssetsDefinition:
    @dg.op(
        name=f"{spec.name}_shard_plan",
        ins={"splits": dg.In(dg.Nothing), "episodes": dg.In(dg.Nothing)},
        out=dg.DynamicOut(str),
        description="Groups the partition's episodes into units of about one shard each.",
    )
    def plan_op(
        context: dg.OpExecutionContext, paths: GuiAssetsPaths, build: BuildSettings
    ) -> Iterator[dg.DynamicOutput[str]]:
        out = claim_partition(context, paths.out_dir(), spec.directory(context.partition_key))
        plan = shards_stage.plan_shard_units(spec, context.partition_key, out, build.config())
        context.log.info(
            f"{len(plan.units)} shard units, ~{plan.bytes_per_step_estimate:.0f} B/step, "
            f"{plan.steps_per_unit_budget} steps per unit"
        )
        for unit in plan.units:
            yield dg.DynamicOutput(unit.name, mapping_key=unit.name.replace("-", "_"))

    @dg.op(
        name=f"{spec.name}_write_shard_unit",
        tags=_unit_tags(spec),
        description="Writes one unit's shards (pieces) into the partition's work folder.",
    )
    def unit_op(
        context: dg.OpExecutionContext, unit: str, paths: GuiAssetsPaths, build: BuildSettings
    ) -> dict[str, Any]:
        out = claim_partition(context, paths.out_dir(), spec.directory(context.partition_key))
        # A unit on a worker of its own hashes its pieces there; in-process, publish hashes all.
        apart = context.job_def.executor_def.name != dg.in_process_executor.name
        try:
            r = shards_stage.write_shard_unit(
                spec, context.partition_key, out, build.config(), unit, build.threads(), hash_pieces=apart
            )
        except DiskFullError as e:
            raise fail(e) from None
        hashed = " (hashed here)" if apart else ""
        context.log.info(f"{unit}: {r.stats.episodes_out} episodes in {len(r.pieces)} pieces{hashed}")
        return {"unit": unit, "pieces": len(r.pieces), "episodes": r.stats.episodes_out}

    @dg.op(
        name=f"{spec.name}_publish_shards",
        description="Numbers every unit's pieces into the shard series and puts them in place.",
    )
    def publish_op(
        context: dg.OpExecutionContext, units: list[dict[str, Any]], paths: GuiAssetsPaths
    ) -> dg.Output[None]:
        key = context.partition_key
        out = claim_partition(context, paths.out_dir(), spec.directory(key))
        try:
            manifest = shards_stage.publish_shards(spec, key, out)
        except (EmptyPartitionError, DiskFullError, PublishError) as e:
            raise fail(e) from None
        return dg.Output(
            None,
            metadata=_shards_metadata(spec, key, out, manifest),
            data_version=dg.DataVersion(digest([s.sha256 for s in manifest.all_shards])),
        )

    @dg.graph_asset(
        key=dg.AssetKey(f"{spec.name}_shards"),
        ins=_asset_ins(spec),
        description=f"LIBERO-layout HDF5 shards "
        f"`<out>/{spec.name}_<partition>/{spec.name}_<partition>_NNNN.hdf5`: "
        "pre-action frames, causal-cursor eye-in-hand crops, masked action params. Written as "
        "units of about one shard each, one step per unit, so executors spread them over processes "
        "or machines; the shards are the same whatever the executor.",
        kinds={"hdf5", "python"},
        code_version=stage_version("shards", spec),
        automation_condition=maintain_condition(),
        **common,
    )
    def shards(splits: None, episodes: None) -> Any:
        written = plan_op(splits=splits, episodes=episodes).map(unit_op)
        return publish_op(written.collect())

    return shards
