"""Image archives: split zips as `zip -s` writes them, zip64, and members refused by reason."""

from __future__ import annotations

import io
import os
import random
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from gui_assets.sources import archives
from gui_assets.sources.archives import ArchiveError, FolderImages, ImageSourceError, ZipImages, open_images

needs_zip = pytest.mark.skipif(shutil.which("zip") is None, reason="the zip tool (Debian package zip)")


@pytest.fixture
def files(tmp_path: Path) -> dict[str, bytes]:
    src = tmp_path / "src"
    src.mkdir()
    data = {f"{i}.png": os.urandom(70_000 + i) for i in range(5)}  # incompressible: segments split members
    for name, b in data.items():
        (src / name).write_bytes(b)
    return data


@needs_zip
@pytest.mark.parametrize("flags", [["-s", "64k"], ["-fz", "-s", "100k"], [], ["-fz"]])
def test_split_plain_and_zip64_archives_read_back_exactly(tmp_path, files, flags):
    out = tmp_path / "arc"
    out.mkdir()
    subprocess.run(["zip", "-q", *flags, str(out / "images.zip"), *files], cwd=tmp_path / "src", check=True)
    z = open_images(out)
    assert isinstance(z, ZipImages)
    assert len(z.segments.paths) == len(list(out.iterdir()))
    assert {n: z.read(n) for n in z.names()} == files
    z.close()


@needs_zip
def test_a_missing_segment_fails_by_name(tmp_path, files):
    out = tmp_path / "arc"
    out.mkdir()
    subprocess.run(
        ["zip", "-q", "-s", "64k", str(out / "images.zip"), *files], cwd=tmp_path / "src", check=True
    )
    (out / "images.z02").unlink()
    with pytest.raises(ArchiveError, match=r"missing segments of images\.zip"):
        ZipImages(out / "images.zip")


def test_refusals_by_reason(tmp_path, monkeypatch):
    path = tmp_path / "images.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("ok.png", b"x" * 100)
        z.writestr("/abs.png", b"x")
        z.writestr("dir/../../up.png", b"x")
        z.writestr("bomb.png", b"\0" * 2_000_000)  # inflates ~2000x
    zi = ZipImages(path)
    assert zi.names() == {"ok.png"}
    assert zi.refused == {
        "abs.png": "unsafe_archive_member",
        "up.png": "unsafe_archive_member",
        "bomb.png": "archive_member_too_large",
    }
    monkeypatch.setattr(archives, "MAX_MEMBER_BYTES", 50)
    assert ZipImages(path).refused["ok.png"] == "archive_member_too_large"


def test_a_corrupt_member_is_a_truncated_member_not_a_crash(tmp_path):
    path = tmp_path / "images.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as z:
        z.writestr("a.png", b"A" * 1000)
    raw = bytearray(path.read_bytes())
    raw[raw.index(b"A" * 10) + 5] ^= 0xFF  # flip a byte of the member's data
    path.write_bytes(bytes(raw))
    with pytest.raises(ArchiveError) as e:
        ZipImages(path).read("a.png")
    assert e.value.reason == "truncated_archive_member"
    path.write_bytes(b"PK\x03\x04 not a whole archive")
    with pytest.raises(ArchiveError, match="no end of central directory"):
        ZipImages(path)


def test_folders_are_indexed_by_file_name(tmp_path):
    (tmp_path / "imgs" / "nested").mkdir(parents=True)
    (tmp_path / "imgs" / "nested" / "a.png").write_bytes(b"a")
    (tmp_path / "imgs" / "notes.txt").write_text("no")
    src = open_images(tmp_path / "imgs")
    assert isinstance(src, FolderImages) and src.names() == {"a.png"} and src.read("a.png") == b"a"
    with pytest.raises(ImageSourceError, match=r"no images\.zip and no extracted images"):
        open_images(tmp_path / "empty")


def test_symlink_members_are_refused_and_reading_one_names_the_reason(tmp_path):
    path = tmp_path / "images.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("ok.png", b"x" * 100)
        link = zipfile.ZipInfo("shot.png")
        link.create_system = 3  # Unix
        link.external_attr = 0o120777 << 16  # S_IFLNK: the member's data is a link target
        z.writestr(link, "/etc/passwd")
    zi = ZipImages(path)
    assert zi.names() == {"ok.png"} and zi.refused == {"shot.png": "unsafe_archive_member"}
    with pytest.raises(ArchiveError) as e:
        zi.read("shot.png")
    assert e.value.reason == "unsafe_archive_member"


def test_a_folder_symlink_pointing_outside_is_refused(tmp_path):
    outside = tmp_path / "secret.png"
    outside.write_bytes(b"not yours")
    (tmp_path / "imgs").mkdir()
    (tmp_path / "imgs" / "a.png").write_bytes(b"a")
    (tmp_path / "imgs" / "b.png").symlink_to(outside)
    (tmp_path / "imgs" / "c.png").symlink_to(tmp_path / "imgs" / "a.png")  # inside: fine
    src = FolderImages(tmp_path / "imgs")
    assert src.names() == {"a.png", "c.png"} and src.refused == {"b.png": "unsafe_archive_member"}


def test_nothing_is_ever_extracted_to_disk(tmp_path):
    """Members are read into memory by name; a hostile name cannot place a file anywhere."""
    path = tmp_path / "a" / "images.zip"
    path.parent.mkdir()
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("../../escaped.png", b"x")
        z.writestr("/tmp/escaped_abs.png", b"x")
        z.writestr("fine.png", b"y")
    before = {p for p in tmp_path.rglob("*")}
    zi = ZipImages(path)
    assert zi.read("fine.png") == b"y"
    for name in ("escaped.png", "escaped_abs.png"):
        with pytest.raises(ArchiveError):
            zi.read(name)
    assert {p for p in tmp_path.rglob("*")} == before
    assert not Path("/tmp/escaped_abs.png").exists()


def _understated(path: Path, real: int, declared: int) -> None:
    """A zip whose member inflates to `real` bytes while both its headers say `declared`."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("liar.png", b"\0" * real)
        z.writestr("fine.png", b"y" * 1000)
    raw = bytearray(path.read_bytes())
    local = raw.index(b"PK\x03\x04")
    raw[local + 22 : local + 26] = declared.to_bytes(4, "little")
    central = raw.index(b"PK\x01\x02")
    raw[central + 24 : central + 28] = declared.to_bytes(4, "little")
    path.write_bytes(bytes(raw))


def test_a_member_that_understates_its_size_is_refused_before_it_inflates(tmp_path):
    path = tmp_path / "images.zip"
    _understated(path, real=512 * 1024 * 1024, declared=600_000)  # ~500 KB on disk
    zi = ZipImages(path)
    assert {"liar.png", "fine.png"} <= zi.names()  # the headers look like a screenshot's
    with pytest.raises(ArchiveError) as e:
        zi.read("liar.png")
    assert e.value.reason == "archive_member_too_large" and "600000" in str(e.value)
    assert zi.read("fine.png") == b"y" * 1000
    # In a process of its own: the refusal cost the declared size, not the real 512 MB.
    probe = (
        "import resource, sys; from pathlib import Path\n"
        "from gui_assets.sources.archives import ZipImages, ArchiveError\n"
        "zi = ZipImages(Path(sys.argv[1]))\n"
        "base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "try:\n    zi.read('liar.png')\nexcept ArchiveError:\n    pass\n"
        "print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) // 1024)"
    )
    grew = subprocess.run(
        [sys.executable, "-c", probe, str(path)], capture_output=True, text=True, check=True
    )
    assert int(grew.stdout.strip()) < 64, grew.stdout


def test_a_nested_zip_or_a_lying_member_made_by_the_fuzzer_is_refused_or_dropped(tmp_path):
    from gui_assets_tests.fuzz_damage import LIAR_BYTES, _nested, _understate

    path = tmp_path / "images.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("shot.png", b"\0" * LIAR_BYTES)
        z.writestr("inner.png", _nested("inner.png", b"\x89PNG\r\n\x1a\n" + b"x" * 100))
    _understate(path, "shot.png", 70_000)
    zi = ZipImages(path)
    with pytest.raises(ArchiveError) as e:
        zi.read("shot.png")
    assert e.value.reason == "archive_member_too_large"
    assert zi.read("inner.png").startswith(b"PK\x03\x04")  # a zip, not an image: the decoder drops it


def test_an_archive_of_two_hundred_thousand_members_indexes_in_bounded_time_and_memory(tmp_path):
    path = tmp_path / "images.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as z:
        for i in range(200_000):
            z.writestr(f"shots/{i}.png", b"x")
    probe = (
        "import sys, time; from pathlib import Path\n"
        "from gui_assets.sources.archives import ZipImages\n"
        "t = time.perf_counter(); zi = ZipImages(Path(sys.argv[1]))\n"
        "assert len(zi.names()) == 200_000 and zi.read('7.png') == b'x'\n"
        "hwm = [ln for ln in Path('/proc/self/status').read_text().splitlines() if ln.startswith('VmHWM:')]\n"
        "print(time.perf_counter() - t, int(hwm[0].split()[1]) // 1024)"
    )
    # VmHWM, not ru_maxrss: a child spawned (vfork) by a big pytest process inherits its
    # parent's high-water mark in ru_maxrss, which said 1.2 GB for a 100 MB index under CI.
    r = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True, check=True)
    seconds, peak_mb = r.stdout.split()
    assert float(seconds) < 20 and int(peak_mb) < 1024, r.stdout


@needs_zip
def test_a_zip64_record_said_to_be_on_a_missing_segment_fails_by_name(tmp_path, files):
    out = tmp_path / "arc"
    out.mkdir()
    subprocess.run(["zip", "-q", "-fz", str(out / "images.zip"), *files], cwd=tmp_path / "src", check=True)
    raw = bytearray((out / "images.zip").read_bytes())
    locator = raw.rfind(b"PK\x06\x07")
    raw[locator + 4 : locator + 8] = (7).to_bytes(4, "little")  # the zip64 record "on disk 7"
    (out / "images.zip").write_bytes(bytes(raw))
    with pytest.raises(ArchiveError, match=r"images\.zip: zip64 record on a missing segment"):
        ZipImages(out / "images.zip")


# --- a zip cut into byte ranges (GUI-Odyssey's zips/screenshots_01, _02, ...) ------------------


def _cut(data: bytes, cuts: list[int], folder: Path) -> list[Path]:
    """`data` as parts screenshots_01, _02, ... cut at the offsets `cuts`."""
    folder.mkdir(parents=True, exist_ok=True)
    bounds = [0, *cuts, len(data)]
    parts = []
    for n in range(len(bounds) - 1):
        parts.append(folder / f"screenshots_{n + 1:02d}")
        parts[-1].write_bytes(data[bounds[n] : bounds[n + 1]])
    return parts


def _zip_bytes(members: dict[str, bytes], compression: int) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as z:
        for name, data in members.items():
            z.writestr(f"shots/{name}", data)
    return buffer.getvalue()


def test_byte_range_parts_read_as_the_joined_file(tmp_path):
    data = random.Random(9).randbytes(10_000)
    parts = _cut(data, [1234, 1235, 1235, 7000], tmp_path)  # a 1-byte part and an empty one
    stream = archives._Segments(parts)
    rng = random.Random(0)
    for _ in range(300):
        pos, n = rng.randrange(0, len(data)), rng.randrange(0, 3000)
        if pos + n <= len(data):
            assert stream.read(pos, n) == data[pos : pos + n]
        else:
            with pytest.raises(ArchiveError, match=r"read past the end of screenshots_05"):
                stream.read(pos, n)
    with pytest.raises(ArchiveError, match=r"read past the end of screenshots_05"):
        stream.read(len(data) + 100, 1)  # an offset beyond every part: refused, not a ValueError
    assert stream.holding(1000, 300) == "screenshots_01, screenshots_02, screenshots_04"
    stream.close()


@pytest.mark.parametrize("compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_a_zip_cut_anywhere_reads_back_exactly(tmp_path, files, compression):
    data = _zip_bytes(files, compression)
    for k, cuts in enumerate(([len(data) // 2], [100, 70_000, 150_000, len(data) - 10], [len(data) - 1])):
        # The last two cuts fall inside the end record: it is searched across the parts.
        parts = _cut(data, cuts, tmp_path / str(k))
        zi = ZipImages(tmp_path / str(k) / "screenshots", parts)
        assert {n: zi.read(n) for n in zi.names()} == files, cuts
        zi.close()


def test_byte_range_damage_is_named_by_part(tmp_path, files):
    data = bytearray(_zip_bytes(files, zipfile.ZIP_STORED))
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as z:
        second = z.getinfo("shots/1.png").header_offset
    data[second + 100] ^= 0xFF  # member 1.png's data, which the cut below puts in part 02
    parts = _cut(bytes(data), [second - 10, len(data) - 5], tmp_path / "zips")
    zi = ZipImages(tmp_path / "zips" / "screenshots", parts)
    with pytest.raises(ArchiveError, match=r"1\.png in screenshots_02: size or CRC mismatch") as e:
        zi.read("1.png")
    assert e.value.reason == "truncated_archive_member" and zi.read("0.png") == files["0.png"]
    # A part cut after opening: the member read across it is refused naming that part.
    parts[0].write_bytes(parts[0].read_bytes()[:500])
    with pytest.raises(ArchiveError, match=r"read past the end of screenshots_01") as e:
        zi.read("0.png")
    assert e.value.reason == "truncated_archive_member"
    zi.close()


def test_byte_range_parts_missing_or_cut_fail_to_open_naming_every_part(tmp_path, files):
    data = _zip_bytes(files, zipfile.ZIP_STORED)
    parts = _cut(data, [100_000, 200_000], tmp_path / "zips")
    with pytest.raises(
        ArchiveError, match=r"screenshots \(2 part\(s\) screenshots_01, screenshots_02 in"
    ) as e:
        ZipImages(tmp_path / "zips" / "screenshots", parts[:2])  # the last part, with the end record, lost
    assert e.value.reason == "truncated_archive"
    parts[1].write_bytes(parts[1].read_bytes()[:-700])  # the directory's offset now lies past the data
    with pytest.raises(ArchiveError, match=r"screenshots_03 in .*: its directory runs past the end") as e:
        ZipImages(tmp_path / "zips" / "screenshots", parts)
    assert e.value.reason == "truncated_archive"
    with pytest.raises(FileNotFoundError, match=r"screenshots_07"):
        ZipImages(tmp_path / "zips" / "screenshots", [tmp_path / "zips" / "screenshots_07"])
    with pytest.raises(ArchiveError, match=r"screenshots: no parts"):
        ZipImages(tmp_path / "zips" / "screenshots", [])


def test_a_cut_end_record_or_directory_entry_is_a_truncated_archive_not_a_crash(tmp_path):
    path = tmp_path / "images.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("a.png", b"a" * 100)
        z.writestr("b.png", b"b" * 100)
    whole = path.read_bytes()
    path.write_bytes(whole[:-10])  # the end record's signature is there, its fields are not
    with pytest.raises(ArchiveError, match=r"images\.zip: no end of central directory"):
        ZipImages(path)
    raw = bytearray(whole)
    eocd = raw.rfind(b"PK\x05\x06")
    size = int.from_bytes(raw[eocd + 12 : eocd + 16], "little")
    raw[eocd + 12 : eocd + 16] = (size - 20).to_bytes(4, "little")  # the last entry's header cut short
    path.write_bytes(bytes(raw))
    with pytest.raises(ArchiveError, match=r"images\.zip: corrupt central directory") as e:
        ZipImages(path)
    assert e.value.reason == "truncated_archive"


def test_two_different_members_or_files_under_one_name_are_recorded_as_clashes(tmp_path):
    path = tmp_path / "images.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("d0/a.png", b"one")
        z.writestr("d1/a.png", b"two")
        z.writestr("d0/b.png", b"same")
        z.writestr("d1/b.png", b"same")
    zi = ZipImages(path)
    assert zi.clashes == {"a.png": ("d0/a.png", "d1/a.png")} and zi.read("a.png") == b"one"
    for k, data in enumerate((b"one", b"three")):
        (tmp_path / "imgs" / f"d{k}").mkdir(parents=True)
        (tmp_path / "imgs" / f"d{k}" / "a.png").write_bytes(data)
        (tmp_path / "imgs" / f"d{k}" / "b.png").write_bytes(b"same")
    folder = FolderImages(tmp_path / "imgs")
    assert set(folder.clashes) == {"a.png"} and set(folder.members) == {"a.png", "b.png"}


def test_reading_a_refused_folder_file_names_the_reason(tmp_path):
    (tmp_path / "secret.png").write_bytes(b"not yours")
    (tmp_path / "imgs").mkdir()
    (tmp_path / "imgs" / "b.png").symlink_to(tmp_path / "secret.png")
    with pytest.raises(ArchiveError) as e:
        FolderImages(tmp_path / "imgs").read("b.png")
    assert e.value.reason == "unsafe_archive_member"
    with pytest.raises(KeyError):
        FolderImages(tmp_path / "imgs").read("absent.png")
