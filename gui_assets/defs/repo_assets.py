"""Repo-level assets downstream of every source: the preview config, the dataset card and their
upload. They read whatever directories have been built, so sources never materialized are
simply absent (the card's tables list what exists)."""

import hashlib
import json
from pathlib import Path

import dagster as dg

from gui_assets.defs.factory import OWNERS, code_version
from gui_assets.defs.resources import BuildSettings, GuiAssetsPaths, HubResource
from gui_assets.sources import SOURCES
from gui_assets.writers import card, cua_lite, preview
from gui_assets.writers import hub as hub_writer

GROUP = "publish"
_INFO_KEYS = [dg.AssetKey(f"{s.name}_dataset_info") for s in SOURCES]


def _fail(e: Exception) -> dg.Failure:
    return dg.Failure(description=str(e), allow_retries=False)


@dg.asset(
    key="preview",
    deps=_INFO_KEYS,
    group_name=GROUP,
    owners=OWNERS,
    kinds={"parquet", "python"},
    code_version=code_version(preview),
    description="`<out>/preview/*.parquet`: steps sampled across every built directory (seeded, "
    "preview_count rows, default 665): the pre-action frame as JPEG 640 px wide, the eye-in-hand crop, "
    "the action; HF Image storage, so `datasets` and the hub viewer decode it. Config `preview`, split "
    "`sample`.",
)
def preview_asset(paths: GuiAssetsPaths, build: BuildSettings) -> dg.MaterializeResult:
    r = preview.write_preview(paths.out_dir(), build.preview_count, build.preview_seed)
    return dg.MaterializeResult(
        metadata={
            "path": dg.MetadataValue.path(r["path"]),
            "rows": r["rows"],
            "per_directory": dg.MetadataValue.json(r["per_directory"]),
            "seed": r["seed"],
        },
        data_version=dg.DataVersion(hashlib.sha256(Path(r["path"]).read_bytes()).hexdigest()[:16]),
    )


@dg.asset(
    key="dataset_card",
    deps=[dg.AssetKey("preview"), *_INFO_KEYS],
    group_name=GROUP,
    owners=OWNERS,
    kinds={"python"},
    code_version=code_version(card),
    description="`<out>/README.md`, the dataset card: YAML header with the preview config, the splits "
    "table read from every dataset_info.json, layout, POMDP and leakage warnings, loading, upstream "
    "licences.",
)
def dataset_card_asset(paths: GuiAssetsPaths, hub: HubResource) -> dg.MaterializeResult:
    r = card.write_card(paths.out_dir(), hub.upload_repo() or "<owner>/<dataset>")
    text = Path(r["path"]).read_text(encoding="utf-8")
    return dg.MaterializeResult(
        metadata={
            "path": dg.MetadataValue.path(r["path"]),
            "directories": len(r["directories"]),
            "card": dg.MetadataValue.md(text.split("---", 2)[-1][:20000]),
        },
        data_version=dg.DataVersion(hashlib.sha256(text.encode()).hexdigest()[:16]),
    )


@dg.asset(
    key="hub_card",
    deps=[dg.AssetKey("dataset_card"), dg.AssetKey("preview")],
    group_name=GROUP,
    owners=OWNERS,
    kinds={"huggingface", "python"},
    code_version=code_version(hub_writer),
    pool="hf_api",
    description="Uploads the card and the preview parquet to GUI_ASSETS_HUB_REPO (or `<out>/hub/`), sending "
    "only what the repo does not already hold with the same content.",
)
def hub_card_asset(
    context: dg.AssetExecutionContext, paths: GuiAssetsPaths, hub: HubResource
) -> dg.MaterializeResult:
    out = paths.out_dir()
    files = [("README.md", out / "README.md")]
    files += [
        (f"{preview.PREVIEW_DIR}/{p.name}", p) for p in sorted((out / preview.PREVIEW_DIR).glob("*.parquet"))
    ]
    try:
        r = hub_writer.upload(files, hub.target(out), "Upload the dataset card and preview", log=context.log)
    except hub_writer.UploadError as e:
        raise _fail(e) from None
    return dg.MaterializeResult(metadata=r.to_dict())


@dg.asset(
    key="cua_lite_export",
    deps=_INFO_KEYS,
    group_name=GROUP,
    owners=OWNERS,
    kinds={"parquet", "python"},
    code_version=code_version(cua_lite),
    description="`<out>/cua_lite/`: every built directory in cua-lite's canonical local layout (content-"
    "addressed images, `<platform>/use/<split>/<directory>.parquet` with messages and metadata as JSON "
    "strings, coordinates in [0, 1000]) for cua-lite's SFT export.",
)
def cua_lite_export_asset(paths: GuiAssetsPaths) -> dg.MaterializeResult:
    r = cua_lite.write_export(paths.out_dir())
    return dg.MaterializeResult(
        metadata={
            "path": dg.MetadataValue.path(r["root"]),
            "files": dg.MetadataValue.json(r["files"]),
            "episodes": sum(r["files"].values()),
        },
        data_version=dg.DataVersion(
            hashlib.sha256(json.dumps(r["files"], sort_keys=True).encode()).hexdigest()[:16]
        ),
    )


REPO_ASSETS = [preview_asset, dataset_card_asset, hub_card_asset, cua_lite_export_asset]
