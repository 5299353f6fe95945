"""The cua-lite export's cost follows what changed: unchanged directories are reused from their
manifests (and give the bytes and result of a fresh export), a changed or damaged one is
recomputed, whole screenshots are hard links into the image store, and windows encoded on threads
are the bytes encoded in order."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from gui_assets.core.episode_store import EpisodeWriter, ImageStore, iter_episodes, read_stats
from gui_assets.core.layout import DatasetInfo, OutLayout
from gui_assets.pipeline.chain import RawSettings, build_directory
from gui_assets.publish import cua_lite, cua_lite_frames
from gui_assets.publish import cua_lite_manifest as manifest
from gui_assets.sources.agentnet.source import SPEC as AGENTNET
from gui_assets.sources.mind2web.source import SPEC as MIND2WEB
from gui_assets.sources.weblinx.source import SPEC as WEBLINX

DIRECTORIES = ("agentnet_ubuntu", "mind2web_test_task", "weblinx_valid")
WINDOWED = "mind2web_test_task"  # full pages shown through viewport windows


@pytest.fixture(scope="module")
def built(demo_mirror: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Mind2Web (full pages: windows), AgentNet (whole screenshots, a holdout) and WebLINX (a
    validation split) built once; few windows, which cost most of an export."""
    out = tmp_path_factory.mktemp("cua_lite_incremental")
    for spec, key in ((MIND2WEB, "test_task"), (AGENTNET, "ubuntu"), (WEBLINX, "valid")):
        build_directory(spec, key, out, RawSettings(mode="mirror", mirror=demo_mirror))
    return out


def _copy(built: Path, dest: Path) -> Path:
    """A private build tree (its own image store), never exported yet."""
    shutil.copytree(built, dest, ignore=shutil.ignore_patterns(cua_lite.EXPORT_DIR, manifest.MANIFEST_DIR))
    return dest


def _files(out: Path) -> dict[str, bytes]:
    """The export's parquet files by relative path."""
    root = out / cua_lite.EXPORT_DIR
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.parquet"))}


def _images(out: Path) -> dict[str, bytes]:
    """The export's image files by relative path."""
    root = out / cua_lite.EXPORT_DIR
    images = root / cua_lite.NAME / "images"
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(images.rglob("*")) if p.is_file()}


def _portable(result: dict[str, Any]) -> dict[str, Any]:
    """The result without its absolute root, to compare two trees' exports."""
    return {k: v for k, v in result.items() if k != "root"}


@pytest.fixture
def computed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The directories whose episodes the export reads, in order."""
    calls: list[str] = []
    real = cua_lite._export_directory

    def counting(info: DatasetInfo, *args: Any) -> Iterator[tuple[str, dict[str, Any]]]:
        calls.append(info.directory)
        return real(info, *args)

    monkeypatch.setattr(cua_lite, "_export_directory", counting)
    return calls


def _fresh(out: Path, dest: Path, evaluation_as_validation: bool = False) -> tuple[dict[str, Any], Path]:
    """The export of the same build from scratch, in another tree."""
    _copy(out, dest)
    return cua_lite.write_export(dest, evaluation_as_validation), dest


def test_an_unchanged_build_reuses_every_directory_and_matches_a_fresh_export(built, tmp_path, computed):
    out = _copy(built, tmp_path / "out")
    first, run = cua_lite.run_export(out)
    assert run.recomputed == dict.fromkeys(DIRECTORIES, manifest.NEW) and computed == list(DIRECTORIES)
    assert sorted(p.stem for p in (out / "_work" / manifest.MANIFEST_DIR).glob("*.json")) == list(DIRECTORIES)
    parquet = _files(out)
    computed.clear()
    again, run = cua_lite.run_export(out)
    assert computed == [] and run.reused == list(DIRECTORIES) and run.recomputed == {}
    assert again == first and _files(out) == parquet
    fresh, dest = _fresh(out, tmp_path / "fresh")
    assert _portable(fresh) == _portable(again) and _files(dest) == parquet
    assert sum(first["files"].values()) > 0


def _retitle(out: Path, directory: str) -> None:
    """Rebuild a directory's IR with different content (every instruction changed)."""
    folder = OutLayout(out).episodes(directory)
    episodes, stats = list(iter_episodes(folder)), read_stats(folder)
    writer = EpisodeWriter(folder)
    for ep in episodes:
        writer.add(dataclasses.replace(ep, instruction=ep.instruction + " (rebuilt)"))
    writer.close(stats)


def _edit_platform(out: Path, directory: str) -> None:
    path = OutLayout(out).dataset_info(directory)
    info = DatasetInfo.read(path)
    info.build["source"] = {**info.build["source"], "platform": "desktop"}
    info.write(path)


def _new_code(monkeypatch: pytest.MonkeyPatch) -> None:
    version = cua_lite.code_version()
    monkeypatch.setattr(cua_lite, "code_version", lambda: version + "-changed")


# (what changes, which directories that must recompute, the export's setting afterwards)
CHANGES: dict[str, tuple[Callable[[Path, pytest.MonkeyPatch], None], tuple[str, ...], bool]] = {
    "rebuilt_ir": (lambda out, mp: _retitle(out, "mind2web_test_task"), ("mind2web_test_task",), False),
    "dataset_info": (lambda out, mp: _edit_platform(out, "weblinx_valid"), ("weblinx_valid",), False),
    "setting": (lambda out, mp: None, DIRECTORIES, True),
    "code": (lambda out, mp: _new_code(mp), DIRECTORIES, False),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_change_recomputes_the_directories_it_touches_and_no_other(
    change, built, tmp_path, computed, monkeypatch
):
    out = _copy(built, tmp_path / "out")
    cua_lite.write_export(out)
    before = {rel: os.stat(out / cua_lite.EXPORT_DIR / rel) for rel in _files(out)}
    edit, touched, evaluation_as_validation = CHANGES[change]
    edit(out, monkeypatch)
    computed.clear()
    result, run = cua_lite.run_export(out, evaluation_as_validation)
    assert computed == list(touched) and run.recomputed == dict.fromkeys(touched, manifest.CHANGED)
    assert run.reused == [d for d in DIRECTORIES if d not in touched]
    for rel, st in before.items():
        if not any(f"/{d}.parquet" in rel for d in touched):  # reused: the very same file, untouched
            now = os.stat(out / cua_lite.EXPORT_DIR / rel)
            assert (now.st_ino, now.st_mtime_ns) == (st.st_ino, st.st_mtime_ns), rel
    fresh, dest = _fresh(out, tmp_path / "fresh", evaluation_as_validation)
    assert {**_portable(result), "removed": []} == _portable(fresh) and _files(out) == _files(dest)
    if change == "rebuilt_ir":
        rows = pq.read_table(out / cua_lite.EXPORT_DIR / next(f for f in result["files"] if "test_task" in f))
        assert all(
            json.loads(m)[0]["content"][1]["text"].endswith("(rebuilt)") for m in rows["messages"].to_pylist()
        )
    if change == "dataset_info":  # the directory's files moved: the old ones are stale
        assert result["directories"]["weblinx_valid"]["platform"] == "desktop"
        assert result["removed"] == [f"{cua_lite.NAME}/browser/use/validation/weblinx_valid.parquet"]
    else:
        assert result["removed"] == []


def _first_image(out: Path, result: dict[str, Any], directory: str) -> Path:
    rel = next(f for f in result["files"] if f.endswith(f"/{directory}.parquet"))
    return out / cua_lite.EXPORT_DIR / pq.read_table(out / cua_lite.EXPORT_DIR / rel)["images"][0].as_py()[0]


def _delete_parquet(out: Path, result: dict[str, Any]) -> None:
    (out / cua_lite.EXPORT_DIR / next(f for f in result["files"] if WINDOWED in f)).unlink()


def _flip_a_byte(out: Path, result: dict[str, Any]) -> None:
    path = out / cua_lite.EXPORT_DIR / next(f for f in result["files"] if WINDOWED in f)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # the same size: only its sha256 tells
    path.write_bytes(bytes(data))


def _garble_manifest(out: Path, result: dict[str, Any]) -> None:
    (out / "_work" / manifest.MANIFEST_DIR / f"{WINDOWED}.json").write_text('{"format": 1, "key"')


def _delete_image(out: Path, result: dict[str, Any]) -> None:
    _first_image(out, result, WINDOWED).unlink()  # placed again from the store


def _miscount_manifest(out: Path, result: dict[str, Any]) -> None:
    path = out / "_work" / manifest.MANIFEST_DIR / f"{WINDOWED}.json"
    recorded = json.loads(path.read_text())
    recorded["figures"]["rows"] = {split: n + 1 for split, n in recorded["figures"]["rows"].items()}
    path.write_text(json.dumps(recorded))


# what is damaged -> (how, why the directory is then recomputed)
DAMAGE = {
    "parquet_deleted": (_delete_parquet, manifest.FILE_MISSING),
    "parquet_byte_flipped": (_flip_a_byte, manifest.FILE_CHANGED),
    "manifest_garbled": (_garble_manifest, manifest.UNREADABLE_MANIFEST),
    "manifest_miscounts": (_miscount_manifest, manifest.UNREADABLE_MANIFEST),
    "image_deleted": (_delete_image, manifest.IMAGE_MISSING),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_cached_directory_is_recomputed(damage, built, tmp_path, computed):
    out = _copy(built, tmp_path / "out")
    first = cua_lite.write_export(out)
    parquet, images = _files(out), _images(out)
    harm, why = DAMAGE[damage]
    harm(out, first)
    computed.clear()
    result, run = cua_lite.run_export(out)
    assert computed == [WINDOWED] and run.recomputed == {WINDOWED: why}
    assert result == first and _files(out) == parquet and _images(out) == images


def test_a_directory_no_longer_built_loses_its_files_and_manifest(built, tmp_path):
    out = _copy(built, tmp_path / "out")
    first = cua_lite.write_export(out)
    (out / "agentnet_ubuntu" / "dataset_info.json").unlink()
    result, run = cua_lite.run_export(out)
    gone = sorted(f for f in first["files"] if f.endswith("/agentnet_ubuntu.parquet"))
    assert len(gone) == 2 and result["removed"] == gone  # its train and holdout files
    assert run.reused == ["mind2web_test_task", "weblinx_valid"]
    assert not (out / "_work" / manifest.MANIFEST_DIR / "agentnet_ubuntu.json").exists()
    assert "agentnet_ubuntu" not in result["directories"]


def test_whole_screenshots_are_hard_links_into_the_store_and_windows_are_encoded(built, tmp_path):
    out = _copy(built, tmp_path / "out")
    result, run = cua_lite.run_export(out)
    assert run.images["link"] > 0 and run.images["encoded"] > 0
    store = ImageStore(OutLayout(out).image_store)
    linked = encoded = 0
    for rel in result["files"]:
        for images in pq.read_table(out / cua_lite.EXPORT_DIR / rel)["images"].to_pylist():
            for image in images:
                path = out / cua_lite.EXPORT_DIR / image
                sha, ext = path.name.split(".")
                source = store.path(sha, ext)
                if source.exists():
                    assert os.path.samefile(path, source), image
                    linked += 1
                else:  # a window: a PNG of its own
                    assert ext == "png" and path.stat().st_nlink == 1
                    encoded += 1
    assert linked and encoded
    assert any("agentnet_ubuntu" in f for f in result["files"])


def test_across_file_systems_a_frame_is_copied_with_the_same_bytes(built, tmp_path, monkeypatch):
    linked = _copy(built, tmp_path / "linked")
    by_link = cua_lite.write_export(linked)
    out = _copy(built, tmp_path / "out")

    def no_link(src: Any, dst: Any) -> None:
        raise OSError(18, "Invalid cross-device link")  # EXDEV

    monkeypatch.setattr(os, "link", no_link)
    result, run = cua_lite.run_export(out)
    assert "link" not in run.images and run.images.get("copy", 0) + run.images.get("reflink", 0) > 0
    assert _images(out) == _images(linked) and _files(out) == _files(linked)
    assert _portable(result) == _portable(by_link)
    assert all(p.stat().st_nlink == 1 for p in (out / cua_lite.EXPORT_DIR).rglob("*.png"))


def test_threaded_window_encodes_give_the_bytes_and_order_of_sequential_ones(built, tmp_path, monkeypatch):
    threaded = _copy(built, tmp_path / "threaded")
    result, run = cua_lite.run_export(threaded)
    assert cua_lite_frames.WINDOW_WORKERS == 2 and run.images["encoded"] > 1
    monkeypatch.setattr(cua_lite_frames, "WINDOW_WORKERS", 0)
    sequential = _copy(built, tmp_path / "sequential")
    alone, run_alone = cua_lite.run_export(sequential)
    assert run_alone.images == run.images and _portable(alone) == _portable(result)
    assert _files(threaded) == _files(sequential)  # rows, and the image paths in them, in order
    assert _images(threaded) == _images(sequential)


def _window_source(out: Path, directory: str) -> Path:
    """The stored page behind the first screen shown through a window."""
    store = ImageStore(OutLayout(out).image_store)
    for ep in iter_episodes(OutLayout(out).episodes(directory)):
        for step in ep.steps:
            o = step.observation
            path = store.path(o.image_sha256, o.image_ext)
            if (o.left, o.top, o.width, o.height) != (0, 0, *cua_lite_frames.stored_size(path)):
                return path
    raise AssertionError(f"{directory} shows no window")


def test_a_frame_missing_or_broken_in_the_store_leaves_its_episodes_out_by_name(built, tmp_path):
    out = _copy(built, tmp_path / "out")
    intact = cua_lite.write_export(_copy(built, tmp_path / "intact"))
    sha = _first_image(tmp_path / "intact", intact, "agentnet_ubuntu").name.split(".")[0]
    store = ImageStore(OutLayout(out).image_store)
    next(store.root.glob(f"{sha[:2]}/{sha}.*")).unlink()
    page = _window_source(out, WINDOWED)
    page.write_bytes(page.read_bytes()[:200])  # the header survives, the pixels do not
    result = cua_lite.write_export(out)
    episodes = result["left_out"]["episodes"]
    assert episodes[cua_lite.MISSING_IMAGE] >= 1 and episodes[cua_lite.UNDECODABLE_IMAGE] >= 1
    assert sum(result["files"].values()) + episodes[cua_lite.MISSING_IMAGE] + episodes[
        cua_lite.UNDECODABLE_IMAGE
    ] == sum(intact["files"].values())
    total = sum(len(list(iter_episodes(OutLayout(out).episodes(d)))) for d in DIRECTORIES)
    assert sum(result["files"].values()) + sum(episodes.values()) == total


def test_a_directory_streams_through_a_small_window_into_row_groups_with_the_same_rows(
    built, tmp_path, monkeypatch
):
    """Rows wait for their frames in a bounded window and are written a row group at a time:
    memory does not follow the directory, and the rows are those of one big write."""
    whole = cua_lite.write_export(_copy(built, tmp_path / "whole"))
    monkeypatch.setattr(cua_lite, "WINDOW", 1)
    monkeypatch.setattr(cua_lite, "ROW_GROUP", 2)
    small = _copy(built, tmp_path / "small")
    streamed = cua_lite.write_export(small)
    assert _portable(streamed) == _portable(whole)
    groups = 0
    for rel, rows in streamed["files"].items():
        parquet = pq.ParquetFile(small / cua_lite.EXPORT_DIR / rel)
        assert parquet.metadata.num_rows == rows
        assert all(parquet.metadata.row_group(i).num_rows <= 2 for i in range(parquet.num_row_groups))
        groups += parquet.num_row_groups
        ours = pq.read_table(small / cua_lite.EXPORT_DIR / rel).to_pylist()
        assert ours == pq.read_table(tmp_path / "whole" / cua_lite.EXPORT_DIR / rel).to_pylist()
    assert groups > len(streamed["files"])
