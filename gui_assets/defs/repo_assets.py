"""Repo-level assets downstream of every source: the preview config, the screen-overlap audit
(defs.overlap_assets), the dataset card, their upload and the cua-lite export. They read
whatever directories have been built, so sources never materialized are simply absent (the
card's tables list what exists)."""

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path

import dagster as dg

from gui_assets.core.errors import DiskFullError
from gui_assets.core.layout import PREVIEW_DIR, built_directories
from gui_assets.defs.metadata import OWNERS, digest, fail, file_digest
from gui_assets.defs.overlap_assets import KEY as SCREEN_OVERLAP
from gui_assets.defs.overlap_assets import screen_overlap_asset
from gui_assets.defs.resources import BuildSettings, GuiAssetsPaths, HubResource
from gui_assets.pipeline.common import disk_full_named
from gui_assets.pipeline.lineage import stage_version
from gui_assets.publish import (
    card,
    cua_lite,
    lerobot,
    lerobot_export,
    preview,
    screen_overlap,
    screen_overlap_picture,
)
from gui_assets.publish import hub as hub_writer
from gui_assets.publish.lerobot_video import VideoError
from gui_assets.sources.spec import SourceSpec
from gui_assets.viewer.samples import SAMPLES_DIR, write_sample_pages

GROUP = "publish"
COMMON = {"group_name": GROUP, "owners": OWNERS}


@contextlib.contextmanager
def _disk_full_fails(stage: str, where: Path) -> Iterator[None]:
    """A full disk fails the step with a message naming the folder and the bytes free."""
    try:
        with disk_full_named(stage, where):
            yield
    except DiskFullError as e:
        raise fail(e) from None


def _preview_asset(info_keys: list[dg.AssetKey]) -> dg.AssetsDefinition:
    @dg.asset(
        key="preview",
        deps=info_keys,
        kinds={"parquet", "python"},
        code_version=stage_version("preview"),
        description="`<out>/preview/*.parquet`: steps sampled across every built directory (seeded, "
        "preview_count rows, default 665): the pre-action frame as JPEG 640 px wide, the eye-in-hand crop, "
        "the action; HF Image storage, so `datasets` and the hub viewer decode it. Config `preview`, split "
        "`sample`.",
        **COMMON,
    )
    def preview_asset(paths: GuiAssetsPaths, build: BuildSettings) -> dg.MaterializeResult:
        with _disk_full_fails("preview", paths.out_dir() / PREVIEW_DIR):
            r = preview.write_preview(paths.out_dir(), build.preview_count, build.preview_seed)
        return dg.MaterializeResult(
            metadata={
                "path": dg.MetadataValue.path(r["path"]),
                "rows": r["rows"],
                "per_directory": dg.MetadataValue.json(r["per_directory"]),
                "seed": r["seed"],
                # pictures the shard writer (or an earlier preview) drew vs drawn again here
                "pictures_cached": r["pictures"]["cached"],
                "pictures_drawn": r["pictures"]["drawn"],
            },
            data_version=dg.DataVersion(file_digest(Path(r["path"]))),
        )

    return preview_asset


def _card_asset(info_keys: list[dg.AssetKey]) -> dg.AssetsDefinition:
    @dg.asset(
        key="dataset_card",
        deps=[dg.AssetKey("preview"), SCREEN_OVERLAP, *info_keys],
        kinds={"python"},
        code_version=stage_version("dataset_card"),
        description="`<out>/README.md`, the dataset card: YAML header with the preview config, the splits "
        "table read from every dataset_info.json, layout, POMDP and leakage warnings, the screen-overlap "
        "table, loading, upstream licences.",
        **COMMON,
    )
    def dataset_card_asset(
        paths: GuiAssetsPaths, hub: HubResource, build: BuildSettings
    ) -> dg.MaterializeResult:
        out = paths.out_dir()
        with _disk_full_fails("dataset_card", out / SAMPLES_DIR):
            pages = write_sample_pages(out, [i.directory for i in built_directories(out)])
            r = card.write_card(out, hub.upload_repo() or "<owner>/<dataset>", set(pages), build.lerobot())
        text = Path(r["path"]).read_text(encoding="utf-8")
        return dg.MaterializeResult(
            metadata={
                "path": dg.MetadataValue.path(r["path"]),
                "directories": len(r["directories"]),
                "sample_pages": len(pages),
                "card": dg.MetadataValue.md(text.split("---", 2)[-1][:20000]),
            },
            # hub_card uploads the sample pages beside the card: the version covers both.
            data_version=dg.DataVersion(
                digest([file_digest(Path(r["path"])), *(file_digest(p) for _, p in sorted(pages.items()))])
            ),
        )

    return dataset_card_asset


def _upload_all(
    context: dg.AssetExecutionContext,
    hub: HubResource,
    out: Path,
    files: list[tuple[str, Path]],
    message: str,
    known: dict[str, str] | None = None,
) -> dg.MaterializeResult:
    """Send repo-wide files (they show every directory, so a demo build among them is refused)."""
    target = hub.target(out)
    try:
        hub_writer.refuse_demo(built_directories(out), target)
        r = hub_writer.upload(files, target, message, log=context.log, known=known)
    except hub_writer.UploadError as e:
        raise fail(e) from None
    return dg.MaterializeResult(metadata=r.to_dict())


def _hub_card_asset() -> dg.AssetsDefinition:
    @dg.asset(
        key="hub_card",
        deps=[dg.AssetKey("dataset_card"), dg.AssetKey("preview"), SCREEN_OVERLAP],
        kinds={"huggingface", "python"},
        code_version=stage_version("hub_card"),
        pool="hf_api",
        description="Uploads the card, the preview parquet and the screen-overlap audit's parquet and "
        "picture to GUI_ASSETS_HUB_REPO (or `<out>/hub/`), "
        "sending only what the repo does not already hold with the same content.",
        **COMMON,
    )
    def hub_card_asset(
        context: dg.AssetExecutionContext, paths: GuiAssetsPaths, hub: HubResource
    ) -> dg.MaterializeResult:
        out = paths.out_dir()
        files = [("README.md", out / "README.md"), (card.LICENSE_FILE, out / card.LICENSE_FILE)]
        files += [(f"{PREVIEW_DIR}/{p.name}", p) for p in sorted((out / PREVIEW_DIR).glob("*.parquet"))]
        files += [(f"{SAMPLES_DIR}/{p.name}", p) for p in sorted((out / SAMPLES_DIR).glob("*.html"))]
        audit = (screen_overlap.OVERLAP_FILE, screen_overlap_picture.PICTURE_FILE)
        files += [(name, out / name) for name in audit if (out / name).is_file()]
        # the card and preview show every directory: a demo build among them is refused
        return _upload_all(context, hub, out, files, "Upload the dataset card and preview")

    return hub_card_asset


def _cua_lite_asset(info_keys: list[dg.AssetKey], episode_keys: list[dg.AssetKey]) -> dg.AssetsDefinition:
    @dg.asset(
        key="cua_lite_export",
        deps=[*info_keys, *episode_keys],  # rows are written from the IR episodes and their frames
        kinds={"parquet", "python"},
        code_version=stage_version("cua_lite_export"),
        description="`<out>/cua_lite/`: every built directory in cua-lite's canonical local layout (content-"
        "addressed images, `<platform>/use/<split>/<directory>.parquet` with messages and metadata as JSON "
        "strings, coordinates in [0, 1000]) for cua-lite's SFT export.",
        **COMMON,
    )
    def cua_lite_export_asset(paths: GuiAssetsPaths, build: BuildSettings) -> dg.MaterializeResult:
        with _disk_full_fails("cua_lite_export", paths.out_dir() / cua_lite.EXPORT_DIR):
            r = cua_lite.write_export(paths.out_dir(), build.cua_lite_evaluation_as_validation)
        root = Path(r["root"])
        return dg.MaterializeResult(
            metadata={
                "path": dg.MetadataValue.path(r["root"]),
                "files": dg.MetadataValue.json(r["files"]),
                "episodes": sum(r["files"].values()),
                "left_out": dg.MetadataValue.json(r["left_out"]),
                "truncated": dg.MetadataValue.json(r["truncated"]),
                "directories": dg.MetadataValue.json(r["directories"]),
                "removed": dg.MetadataValue.json(r["removed"]),
                "evaluation_as_validation": build.cua_lite_evaluation_as_validation,
            },
            # The rows' bytes, not their counts: a change inside a row is a new version.
            data_version=dg.DataVersion(digest({f: file_digest(root / f) for f in sorted(r["files"])})),
        )

    return cua_lite_export_asset


def _lerobot_asset(info_keys: list[dg.AssetKey], episode_keys: list[dg.AssetKey]) -> dg.AssetsDefinition:
    @dg.asset(
        key="lerobot_export",
        deps=[*info_keys, *episode_keys],  # frames from the shards; which keep their bytes, from the IR
        kinds={"parquet", "python"},
        code_version=stage_version("lerobot_export"),
        output_required=False,  # off unless asked for: it doubles the bytes written and uploaded
        description="`<out>/lerobot/<directory>/`: every built directory as a LeRobotDataset v3.0 that "
        "`LeRobotDataset(repo_id, root=...)` loads: agentview and eye-in-hand as lossless image features "
        "pixel-equal to the shards, state, action and the GUI supervision as named features, the "
        "instruction as task; one dataset per frame size (`<directory>_<H>x<W>/` beside the main one). "
        "Datasets whose inputs did not change are kept. Off unless GUI_ASSETS_LEROBOT=1 or the "
        "`lerobot_export` knob is set: then it is not materialized and `hub_lerobot` is skipped.",
        **COMMON,
    )
    def lerobot_export_asset(
        context: dg.AssetExecutionContext, paths: GuiAssetsPaths, build: BuildSettings
    ) -> Iterator[dg.MaterializeResult]:
        if not build.lerobot():
            context.log.info(
                "LeRobot export off: not materialized (GUI_ASSETS_LEROBOT=1 or the lerobot_export knob "
                "turns it on)"
            )
            return
        try:
            with _disk_full_fails("lerobot_export", paths.out_dir() / lerobot.EXPORT_DIR):
                r = lerobot_export.write_export(paths.out_dir(), video=build.lerobot_video)
        except VideoError as e:
            raise fail(e) from None
        context.log.info(f"lerobot export: {len(r.written)} dataset(s) written, {len(r.reused)} kept")
        d = r.to_dict()
        yield dg.MaterializeResult(
            metadata={
                "path": dg.MetadataValue.path(d["root"]),
                "datasets": dg.MetadataValue.json(d["datasets"]),
                "episodes": sum(f["episodes"] for f in r.datasets.values()),
                "frames": sum(f["frames"] for f in r.datasets.values()),
                "bytes": d["bytes"],
                "written": dg.MetadataValue.json(r.written),
                "reused": dg.MetadataValue.json(r.reused),
                "removed": dg.MetadataValue.json(r.removed),
                "video": build.lerobot_video,
            },
            data_version=dg.DataVersion(r.digest()),
        )

    return lerobot_export_asset


def _hub_lerobot_asset() -> dg.AssetsDefinition:
    @dg.asset(
        key="hub_lerobot",
        deps=[dg.AssetKey("lerobot_export")],
        kinds={"huggingface", "python"},
        code_version=stage_version("hub_lerobot"),
        pool="hf_api",
        description="Uploads `<out>/lerobot/` to GUI_ASSETS_HUB_REPO (or `<out>/hub/`) under `lerobot/`, "
        "sending only the files the repo does not already hold with the same content.",
        **COMMON,
    )
    def hub_lerobot_asset(
        context: dg.AssetExecutionContext, paths: GuiAssetsPaths, hub: HubResource
    ) -> dg.MaterializeResult:
        out = paths.out_dir()
        try:
            listed = lerobot_export.published_files(out)
        except ValueError as e:
            raise fail(e) from None
        files = [(p, local) for p, local, _ in listed]
        known = {p: sha for p, _, sha in listed}
        return _upload_all(context, hub, out, files, "Upload the LeRobot export", known)

    return hub_lerobot_asset


def build_repo_assets(sources: Sequence[SourceSpec]) -> list[dg.AssetsDefinition]:
    """The publishing assets, downstream of every given source's dataset_info."""
    info_keys = [dg.AssetKey(f"{s.name}_dataset_info") for s in sources]
    episode_keys = [dg.AssetKey(f"{s.name}_episodes") for s in sources]
    return [
        _preview_asset(info_keys),
        screen_overlap_asset(info_keys, GROUP),
        _card_asset(info_keys),
        _hub_card_asset(),
        _cua_lite_asset(info_keys, episode_keys),
        _lerobot_asset(info_keys, episode_keys),
        _hub_lerobot_asset(),
    ]
