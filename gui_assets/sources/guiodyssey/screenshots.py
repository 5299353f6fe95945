"""GUI-Odyssey screenshots, wherever a mirror keeps them, looked up by file name.

Shapes handled: folders `screenshots/data_<k>/*.png` (OpenGVLab/GUI-Odyssey, 2024), the same
files flat in `screenshots/` (what the upstream `preprocessing.py` leaves), one zip, one zip cut
into byte ranges `zips/screenshots_01`, `zips/screenshots_02`, ... whose concatenation is the zip,
and the multi-volume `zip -s` archive the newer `hflqf88888/GUIOdyssey` ships
(`screenshots/screenshots.z01` ... then `screenshots.zip`).

For the byte ranges, `ConcatenatedParts` is a read-only, seekable file over the ordered parts
handed to `zipfile`, so a member is found through the archive's central directory and read across
part boundaries without ever joining the parts on disk. A `zip -s` archive is not such a
concatenation (each member's offset counts from the start of its own volume, and `zipfile`
refuses multi-disk archives), so it is read by the project's own central-directory reader,
`gui_assets.sources.archives.ZipImages`, which resolves every member's volume and offset.

An annotation names its screenshot by file name only (`<episode_id>_<step>.png`), so every
store indexes its images by base name. An archive or folder that cannot be used (a missing or
short part, no end record, two different images under one name) is a `ScreenshotSourceError`
naming the files: the partition fails. One damaged member is an `ArchiveError` (a Drop with its
reason): the episode that needs it is dropped and counted.
"""

from __future__ import annotations

import bisect
import io
import os
import re
import struct
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Protocol

from gui_assets.core.drops import DropReason
from gui_assets.sources.archives import MAX_MEMBER_BYTES, MAX_RATIO, ArchiveError, ZipImages, split_segments

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
_PART_NAME = re.compile(r"^(?P<stem>.+)_(?P<number>\d+)$")


class ScreenshotSourceError(Exception):
    """Screenshots that cannot be read: a missing or short part, a broken zip, a missing member,
    two different images under one name. The message names the files involved."""


# --- one zip cut into parts ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Part:
    path: Path
    start: int  # offset of the part's first byte in the concatenation
    size: int


class ConcatenatedParts(io.RawIOBase):
    """The ordered files `paths` read as one file (read, seek and tell across part boundaries).

    Part sizes are taken when it is opened; a part that later reads short (changed or truncated
    underneath us) is a ScreenshotSourceError rather than silently wrong bytes. Only one part
    file is open at a time."""

    def __init__(self, paths: Sequence[str | os.PathLike[str]]) -> None:
        super().__init__()
        if not paths:
            raise ScreenshotSourceError("no zip parts given")
        parts: list[_Part] = []
        start = 0
        for raw_path in paths:
            path = Path(raw_path)
            try:
                size = path.stat().st_size
            except OSError as err:
                raise ScreenshotSourceError(
                    f"zip part {path} cannot be opened: {err.strerror or err}"
                ) from err
            parts.append(_Part(path, start, size))
            start += size
        self.parts: tuple[_Part, ...] = tuple(parts)
        self.size = start
        self._starts = [part.start for part in parts]
        self._position = 0
        self._open_index: int | None = None
        self._open_file: BinaryIO | None = None

    def describe(self) -> str:
        names = ", ".join(part.path.name for part in self.parts)
        return f"{len(self.parts)} part(s) in {self.parts[0].path.parent} ({names}; {self.size} bytes)"

    # io.RawIOBase protocol
    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_SET:
            target = offset
        elif whence == io.SEEK_CUR:
            target = self._position + offset
        elif whence == io.SEEK_END:
            target = self.size + offset
        else:
            raise ValueError(f"invalid whence {whence}")
        if target < 0:
            raise ValueError(f"negative seek position {target}")
        self._position = target
        return target

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        view = memoryview(buffer).cast("B")
        filled = 0
        while filled < len(view) and self._position < self.size:
            index = bisect.bisect_right(self._starts, self._position) - 1
            part = self.parts[index]
            within = self._position - part.start
            want = min(len(view) - filled, part.size - within)
            handle = self._handle(index)
            handle.seek(within)
            got = handle.readinto(view[filled : filled + want])  # type: ignore[attr-defined]
            if not got:
                raise ScreenshotSourceError(
                    f"zip part {part.path} ends at byte {within}, {part.size} bytes when opened: "
                    f"it changed or was truncated while being read"
                )
            filled += got
            self._position += got
        return filled

    def _handle(self, index: int) -> BinaryIO:
        if self._open_index != index:
            self._close_handle()
            path = self.parts[index].path
            try:
                self._open_file = open(path, "rb")  # noqa: SIM115 - closed by _close_handle()
            except OSError as err:
                raise ScreenshotSourceError(
                    f"zip part {path} cannot be opened: {err.strerror or err}"
                ) from err
            self._open_index = index
        assert self._open_file is not None
        return self._open_file

    def _close_handle(self) -> None:
        if self._open_file is not None:
            self._open_file.close()
        self._open_file = None
        self._open_index = None

    def close(self) -> None:
        self._close_handle()
        super().close()


def find_zip_parts(directory: str | os.PathLike[str], stem: str = "screenshots") -> list[Path]:
    """The parts `<stem>_01`, `<stem>_02`, ... in `directory`, in numeric order.

    The numbering must run from 1 without a gap; a gap is a ScreenshotSourceError naming the
    missing part (a missing LAST part cannot be seen from names: opening the zip catches it)."""
    directory = Path(directory)
    numbered: dict[int, Path] = {}
    widths: set[int] = set()
    try:
        entries = list(directory.iterdir())
    except OSError as err:
        raise ScreenshotSourceError(f"cannot list {directory}: {err.strerror or err}") from err
    for entry in entries:
        match = _PART_NAME.match(entry.name)
        if match is None or match["stem"] != stem or not entry.is_file():
            continue
        number = int(match["number"])
        if number in numbered:
            raise ScreenshotSourceError(f"two parts numbered {number}: {numbered[number]} and {entry}")
        numbered[number] = entry
        widths.add(len(match["number"]))
    if not numbered:
        raise ScreenshotSourceError(f"no zip parts {stem}_NN in {directory}")
    width = max(widths)
    missing = [n for n in range(1, max(numbered) + 1) if n not in numbered]
    if missing:
        names = ", ".join(f"{stem}_{n:0{width}d}" for n in missing)
        raise ScreenshotSourceError(f"zip parts missing in {directory}: {names} (found {len(numbered)})")
    return [numbered[n] for n in sorted(numbered)]


_SPANNING_MARKER = b"PK\x07\x08"  # the first 4 bytes of volume 1 of a `zip -s` archive
_LOCAL_HEADER = b"PK\x03\x04"


# --- screenshot stores --------------------------------------------------------------------------


class ScreenshotStore(Protocol):
    """Screenshots by file name."""

    def names(self) -> list[str]: ...

    def __contains__(self, name: object) -> bool: ...

    def read(self, name: str) -> bytes: ...

    def where(self, name: str) -> str: ...

    def close(self) -> None: ...


def _is_image(name: str) -> bool:
    return name.lower().endswith(IMAGE_SUFFIXES)


class FolderScreenshots:
    """Images under a folder, flat or one level of sub-folders (`data_<k>/`), by base name."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self._paths: dict[str, Path] = {}
        if not self.root.is_dir():
            raise ScreenshotSourceError(f"screenshot folder {self.root} does not exist")
        for path in sorted(self._walk()):
            previous = self._paths.setdefault(path.name, path)
            if previous != path and previous.stat().st_size != path.stat().st_size:
                raise ScreenshotSourceError(f"two different images named {path.name}: {previous} and {path}")

    def _walk(self) -> Iterator[Path]:
        for entry in self.root.iterdir():
            if entry.is_dir():
                yield from (p for p in entry.iterdir() if p.is_file() and _is_image(p.name))
            elif entry.is_file() and _is_image(entry.name):
                yield entry

    def names(self) -> list[str]:
        return sorted(self._paths)

    def __contains__(self, name: object) -> bool:
        return name in self._paths

    def where(self, name: str) -> str:
        return str(self._paths[name].relative_to(self.root.parent)) if name in self._paths else name

    def read(self, name: str) -> bytes:
        """A file's bytes; ArchiveError (a Drop) for a link out of the folder or a file no
        screenshot is as large as."""
        path = self._paths.get(name)
        if path is None:
            raise ScreenshotSourceError(f"screenshot {name} not found under {self.root}")
        try:
            if path.is_symlink() and not path.resolve().is_relative_to(self.root.resolve()):
                raise ArchiveError(DropReason.UNSAFE_ARCHIVE_MEMBER, f"{path} links out of {self.root}")
            if path.stat().st_size > MAX_MEMBER_BYTES:
                raise ArchiveError(DropReason.ARCHIVE_MEMBER_TOO_LARGE, str(path))
            return path.read_bytes()
        except OSError as err:
            raise ScreenshotSourceError(f"screenshot {path} cannot be read: {err.strerror or err}") from err

    def close(self) -> None:
        """Nothing is held open."""


def member_refusal(info: zipfile.ZipInfo) -> DropReason | None:
    """Why a zip member is not read at all (the shared archive reader's rules), or None:
    zipfile would ask for a password, or inflate a bomb up to its declared size."""
    if info.flag_bits & 0x1:
        return DropReason.ENCRYPTED_ARCHIVE_MEMBER
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        return DropReason.UNSUPPORTED_COMPRESSION
    if info.file_size > MAX_MEMBER_BYTES or (
        info.compress_size and info.file_size / info.compress_size > MAX_RATIO
    ):
        return DropReason.ARCHIVE_MEMBER_TOO_LARGE
    return None


class ZipScreenshots:
    """Images inside one zip archive (a plain file, or `ConcatenatedParts`), by base name."""

    def __init__(self, source: str | os.PathLike[str] | ConcatenatedParts) -> None:
        """`source` is a zip file, or parts whose concatenation is one."""
        parts: ConcatenatedParts | None = source if isinstance(source, ConcatenatedParts) else None
        self.label = parts.describe() if parts is not None else str(source)
        self._source = source
        if parts is not None:
            parts.seek(0)
            if parts.read(4) == _SPANNING_MARKER:
                raise ScreenshotSourceError(
                    f"{self.label} starts with the multi-volume marker of a `zip -s` archive, "
                    f"not a zip cut into byte ranges"
                )
        try:
            self._zip = zipfile.ZipFile(parts if parts is not None else source, "r")  # type: ignore[arg-type]
        except (zipfile.BadZipFile, EOFError, ValueError, struct.error) as err:
            # No end-of-central-directory record: the archive is cut short (a missing last part).
            raise ScreenshotSourceError(f"not a complete zip archive: {self.label}: {err}") from err
        except OSError as err:
            raise ScreenshotSourceError(f"zip archive cannot be read: {self.label}: {err}") from err
        self._members: dict[str, zipfile.ZipInfo] = {}
        for info in self._zip.infolist():
            base = info.filename.rsplit("/", 1)[-1]
            if info.is_dir() or not _is_image(base):
                continue
            previous = self._members.setdefault(base, info)
            if previous is not info and (previous.CRC, previous.file_size) != (info.CRC, info.file_size):
                raise ScreenshotSourceError(
                    f"two different images named {base} in {self.label}: {previous.filename}, {info.filename}"
                )
        self._check_layout()

    def _check_layout(self) -> None:
        """Catch bytes lost or added before the central directory (a short or wrong part) when
        the archive is opened, not at some later member: zipfile then shifts every member's
        offset, so the first one lands outside the archive or off its local header signature."""
        infos = self._zip.infolist()
        if not infos:
            return
        size = self._archive_size()
        for info in infos:
            if info.header_offset < 0 or info.header_offset + info.compress_size > size:
                raise ScreenshotSourceError(
                    f"zip archive truncated: member {info.filename} lies outside {self.label}"
                )
        first = min(infos, key=lambda info: info.header_offset)
        if self._bytes_at(first.header_offset, 4) != _LOCAL_HEADER:
            raise ScreenshotSourceError(
                f"zip archive damaged: bytes are missing or extra before its central directory "
                f"(no local header for {first.filename} at byte {first.header_offset} of {self.label})"
            )

    def _bytes_at(self, offset: int, n: int) -> bytes:
        if isinstance(self._source, ConcatenatedParts):
            self._source.seek(offset)
            return self._source.read(n)
        with open(self._source, "rb") as fh:
            fh.seek(offset)
            return fh.read(n)

    def _archive_size(self) -> int:
        if isinstance(self._source, ConcatenatedParts):
            return self._source.size
        return Path(self._source).stat().st_size

    def names(self) -> list[str]:
        return sorted(self._members)

    def __contains__(self, name: object) -> bool:
        return name in self._members

    def where(self, name: str) -> str:
        info = self._members.get(name)
        return info.filename if info is not None else name

    def read(self, name: str) -> bytes:
        """A member's bytes; ScreenshotSourceError for a name it does not hold, ArchiveError
        (truncated_archive_member) for a member whose bytes are damaged."""
        info = self._members.get(name)
        if info is None:
            raise ScreenshotSourceError(f"screenshot {name} not in {self.label}")
        refusal = member_refusal(info)
        if refusal is not None:
            raise ArchiveError(refusal, f"member {info.filename} of {self.label}")
        try:
            return self._zip.read(info)
        except (zipfile.BadZipFile, zlib.error, EOFError, ValueError, NotImplementedError) as err:
            # BadZipFile covers a bad CRC and a bad local header.
            raise ArchiveError(
                DropReason.TRUNCATED_ARCHIVE_MEMBER, f"member {info.filename} of {self.label}: {err}"
            ) from err
        except OSError as err:
            raise ScreenshotSourceError(
                f"member {info.filename} of {self.label} cannot be read: {err}"
            ) from err

    def close(self) -> None:
        self._zip.close()
        if isinstance(self._source, ConcatenatedParts):
            self._source.close()


class VolumeScreenshots:
    """Images inside a multi-volume `zip -s` archive (`screenshots.z01` ... + `screenshots.zip`),
    by base name, read with the project's own central-directory reader."""

    def __init__(self, zip_path: Path) -> None:
        try:
            volumes = split_segments(zip_path)
            self.label = f"{len(volumes)} volume(s) {', '.join(v.name for v in volumes)} in {zip_path.parent}"
            self._zip = ZipImages(zip_path)
        except (ArchiveError, OSError) as err:
            raise ScreenshotSourceError(f"multi-volume zip {zip_path} cannot be read: {err}") from err
        except IndexError as err:
            # The shared reader indexes its volumes by the zip64 locator's disk number unchecked:
            # a locator naming a volume that is not there is a missing volume.
            raise ScreenshotSourceError(
                f"multi-volume zip {zip_path} cannot be read: its end record names a missing segment "
                f"(have {', '.join(v.name for v in volumes)})"
            ) from err

    def names(self) -> list[str]:
        return sorted(n for n in self._zip.members if _is_image(n))

    def __contains__(self, name: object) -> bool:
        return name in self._zip.members or name in self._zip.refused

    def where(self, name: str) -> str:
        member = self._zip.members.get(name)
        return member.name if member is not None else name

    def read(self, name: str) -> bytes:
        """A member's bytes; ArchiveError (a Drop) for a refused or damaged one."""
        if name not in self:
            raise ScreenshotSourceError(f"screenshot {name} not in {self.label}")
        return self._zip.read(name)

    def close(self) -> None:
        self._zip.close()


def open_screenshots(repo_root: str | os.PathLike[str]) -> ScreenshotStore:
    """The screenshots of a GUI-Odyssey mirror, preferring loose files over archives:

    1. images in `screenshots/` (flat, or in `data_<k>/` sub-folders);
    2. `screenshots/screenshots.zip`, with its volumes `screenshots.z01`, ... when it has them
       (hflqf88888/GUIOdyssey), or a lone plain zip;
    3. `zips/screenshots.zip`;
    4. byte-range parts `zips/screenshots_01`, `zips/screenshots_02`, ...
    """
    root = Path(repo_root)
    folder = root / "screenshots"
    if folder.is_dir():
        store = FolderScreenshots(folder)
        if store.names():
            return store
        if (folder / "screenshots.zip").is_file() or any(folder.glob("screenshots.z[0-9]*")):
            return VolumeScreenshots(folder / "screenshots.zip")
    plain_zip = root / "zips" / "screenshots.zip"
    if plain_zip.is_file():
        return ZipScreenshots(plain_zip)
    zips = root / "zips"
    if zips.is_dir() and any(_PART_NAME.match(p.name) for p in zips.iterdir()):
        return ZipScreenshots(ConcatenatedParts(find_zip_parts(zips, "screenshots")))
    raise ScreenshotSourceError(
        f"no screenshots under {root}: expected images in screenshots/, screenshots/screenshots.zip "
        f"(with .z01... volumes or not), zips/screenshots.zip or zips/screenshots_NN"
    )
