"""The parts of a whole output folder beside its `<directory>/`s: the card, the preview config and
the cua-lite export. Their parquet files are judged by their bytes (the parquet magic at both ends),
not their columns: this judge reads files with h5py, numpy and json alone."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np

from gui_assets.validate.format import CARD, CUA_LITE_DIR, PARQUET_MAGIC, PREVIEW_DIR
from gui_assets.validate.report import Target

HEX64 = re.compile(r"[0-9a-f]{64}")
IMAGES = "images"
IMAGE_SAMPLES = 32  # content-addressed images hashed per export, unless every one is asked for


def is_parquet(path: Path) -> bool:
    size = path.stat().st_size
    if size < 2 * len(PARQUET_MAGIC):
        return False
    with path.open("rb") as f:
        head = f.read(len(PARQUET_MAGIC))
        f.seek(-len(PARQUET_MAGIC), 2)
        return head == PARQUET_MAGIC and f.read() == PARQUET_MAGIC


def _yaml_header(text: str) -> str | None:
    if not text.startswith("---\n"):
        return None
    end = text.find("\n---", 4)
    return text[4:end] if end >= 0 else None


def check_card(target: Target, out: Path) -> None:
    card = out / CARD
    if not card.is_file():
        return
    target.check("out.card")
    header = _yaml_header(card.read_text(encoding="utf-8", errors="replace"))
    if header is None:
        target.find("out.card", "README.md opens with no YAML header (---)", CARD)
        return
    config = re.search(r"^- config_name:\s*preview\s*$(.*?)(?=^- config_name:|\Z)", header, re.M | re.S)
    if config is None:
        target.find("out.card", "the YAML header declares no config `preview`", CARD)
        return
    body = config.group(1)
    if not re.search(r"split:\s*sample\b", body):
        target.find("out.card", "config `preview` has no split `sample`", CARD)
    if not re.search(rf"path:\s*{PREVIEW_DIR}/\S*\.parquet", body):
        target.find("out.card", f"config `preview` reads no {PREVIEW_DIR}/*.parquet files", CARD)


def check_preview(target: Target, out: Path) -> None:
    folder = out / PREVIEW_DIR
    if not folder.is_dir():
        return
    target.check("preview.parquet")
    files = sorted(folder.glob("*.parquet"))
    if not files:
        target.find("preview.parquet", "preview/ holds no .parquet file", PREVIEW_DIR)
    for path in files:
        if not is_parquet(path):
            target.find(
                "preview.parquet", "not a parquet file (no PAR1 at both ends)", f"{PREVIEW_DIR}/{path.name}"
            )


def check_cua_lite(target: Target, out: Path, full: bool) -> None:
    export = out / CUA_LITE_DIR
    if not export.is_dir():
        return
    target.check("cua_lite.layout", "cua_lite.images")
    roots = sorted(p.parent for p in export.rglob(IMAGES) if p.is_dir())
    if not roots:
        target.find("cua_lite.layout", "the export has no images/ folder", CUA_LITE_DIR)
    for path in sorted(export.rglob("*.parquet")):
        root = next((r for r in roots if path.is_relative_to(r)), None)
        rel = path.relative_to(root) if root else path.relative_to(export)
        shown = str(path.relative_to(out))
        if root is None or len(rel.parts) != 4 or rel.parts[0] == IMAGES:
            target.find(
                "cua_lite.layout",
                "not at <platform>/<task_type>/<split>/<variant>.parquet beside images/",
                shown,
            )
        elif not is_parquet(path):
            target.find("cua_lite.layout", "not a parquet file (no PAR1 at both ends)", shown)
    for root in roots:
        _images(target, out, root / IMAGES, full)


def _images(target: Target, out: Path, images: Path, full: bool) -> None:
    files = sorted(p for p in images.rglob("*") if p.is_file() and not p.name.startswith("."))
    named = []
    for path in files:
        rel = path.relative_to(images)
        sha = path.name.split(".", 1)[0]
        if len(rel.parts) != 2 or not HEX64.fullmatch(sha) or rel.parts[0] != sha[:2] or "." not in path.name:
            target.find(
                "cua_lite.images", "not images/<sha256[:2]>/<sha256>.<ext>", str(path.relative_to(out))
            )
        else:
            named.append((path, sha))
    if not full and len(named) > IMAGE_SAMPLES:
        picks = np.linspace(0, len(named) - 1, IMAGE_SAMPLES).round().astype(int)
        named = [named[i] for i in sorted(set(picks.tolist()))]
    for path, sha in named:
        if hashlib.sha256(path.read_bytes()).hexdigest() != sha:
            target.find("cua_lite.images", "its bytes do not hash to its name", str(path.relative_to(out)))
    target.figures["images_hashed"] += len(named)
