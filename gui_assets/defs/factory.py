"""build_source_defs(spec): a source's asset chain, all in group `spec.name`, one partitions def.

    S  ->  S_episodes  ->  S_splits  ->  S_shards  ->  S_dataset_info

Asset bodies resolve resources, call one stage of gui_assets.pipeline and report what it wrote.
code_version is a hash of the source of the modules a stage runs (plus the package version),
so editing an adapter or the writer marks the downstream partitions stale in the UI;
data_version is a hash of the bytes (or content hashes) a materialization wrote.
"""

import base64
import hashlib
import json
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import dagster as dg

from gui_assets import (
    atomic,
    charts,
    config,
    cursor,
    episode_store,
    images,
    invariants,
    ir,
    layout,
    mirror,
    pipeline,
    sharding,
    splits,
    stats,
    version,
)
from gui_assets.defs.checks import build_source_checks
from gui_assets.defs.partitions import source_partitions
from gui_assets.defs.resources import BuildSettings, GuiAssetsPaths, HubResource
from gui_assets.layout import OutLayout
from gui_assets.sources import SourceSpec
from gui_assets.writers import hub as hub_writer
from gui_assets.writers import libero_hdf5

OWNERS = ["team:gui_assets"]


def code_version(*modules: ModuleType) -> str:
    h = hashlib.sha256(version.GUI_ASSETS_VERSION.encode())
    for m in sorted(modules, key=lambda m: m.__name__):
        h.update(m.__name__.encode())
        h.update(Path(m.__file__ or "").read_bytes())
    return h.hexdigest()[:16]


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _md_table(rows: dict[str, Any], head: tuple[str, str] = ("reason", "count")) -> str:
    if not rows:
        return "_none_"
    lines = [f"| {head[0]} | {head[1]} |", "|---|---|"] + [f"| {k} | {v} |" for k, v in sorted(rows.items())]
    return "\n".join(lines)


def _fail(e: Exception) -> dg.Failure:
    """A whole input or partition that cannot be built: fail it with a message that names it."""
    return dg.Failure(description=str(e), allow_retries=False)


def _shards_metadata(spec: SourceSpec, key: str, out: OutLayout, manifest: dict[str, Any]) -> dict[str, Any]:
    shards = manifest["shards"] + manifest["val_shards"]
    eye = manifest["eye"]
    rate = eye["target_inside_eye"] / eye["pointer_steps"] if eye["pointer_steps"] else 0.0
    return {
        "path": dg.MetadataValue.path(str(out.directory(spec.directory(key)))),
        "shards": len(manifest["shards"]),
        "val_shards": len(manifest["val_shards"]),
        "units": manifest.get("units", 0),
        "demos": sum(s["demos"] for s in shards),
        "steps": sum(s["steps"] for s in shards),
        "bytes": sum(s["bytes"] for s in shards),
        "target_inside_eye_in_hand_rate": rate,
        "drops": dg.MetadataValue.json(manifest["stats"]["drops"]),
        "scroll_histogram": dg.MetadataValue.json(manifest["stats"]["scroll_histogram"]),
        "shard_list": dg.MetadataValue.md(
            _md_table(
                {s["file"]: f"{s['demos']} demos, {s['steps']} steps, {s['bytes']} B" for s in shards},
                ("file", "contents"),
            )
        ),
    }


def build_source_defs(spec: SourceSpec) -> dg.Definitions:
    partitions = source_partitions(spec)
    adapter_module = sys.modules[spec.adapter.__module__]
    common: dict[str, Any] = {"group_name": spec.name, "partitions_def": partitions, "owners": OWNERS}
    raw_key = dg.AssetKey(spec.name)
    episodes_key = dg.AssetKey(f"{spec.name}_episodes")
    splits_key = dg.AssetKey(f"{spec.name}_splits")
    shards_key = dg.AssetKey(f"{spec.name}_shards")
    info_key = dg.AssetKey(f"{spec.name}_dataset_info")

    @dg.asset(
        key=raw_key,
        description=f"Raw upstream files of {spec.repo_id} for one partition: listed from "
        "GUI_ASSETS_MIRROR (mode `mirror`) or downloaded with huggingface_hub into the local cache "
        "(mode `hub`), with sizes, sha256 and the resolved revision.",
        kinds={"huggingface", "python"},
        code_version=code_version(mirror, pipeline, adapter_module),
        **common,
    )
    def raw_asset(
        context: dg.AssetExecutionContext, paths: GuiAssetsPaths, hub: HubResource
    ) -> dg.MaterializeResult:
        key = context.partition_key
        out = OutLayout(paths.out_dir())
        try:
            part = pipeline.fetch_raw(spec, key, out, hub.raw_settings(paths))
        except mirror.RawInputError as e:
            raise _fail(e) from None
        files = {f.path: f.size for f in part.files}
        return dg.MaterializeResult(
            metadata={
                "path": dg.MetadataValue.path(str(out.raw_manifest(spec.directory(key)))),
                "mode": part.mode,
                "demo_mirror": paths.uses_demo_mirror() and part.mode == "mirror",
                "repo_id": part.repo_id,
                "revision": part.revision,
                "files": len(part.files),
                "bytes": sum(files.values()),
                "file_list": dg.MetadataValue.md(_md_table(files, ("file", "bytes"))),
            },
            data_version=dg.DataVersion(_digest([(f.path, f.sha256) for f in part.files] + [part.revision])),
        )

    @dg.asset(
        key=episodes_key,
        deps=[raw_key],
        description=f"GuiEpisode IR of one partition from the {spec.name} adapter: a Parquet step table "
        "and episode table, plus the original screenshot bytes in a content-addressed store.",
        kinds={"parquet", "python"},
        code_version=code_version(adapter_module, ir, images, episode_store, stats, config, pipeline),
        **common,
    )
    def episodes_asset(
        context: dg.AssetExecutionContext, paths: GuiAssetsPaths, build: BuildSettings
    ) -> dg.MaterializeResult:
        key = context.partition_key
        out = OutLayout(paths.out_dir())
        try:
            st = pipeline.build_episodes(spec, key, out, build.config())
        except (mirror.RawInputError, pipeline.EmptyPartitionError, pipeline.DiskFullError) as e:
            raise _fail(e) from None
        d = st.to_dict()
        ep_dir = out.episodes(spec.directory(key))
        table = episode_store.read_episode_table(ep_dir)
        return dg.MaterializeResult(
            metadata={
                "path": dg.MetadataValue.path(str(ep_dir)),
                "episodes_in": st.episodes_in,
                "episodes_out": st.episodes_out,
                "steps": st.steps,
                "ungrounded_steps": st.ungrounded_steps,
                "drops": dg.MetadataValue.json(d["drops"]),
                "action_type_counts": dg.MetadataValue.json(d["action_type_counts"]),
                "summary": dg.MetadataValue.md(
                    f"**{st.episodes_out}** of {st.episodes_in} episodes, **{st.steps}** steps, "
                    f"{st.ungrounded_steps} ungrounded.\n\nDrops:\n\n{_md_table(d['drops'])}"
                ),
            },
            data_version=dg.DataVersion(_digest([table["content_hash"].to_pylist(), d])),
        )

    @dg.asset(
        key=splits_key,
        deps=[episodes_key],
        description=f"Split assignment of one partition ({spec.split_rule.name}: "
        f"{spec.split_rule.description}), with each episode's content hash.",
        kinds={"parquet", "python"},
        code_version=code_version(splits, pipeline),
        **common,
    )
    def splits_asset(context: dg.AssetExecutionContext, paths: GuiAssetsPaths) -> dg.MaterializeResult:
        key = context.partition_key
        out = OutLayout(paths.out_dir())
        summary = pipeline.assign_splits(spec, key, out)
        return dg.MaterializeResult(
            metadata={
                "path": dg.MetadataValue.path(str(out.splits(spec.directory(key)))),
                "rule": summary["rule"]["name"],
                "episodes": summary["episodes"],
                "main": summary[splits.MAIN],
                "val": summary[splits.VAL],
            },
            data_version=dg.DataVersion(
                _digest(sorted(pipeline.read_splits(out, spec.directory(key)).items()))
            ),
        )

    # S_shards is a graph: plan -> one step per unit (fanned out; executors place them) -> publish.
    unit_tags = {
        "gui_assets/stage": "shard_unit",
        "gui_assets/source": spec.name,
        # With the k8s_job_executor: each unit's Job gets two cores for its decode/deflate threads.
        "dagster-k8s/config": json.dumps(
            {"container_config": {"resources": {"requests": {"cpu": "2", "memory": "2Gi"}}}}
        ),
    }

    @dg.op(
        name=f"{spec.name}_shard_plan",
        ins={"splits": dg.In(dg.Nothing)},
        out=dg.DynamicOut(str),
        description="Groups the partition's episodes into units of about one shard each.",
    )
    def plan_op(
        context: dg.OpExecutionContext, paths: GuiAssetsPaths, build: BuildSettings
    ) -> Iterator[dg.DynamicOutput[str]]:
        out = OutLayout(paths.out_dir())
        plan = pipeline.plan_shard_units(spec, context.partition_key, out, build.config())
        context.log.info(
            f"{len(plan['units'])} shard units, ~{plan['bytes_per_step_estimate']:.0f} B/step, "
            f"{plan['steps_per_unit_budget']} steps per unit"
        )
        for unit in plan["units"]:
            yield dg.DynamicOutput(unit["name"], mapping_key=unit["name"].replace("-", "_"))

    @dg.op(
        name=f"{spec.name}_write_shard_unit",
        tags=unit_tags,
        description="Writes one unit's shards (pieces) into the partition's work folder.",
    )
    def unit_op(
        context: dg.OpExecutionContext, unit: str, paths: GuiAssetsPaths, build: BuildSettings
    ) -> dict[str, Any]:
        out = OutLayout(paths.out_dir())
        try:
            r = pipeline.write_shard_unit(
                spec, context.partition_key, out, build.config(), unit, build.threads()
            )
        except pipeline.DiskFullError as e:
            raise _fail(e) from None
        context.log.info(f"{unit}: {r['episodes_written']} episodes in {len(r['pieces'])} pieces")
        return {"unit": unit, "pieces": len(r["pieces"]), "episodes": r["episodes_written"]}

    @dg.op(
        name=f"{spec.name}_publish_shards",
        description="Numbers every unit's pieces into the shard series and puts them in place.",
    )
    def publish_op(
        context: dg.OpExecutionContext, units: list[dict[str, Any]], paths: GuiAssetsPaths
    ) -> dg.Output[None]:
        key = context.partition_key
        out = OutLayout(paths.out_dir())
        try:
            manifest = pipeline.publish_shards(spec, key, out)
        except (pipeline.EmptyPartitionError, pipeline.DiskFullError, sharding.PublishError) as e:
            raise _fail(e) from None
        metadata = _shards_metadata(spec, key, out, manifest)
        directory = spec.directory(key)
        sheet = charts.contact_sheet_jpeg(invariants.shard_files(out.directory(directory), directory))
        if sheet is not None:
            path = out.work(directory) / "contact_sheet.jpg"
            atomic.atomic_write_bytes(path, sheet)
            metadata["contact_sheet"] = dg.MetadataValue.md(
                "Sampled frames: red cross = the action's point, orange = a drag's end, green box = "
                "the eye-in-hand window (where the previous action left the pointer).\n\n"
                f"![contact sheet](data:image/jpeg;base64,{base64.b64encode(sheet).decode()})"
            )
            metadata["contact_sheet_jpg"] = dg.MetadataValue.path(str(path))
        return dg.Output(
            None,
            metadata=metadata,
            data_version=dg.DataVersion(
                _digest([s["sha256"] for s in manifest["shards"] + manifest["val_shards"]])
            ),
        )

    @dg.graph_asset(
        key=shards_key,
        ins={"splits": dg.AssetIn(key=splits_key, dagster_type=dg.Nothing)},
        description=f"LIBERO-layout HDF5 shards "
        f"`<out>/{spec.name}_<partition>/{spec.name}_<partition>_NNNN.hdf5`: "
        "pre-action frames, causal-cursor eye-in-hand crops, masked action params. Written as "
        "units of about one shard each, one step per unit, so executors spread them over processes "
        "or machines; the shards are the same whatever the executor.",
        kinds={"hdf5", "python"},
        code_version=code_version(
            libero_hdf5, sharding, cursor, images, episode_store, ir, layout, atomic, pipeline
        ),
        **common,
    )
    def shards_asset(splits: None) -> Any:
        written = plan_op(splits).map(unit_op)
        return publish_op(written.collect())

    @dg.asset(
        key=info_key,
        deps=[shards_key],
        description=f"`<out>/{spec.name}_<partition>/dataset_info.json`: build config, upstream files "
        "and revision, stats (drops, ungrounded steps, scroll histogram, eye-in-hand rate), shard list.",
        kinds={"json", "python"},
        code_version=code_version(layout, pipeline, version, config),
        **common,
    )
    def dataset_info_asset(
        context: dg.AssetExecutionContext, paths: GuiAssetsPaths, build: BuildSettings
    ) -> dg.MaterializeResult:
        key = context.partition_key
        out = OutLayout(paths.out_dir())
        info = pipeline.write_info(spec, key, out, build.config())
        path = out.dataset_info(spec.directory(key))
        s = info.stats
        return dg.MaterializeResult(
            metadata={
                "path": dg.MetadataValue.path(str(path)),
                "episodes_out": s["episodes_out"],
                "steps": s["steps"],
                "ungrounded_steps": s["ungrounded_steps"],
                "target_inside_eye_in_hand_rate": s["target_inside_eye_in_hand_rate"],
                "revision": info.build["upstream"]["revision"],
                "stats": dg.MetadataValue.json(s),
            },
            data_version=dg.DataVersion(hashlib.sha256(path.read_bytes()).hexdigest()[:16]),
        )

    @dg.asset(
        key=dg.AssetKey(f"{spec.name}_upload"),
        deps=[info_key],
        description=f"Uploads `<out>/{spec.name}_<partition>/` (shards and dataset_info.json) to the "
        "dataset repo GUI_ASSETS_HUB_REPO, or to `<out>/hub/` laid out as the repo would be; only files "
        "the repo does not already hold with the same content are sent. Blocked when alignment_leakage "
        "fails.",
        kinds={"huggingface", "python"},
        code_version=code_version(hub_writer),
        pool="hf_api",
        **common,
    )
    def upload_asset(
        context: dg.AssetExecutionContext, paths: GuiAssetsPaths, hub: HubResource
    ) -> dg.MaterializeResult:
        directory = spec.directory(context.partition_key)
        folder = OutLayout(paths.out_dir()).directory(directory)
        files = [(f"{directory}/{p.name}", p) for p in sorted(folder.iterdir()) if p.is_file()]
        target = hub.target(paths.out_dir())
        try:
            result = hub_writer.upload(files, target, f"Upload {directory}", log=context.log)
        except hub_writer.UploadError as e:
            raise _fail(e) from None
        return dg.MaterializeResult(
            metadata={**result.to_dict(), "directory": directory},
            data_version=dg.DataVersion(_digest(sorted(result.digests.items()))),
        )

    with warnings.catch_warnings():
        # Partitioned asset checks are a preview API in 1.13; it warns once per check at every load.
        warnings.simplefilter("ignore", dg.PreviewWarning)
        checks = build_source_checks(spec, partitions, shards_key, splits_key, info_key)
    return dg.Definitions(
        assets=[raw_asset, episodes_asset, splits_asset, shards_asset, dataset_info_asset, upload_asset],
        asset_checks=checks,
    )
