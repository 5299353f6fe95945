"""Image archives: split zips as `zip -s` writes them, zip64, and members refused by reason."""

from __future__ import annotations

import os
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
