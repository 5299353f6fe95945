"""One builder per asset of a source's chain (the shards graph asset is in shard_graph.py).

Each asset body resolves its resources, calls one stage of gui_assets.pipeline and reports what
it wrote as metadata and a data_version (a hash of what it wrote).
"""

from typing import Any

import dagster as dg

from gui_assets.core import episode_store, splits
from gui_assets.core.errors import DiskFullError, EmptyPartitionError
from gui_assets.core.layout import DatasetInfo
from gui_assets.defs.metadata import change_metadata, claim_partition, digest, fail, file_digest, md_table
from gui_assets.defs.resources import BuildSettings, GuiAssetsPaths, HubResource
from gui_assets.defs.upstream_assets import (
    maintain_condition,
    rebuild_condition,
    record_built_from,
    upstream_key,
)
from gui_assets.pipeline import episodes as episodes_stage
from gui_assets.pipeline import info as info_stage
from gui_assets.pipeline import raw as raw_stage
from gui_assets.pipeline import split as split_stage
from gui_assets.pipeline.changes import read_change
from gui_assets.pipeline.lineage import stage_version
from gui_assets.publish import hub as hub_writer
from gui_assets.sources.mirror import RawInputError
from gui_assets.sources.spec import SourceSpec


def chain_key(spec: SourceSpec, stage: str = "") -> dg.AssetKey:
    """`S` for the raw stage, `S_<stage>` for the others."""
    return dg.AssetKey(f"{spec.name}_{stage}" if stage else spec.name)


def raw_asset(spec: SourceSpec, common: dict[str, Any]) -> dg.AssetsDefinition:
    @dg.asset(
        key=chain_key(spec),
        deps=[upstream_key(spec)],
        automation_condition=rebuild_condition(),
        description=f"Raw upstream files of {spec.repo_id} for one partition: listed from "
        "GUI_ASSETS_MIRROR (mode `mirror`) or downloaded with huggingface_hub into the local cache "
        "(mode `hub`), with sizes, sha256 and the resolved revision. Its chain's partitions "
        f"(`--partition KEY`): {', '.join(spec.partition_keys)}.",
        kinds={"huggingface", "python"},
        code_version=stage_version("raw", spec),
        **common,
    )
    def raw(
        context: dg.AssetExecutionContext, paths: GuiAssetsPaths, hub: HubResource
    ) -> dg.MaterializeResult:
        key = context.partition_key
        out = claim_partition(context, paths.out_dir(), spec.directory(key))
        try:
            part = raw_stage.fetch_raw(spec, key, out, hub.raw_settings(paths, spec))
        except RawInputError as e:
            raise fail(e) from None
        files = {f.path: f.size for f in part.files}
        observed = record_built_from(context, spec, key, part.version, part.revision)
        return dg.MaterializeResult(
            metadata={
                "path": dg.MetadataValue.path(str(out.raw_manifest(spec.directory(key)))),
                "mode": part.mode,
                "demo_mirror": part.demo_mirror,
                "upstream_observed": observed,
                "repo_id": part.repo_id,
                "revision": part.revision,
                "files": len(part.files),
                "bytes": sum(files.values()),
                "file_list": dg.MetadataValue.md(md_table(files, ("file", "bytes"))),
            },
            # What an observation of the upstream reports for the same files (revision left out:
            # a commit that touches none of them changes nothing here).
            data_version=dg.DataVersion(part.version),
        )

    return raw


def episodes_asset(spec: SourceSpec, common: dict[str, Any]) -> dg.AssetsDefinition:
    @dg.asset(
        key=chain_key(spec, "episodes"),
        deps=[chain_key(spec)],
        description=f"GuiEpisode IR of one partition from the {spec.name} adapter: a Parquet step table "
        "and episode table, plus the original screenshot bytes in a content-addressed store.",
        kinds={"parquet", "python"},
        code_version=stage_version("episodes", spec),
        automation_condition=maintain_condition(),
        **common,
    )
    def episodes(
        context: dg.AssetExecutionContext, paths: GuiAssetsPaths, build: BuildSettings
    ) -> dg.MaterializeResult:
        key = context.partition_key
        out = claim_partition(context, paths.out_dir(), spec.directory(key))
        try:
            st = episodes_stage.build_episodes(spec, key, out, build.config())
        except (RawInputError, EmptyPartitionError, DiskFullError) as e:
            raise fail(e) from None
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
                "drops_by_unit": dg.MetadataValue.json(d["drops_by_unit"]),
                "action_type_counts": dg.MetadataValue.json(d["action_type_counts"]),
                "summary": dg.MetadataValue.md(
                    f"**{st.episodes_out}** of {st.episodes_in} episodes, **{st.steps}** steps, "
                    f"{st.ungrounded_steps} ungrounded.\n\nDrops:\n\n{md_table(d['drops'])}"
                ),
            },
            # every stored field of every episode (record_hash), and the drop counts
            data_version=dg.DataVersion(digest([table["record_hash"].to_pylist(), d])),
        )

    return episodes


def splits_asset(spec: SourceSpec, common: dict[str, Any]) -> dg.AssetsDefinition:
    @dg.asset(
        key=chain_key(spec, "splits"),
        deps=[chain_key(spec, "episodes")],
        description=f"Split assignment of one partition ({spec.split_rule.name}: "
        f"{spec.split_rule.description}), with each episode's content hash.",
        kinds={"parquet", "python"},
        code_version=stage_version("splits", spec),
        automation_condition=maintain_condition(),
        **common,
    )
    def split_table(context: dg.AssetExecutionContext, paths: GuiAssetsPaths) -> dg.MaterializeResult:
        key = context.partition_key
        out = claim_partition(context, paths.out_dir(), spec.directory(key))
        summary = split_stage.assign_splits(spec, key, out)
        return dg.MaterializeResult(
            metadata={
                "path": dg.MetadataValue.path(str(out.splits(spec.directory(key)))),
                "rule": summary["rule"]["name"],
                "episodes": summary["episodes"],
                "main": summary[splits.MAIN],
                "val": summary[splits.VAL],
            },
            data_version=dg.DataVersion(split_stage.splits_digest(out, spec.directory(key))),
        )

    return split_table


def dataset_info_asset(spec: SourceSpec, common: dict[str, Any]) -> dg.AssetsDefinition:
    @dg.asset(
        key=chain_key(spec, "dataset_info"),
        # What write_info reads: the raw manifest (upstream files), the adapter's drop counts,
        # the split table (holdout figures) and the shard manifest.
        deps=[
            chain_key(spec),
            chain_key(spec, "episodes"),
            chain_key(spec, "splits"),
            chain_key(spec, "shards"),
        ],
        description=f"`<out>/{spec.name}_<partition>/dataset_info.json`: build config, upstream files "
        "and revision, stats (drops, ungrounded steps, scroll histogram, eye-in-hand rate), shard list.",
        kinds={"json", "python"},
        code_version=stage_version("dataset_info", spec),
        automation_condition=maintain_condition(),
        **common,
    )
    def dataset_info(
        context: dg.AssetExecutionContext, paths: GuiAssetsPaths, build: BuildSettings
    ) -> dg.MaterializeResult:
        key = context.partition_key
        out = claim_partition(context, paths.out_dir(), spec.directory(key))
        info = info_stage.write_info(spec, key, out, build.config())
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
                "demo_mirror": info.demo,
                **change_metadata(read_change(out, spec.directory(key))),
                "stats": dg.MetadataValue.json(s),
            },
            data_version=dg.DataVersion(file_digest(path)),
        )

    return dataset_info


def upload_asset(spec: SourceSpec, common: dict[str, Any]) -> dg.AssetsDefinition:
    @dg.asset(
        key=chain_key(spec, "upload"),
        deps=[chain_key(spec, "dataset_info")],
        description=f"Uploads `<out>/{spec.name}_<partition>/` (shards and dataset_info.json) to the "
        "dataset repo GUI_ASSETS_HUB_REPO, or to `<out>/hub/` laid out as the repo would be; only files "
        "the repo does not already hold with the same content are sent. Blocked when alignment_leakage "
        "fails.",
        kinds={"huggingface", "python"},
        code_version=stage_version("upload", spec),
        automation_condition=maintain_condition(),
        pool="hf_api",
        **common,
    )
    def upload(
        context: dg.AssetExecutionContext, paths: GuiAssetsPaths, hub: HubResource
    ) -> dg.MaterializeResult:
        directory = spec.directory(context.partition_key)
        out = claim_partition(context, paths.out_dir(), directory)
        folder = out.directory(directory)
        files = [(f"{directory}/{p.name}", p) for p in sorted(folder.iterdir()) if p.is_file()]
        target = hub.target(paths.out_dir())
        info = DatasetInfo.read(out.dataset_info(directory))
        try:
            hub_writer.refuse_demo([info], target)
            known = hub_writer.recorded_digests(info, folder)  # the shards are not read again to hash them
            result = hub_writer.upload(files, target, f"Upload {directory}", log=context.log, known=known)
        except hub_writer.UploadError as e:
            raise fail(e) from None
        return dg.MaterializeResult(
            metadata={**result.to_dict(), "directory": directory},
            data_version=dg.DataVersion(digest(sorted(result.digests.items()))),
        )

    return upload
