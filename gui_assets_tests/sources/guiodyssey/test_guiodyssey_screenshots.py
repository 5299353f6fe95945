"""GUI-Odyssey screenshots: folders, a plain zip, one zip cut into byte-range parts, and a
multi-volume `zip -s` archive, each found where the release keeps it and read by the shared
readers of `gui_assets.sources.archives` (whose own tests cover the byte-range stream itself)."""

from __future__ import annotations

import io
import itertools
import random
import zipfile
from pathlib import Path

import pytest

from gui_assets.sources.archives import ArchiveError, FolderImages, ImageSourceError, ZipImages
from gui_assets.sources.guiodyssey.screenshots import find_zip_parts, open_screenshots


def image_bytes(seed: int, size: int) -> bytes:
    return random.Random(seed).randbytes(size)  # incompressible, so sizes are predictable


IMAGES = {
    "2024100912345678_0.png": image_bytes(1, 3000),
    "2024100912345678_1.png": image_bytes(2, 5000),
    "2024100912345678_2.png": image_bytes(3, 4000),
    "0000000000000001_0.png": image_bytes(4, 100),
}


def build_zip(members: dict[str, bytes], compression: int = zipfile.ZIP_STORED, prefix: str = "") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        for name, data in members.items():
            archive.writestr(prefix + name, data)
    return buffer.getvalue()


def cut_into_parts(data: bytes, cuts: list[int], folder: Path, stem: str = "screenshots") -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    bounds = [0, *cuts, len(data)]
    paths = []
    for number, (start, end) in enumerate(itertools.pairwise(bounds), start=1):
        path = folder / f"{stem}_{number:02d}"
        path.write_bytes(data[start:end])
        paths.append(path)
    return paths


def member_span(archive_bytes: bytes, name: str) -> tuple[int, int]:
    """Byte range (local header to end of data) of a member inside the archive."""
    with zipfile.ZipFile(io.BytesIO(archive_bytes)) as archive:
        info = archive.getinfo(name)
    return info.header_offset, info.header_offset + 30 + len(info.filename) + info.compress_size


# --- split zip ----------------------------------------------------------------------------------


@pytest.mark.parametrize("compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_split_zip_member_spanning_a_boundary(tmp_path: Path, compression: int) -> None:
    archive = build_zip(IMAGES, compression, prefix="screenshots/data_0/")
    start, end = member_span(archive, "screenshots/data_0/2024100912345678_1.png")
    # Three parts: the first cut inside member _1's data, the second inside the central directory.
    cuts = [(start + end) // 2, len(archive) - 40]
    parts = cut_into_parts(archive, cuts, tmp_path / "zips")
    assert find_zip_parts(tmp_path / "zips") == parts
    store = open_screenshots(tmp_path)
    assert isinstance(store, ZipImages) and store.segments.paths == parts
    assert store.names() == set(IMAGES)
    for name, data in IMAGES.items():
        assert store.read(name) == data
    assert store.members["2024100912345678_1.png"].name == "screenshots/data_0/2024100912345678_1.png"
    assert "missing.png" not in store.members and "missing.png" not in store.refused
    with pytest.raises(KeyError, match=r"missing\.png"):
        store.read("missing.png")
    store.close()


def test_missing_middle_part_is_named(tmp_path: Path) -> None:
    parts = cut_into_parts(build_zip(IMAGES), [4000, 9000], tmp_path / "zips")
    parts[1].unlink()
    with pytest.raises(ImageSourceError, match=r"zip parts missing in .*zips: screenshots_02 \(found 2\)"):
        open_screenshots(tmp_path)


def test_missing_last_part(tmp_path: Path) -> None:
    parts = cut_into_parts(build_zip(IMAGES), [4000, 9000], tmp_path / "zips")
    parts[2].unlink()
    with pytest.raises(
        ArchiveError,
        match=r"screenshots \(2 part\(s\) screenshots_01, screenshots_02 in .*zips\): no end of central",
    ) as refused:
        open_screenshots(tmp_path)
    assert refused.value.reason.value == "truncated_archive"  # the partition fails, naming the parts


@pytest.mark.parametrize("change", ["cut", "grown"])
def test_a_middle_part_short_or_long_fails_when_opened(tmp_path: Path, change: str) -> None:
    # Every offset after the damage moves, the central directory's with them: the archive, not
    # some later member, is refused, naming every part.
    parts = cut_into_parts(build_zip(IMAGES), [4000, 9000], tmp_path / "zips")
    middle = parts[1].read_bytes()
    parts[1].write_bytes(middle[:-700] if change == "cut" else middle + bytes(700))
    with pytest.raises(
        ArchiveError, match=r"3 part\(s\) screenshots_01, screenshots_02, screenshots_03"
    ) as e:
        open_screenshots(tmp_path)
    assert e.value.reason.value == "truncated_archive"


def test_truncated_last_part(tmp_path: Path) -> None:
    parts = cut_into_parts(build_zip(IMAGES), [4000, 9000], tmp_path / "zips")
    parts[2].write_bytes(parts[2].read_bytes()[:-10])  # the end-of-central-directory record is cut
    with pytest.raises(ArchiveError, match=r"screenshots_03 in .*zips\): no end of central directory"):
        open_screenshots(tmp_path)


def test_corrupt_member_data_is_a_named_drop(tmp_path: Path) -> None:
    archive = bytearray(build_zip(IMAGES))
    start, end = member_span(bytes(archive), "2024100912345678_2.png")
    archive[end - 10] ^= 0xFF
    cut_into_parts(bytes(archive), [start + 5], tmp_path / "zips")
    store = open_screenshots(tmp_path)
    assert store.read("2024100912345678_0.png") == IMAGES["2024100912345678_0.png"]
    with pytest.raises(
        ArchiveError, match=r"2024100912345678_2\.png in screenshots_01, screenshots_02: size or CRC"
    ) as refused:
        store.read("2024100912345678_2.png")
    assert refused.value.reason.value == "truncated_archive_member"  # the episode is dropped, counted
    store.close()


def test_gap_in_part_numbers_detected_with_wide_numbers(tmp_path: Path) -> None:
    folder = tmp_path / "zips"
    folder.mkdir()
    for number in (1, 2, 4):
        (folder / f"screenshots_{number:03d}").write_bytes(b"x")
    (folder / "annotations.zip").write_bytes(b"not a part")
    with pytest.raises(ImageSourceError, match=r"screenshots_003"):
        find_zip_parts(folder)


# --- plain zip and folders ----------------------------------------------------------------------


def test_plain_zip(tmp_path: Path) -> None:
    (tmp_path / "zips").mkdir()
    (tmp_path / "zips" / "screenshots.zip").write_bytes(build_zip(IMAGES, zipfile.ZIP_DEFLATED))
    store = open_screenshots(tmp_path)
    assert isinstance(store, ZipImages) and store.segments.paths == [tmp_path / "zips" / "screenshots.zip"]
    assert store.read("0000000000000001_0.png") == IMAGES["0000000000000001_0.png"]


def test_plain_zip_that_is_not_a_zip(tmp_path: Path) -> None:
    (tmp_path / "zips").mkdir()
    (tmp_path / "zips" / "screenshots.zip").write_bytes(b"PK\x03\x04 and then nothing useful")
    with pytest.raises(ArchiveError, match=r"screenshots\.zip: no end of central directory"):
        open_screenshots(tmp_path)


def test_two_different_images_with_one_name_in_a_zip(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("data_0/a.png", b"one")
        archive.writestr("data_1/a.png", b"two")
        archive.writestr("data_2/b.png", b"same")
        archive.writestr("data_3/b.png", b"same")  # a copy: no doubt which image a step means
    (tmp_path / "zips").mkdir()
    (tmp_path / "zips" / "screenshots.zip").write_bytes(buffer.getvalue())
    with pytest.raises(
        ImageSourceError,
        match=r"two different images named a\.png in screenshots\.zip: data_0/a.png and data_1",
    ):
        open_screenshots(tmp_path)


def test_two_different_images_with_one_name_in_the_folders(tmp_path: Path) -> None:
    for k, data in enumerate((b"one", b"three")):
        (tmp_path / "screenshots" / f"data_{k}").mkdir(parents=True)
        (tmp_path / "screenshots" / f"data_{k}" / "a.png").write_bytes(data)
        (tmp_path / "screenshots" / f"data_{k}" / "b.png").write_bytes(b"same")
    with pytest.raises(ImageSourceError, match=r"two different images named a\.png in .*screenshots: "):
        open_screenshots(tmp_path)


def test_folder_with_data_subfolders(tmp_path: Path) -> None:
    names = sorted(IMAGES)
    for k, name in enumerate(names):
        folder = tmp_path / "screenshots" / f"data_{k % 2}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(IMAGES[name])
    (tmp_path / "screenshots" / "data_0" / "notes.txt").write_text("not an image")
    store = open_screenshots(tmp_path)
    assert isinstance(store, FolderImages)
    assert store.names() == set(names)
    assert store.read(names[1]) == IMAGES[names[1]]
    assert store.members[names[1]] == tmp_path / "screenshots" / "data_1" / names[1]
    with pytest.raises(KeyError, match=r"absent\.png"):
        store.read("absent.png")


def test_flat_folder_preferred_over_parts(tmp_path: Path) -> None:
    (tmp_path / "screenshots").mkdir()
    for name, data in IMAGES.items():
        (tmp_path / "screenshots" / name).write_bytes(data)
    cut_into_parts(b"garbage that is never opened", [5], tmp_path / "zips")
    store = open_screenshots(tmp_path)
    assert isinstance(store, FolderImages)
    assert store.read("2024100912345678_2.png") == IMAGES["2024100912345678_2.png"]


def test_no_screenshots_anywhere(tmp_path: Path) -> None:
    with pytest.raises(ImageSourceError, match=r"no screenshots under"):
        open_screenshots(tmp_path)


# --- multi-volume `zip -s` archives (hflqf88888/GUIOdyssey ships its screenshots this way) ----------

FIXTURES = Path(__file__).parent / "fixtures"
# Made with Info-ZIP 3.0: `zip -0 -X -s 64k screenshots.zip screenshots/*.png` (plus `-fz` to force
# zip64 records, as an 87 GB archive has); members are random.Random(100 + i).randbytes(30000).
SPANNED_MEMBERS = {f"0000000000000042_{i}.png": random.Random(100 + i).randbytes(30000) for i in range(3)}


def copy_volumes(kind: str, target: Path, skip: tuple[str, ...] = ()) -> Path:
    folder = target / "screenshots"
    folder.mkdir(parents=True)
    for volume in (FIXTURES / kind).iterdir():
        if volume.name not in skip:
            (folder / volume.name).write_bytes(volume.read_bytes())
    return folder


@pytest.mark.parametrize("kind", ["spanned_plain", "spanned_zip64"])
def test_spanned_archive_read_across_volumes(tmp_path: Path, kind: str) -> None:
    copy_volumes(kind, tmp_path)
    store = open_screenshots(tmp_path)
    assert isinstance(store, ZipImages)
    assert [p.name for p in store.segments.paths] == ["screenshots.z01", "screenshots.zip"]
    assert store.names() == set(SPANNED_MEMBERS)
    for name, data in SPANNED_MEMBERS.items():
        assert store.read(name) == data  # member _2 starts in .z01 and ends in .zip
    assert store.members["0000000000000042_1.png"].name == "screenshots/0000000000000042_1.png"
    assert "0000000000000042_3.png" not in store.members and "0000000000000042_3.png" not in store.refused
    with pytest.raises(KeyError, match=r"0000000000000042_3\.png"):
        store.read("0000000000000042_3.png")
    store.close()


def test_spanned_archive_with_a_volume_missing_is_named(tmp_path: Path) -> None:
    copy_volumes("spanned_zip64", tmp_path, skip=("screenshots.z01",))
    with pytest.raises(ArchiveError, match=r"screenshots\.zip: zip64 record on a missing segment"):
        open_screenshots(tmp_path)


def test_spanned_archive_with_a_gap_in_its_volumes_is_named(tmp_path: Path) -> None:
    folder = copy_volumes("spanned_plain", tmp_path)
    (folder / "screenshots.z01").rename(folder / "screenshots.z02")
    with pytest.raises(ArchiveError, match=r"missing segments of screenshots\.zip: .*screenshots\.z02"):
        open_screenshots(tmp_path)


def test_spanned_archive_without_its_last_volume_is_named(tmp_path: Path) -> None:
    copy_volumes("spanned_plain", tmp_path, skip=("screenshots.zip",))
    with pytest.raises(
        ImageSourceError, match=r"volumes screenshots\.z01 without their last one, screenshots\.zip"
    ):
        open_screenshots(tmp_path)


@pytest.mark.parametrize("kind", ["spanned_plain", "spanned_zip64"])
def test_spanned_archive_with_a_short_volume_drops_the_cut_member(tmp_path: Path, kind: str) -> None:
    # The central directory sits in the last volume, so a short first volume still opens; the
    # member whose bytes were cut (_2 runs from the end of .z01 into .zip) is refused when read.
    folder = copy_volumes(kind, tmp_path)
    first = folder / "screenshots.z01"
    first.write_bytes(first.read_bytes()[:-100])
    store = open_screenshots(tmp_path)
    assert store.read("0000000000000042_0.png") == SPANNED_MEMBERS["0000000000000042_0.png"]
    with pytest.raises(
        ArchiveError, match=r"0000000000000042_2\.png in screenshots\.z01, screenshots\.zip"
    ) as refused:
        store.read("0000000000000042_2.png")
    assert refused.value.reason.value == "truncated_archive_member"
    store.close()


@pytest.mark.parametrize("kind", ["spanned_plain", "spanned_zip64"])
def test_spanned_volumes_renamed_as_byte_range_parts_still_read_exactly(tmp_path: Path, kind: str) -> None:
    # zipfile reads such parts at the wrong offsets; the shared reader resolves each member's
    # volume number against the parts, so a mirror that renamed its volumes still reads right.
    folder = copy_volumes(kind, tmp_path)
    (tmp_path / "zips").mkdir()
    (folder / "screenshots.z01").rename(tmp_path / "zips" / "screenshots_01")
    (folder / "screenshots.zip").rename(tmp_path / "zips" / "screenshots_02")
    folder.rmdir()
    store = open_screenshots(tmp_path)
    assert {name: store.read(name) for name in store.names()} == SPANNED_MEMBERS
    store.close()


# --- members refused by the shared archive rules ------------------------------------------------


def test_an_encrypted_or_bomb_member_is_refused_before_it_is_read(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("screenshots/0000000000000001_0.png", b"not really encrypted")
        archive.writestr("screenshots/0000000000000001_1.png", bytes(4_000_000))  # inflates 1000x
        archive.writestr("screenshots/0000000000000001_2.png", IMAGES["0000000000000001_0.png"])
    data = bytearray(buffer.getvalue())
    central = data.find(b"PK\x01\x02")  # the first member's central record: mark it encrypted
    data[central + 8] |= 0x1  # (zipfile would then ask for a password)
    (tmp_path / "zips").mkdir()
    (tmp_path / "zips" / "screenshots.zip").write_bytes(bytes(data))
    store = open_screenshots(tmp_path)
    for name, reason in (
        ("0000000000000001_0.png", "encrypted_archive_member"),
        ("0000000000000001_1.png", "archive_member_too_large"),
    ):
        with pytest.raises(ArchiveError) as refused:
            store.read(name)
        assert refused.value.reason.value == reason
    assert store.read("0000000000000001_2.png") == IMAGES["0000000000000001_0.png"]
    store.close()


def test_a_link_out_of_the_screenshot_folder_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"outside the mirror")
    (tmp_path / "repo" / "screenshots").mkdir(parents=True)
    (tmp_path / "repo" / "screenshots" / "0000000000000001_0.png").symlink_to(secret)
    store = open_screenshots(tmp_path / "repo")
    assert isinstance(store, FolderImages)  # a folder holding only a refused image is still the source
    with pytest.raises(ArchiveError) as refused:
        store.read("0000000000000001_0.png")
    assert refused.value.reason.value == "unsafe_archive_member"
