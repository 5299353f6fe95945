"""Reading screenshots out of image archives without extracting them.

An image source is one of:
- an extracted folder of images (any depth), indexed by file name;
- a zip archive, plain (`images.zip`) or split (`images.z01`, `images.z02`, ..., `images.zip`, as
  `zip -s` writes them). Python's zipfile cannot read split archives (it opens them, then reads
  members on later segments at the wrong offsets), so the central directory is parsed here
  (zip64 included) and every member's disk and offset resolved against the segment files,
  read as one stream. One member is read (and inflated) at a time; nothing is extracted.
- a zip cut into byte ranges (`screenshots_01`, `screenshots_02`, ... whose concatenation is the
  zip), given as its ordered parts: the same stream, every member on disk 0 at an absolute offset.

Members are indexed by file name; two members (or files) under one name whose contents differ
are recorded in `clashes` (the first one is the one read), for a source that must refuse them.

Members are refused by named reason: absolute or `..` paths, encryption, unknown compression,
an uncompressed size over MAX_MEMBER_BYTES or a compression ratio no image has; a CRC or size
mismatch is `truncated_archive_member`. Nothing here writes to disk.
"""

from __future__ import annotations

import os
import re
import stat
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from gui_assets.core.drops import Drop, DropReason

MAX_MEMBER_BYTES = 256 * 1024 * 1024
_SYMLINK = 1 << 16  # our own mark in Member.flags (zip flags are 16 bits)
MAX_RATIO = 1000  # a screenshot never inflates a thousandfold; a zip bomb does
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp")

# What opening an archive can raise (its caller decides whether that drops or fails), and what
# reading one member can raise or record as a refusal.
OPEN_DROPS = frozenset({DropReason.TRUNCATED_ARCHIVE})
MEMBER_DROPS = frozenset(
    {
        DropReason.UNSAFE_ARCHIVE_MEMBER,
        DropReason.ENCRYPTED_ARCHIVE_MEMBER,
        DropReason.UNSUPPORTED_COMPRESSION,
        DropReason.ARCHIVE_MEMBER_TOO_LARGE,
        DropReason.TRUNCATED_ARCHIVE_MEMBER,
    }
)

_EOCD = b"PK\x05\x06"
_ZIP64_LOCATOR = b"PK\x06\x07"
_ZIP64_EOCD = b"PK\x06\x06"
_CENTRAL = b"PK\x01\x02"
_LOCAL = b"PK\x03\x04"


class ArchiveError(Drop):
    """A member or a whole archive that cannot be used; `reason` is the drop reason."""


class ImageSourceError(Exception):
    """No usable image source in a folder (none, or several archives): fails the partition."""


@dataclass(frozen=True, slots=True)
class Member:
    name: str
    disk: int
    offset: int  # of the local header, relative to its disk
    compressed: int
    size: int
    method: int
    crc: int
    flags: int


class _Segments:
    """The segment files of an archive read as one byte stream (disk i starts at base[i])."""

    def __init__(self, paths: list[Path]) -> None:
        self.paths = paths
        self.sizes = [p.stat().st_size for p in paths]
        self.base = [sum(self.sizes[:i]) for i in range(len(paths))]
        self._handles: dict[int, object] = {}

    def read(self, pos: int, n: int) -> bytes:
        out = bytearray()
        while n > 0:
            disk = max(i for i, b in enumerate(self.base) if b <= pos)
            fh = self._handles.get(disk)
            if fh is None:
                fh = open(self.paths[disk], "rb")  # noqa: SIM115 - kept open for the next member
                self._handles[disk] = fh
            left = self.sizes[disk] - (pos - self.base[disk])  # not positive: an offset past the end
            fh.seek(pos - self.base[disk])  # type: ignore[attr-defined]
            chunk = fh.read(min(n, left)) if left > 0 else b""  # type: ignore[attr-defined]
            if not chunk:
                raise ArchiveError(
                    DropReason.TRUNCATED_ARCHIVE_MEMBER, f"read past the end of {self.paths[disk].name}"
                )
            out += chunk
            pos += len(chunk)
            n -= len(chunk)
        return bytes(out)

    def holding(self, pos: int, n: int) -> str:
        """The names of the segment files bytes [pos, pos + n) lie in: where a damaged member is."""
        end = pos + max(n, 1)
        spans = zip(self.paths, self.base, self.sizes, strict=True)
        held = [p.name for p, start, size in spans if size and start < end and start + size > pos]
        return ", ".join(held) or self.paths[-1].name  # a range past the end: the last file is short

    def close(self) -> None:
        for fh in self._handles.values():
            fh.close()  # type: ignore[attr-defined]
        self._handles.clear()


def split_segments(zip_path: Path) -> list[Path]:
    """`images.zip` -> [images.z01, ..., images.zip] (just [images.zip] for a plain archive)."""
    parts = sorted(
        (
            p
            for p in zip_path.parent.glob(zip_path.stem + ".z[0-9][0-9]*")
            if re.fullmatch(r"\.z\d+", p.suffix)
        ),
        key=lambda p: int(p.suffix[2:]),
    )
    if parts and [int(p.suffix[2:]) for p in parts] != list(range(1, len(parts) + 1)):
        raise ArchiveError(
            DropReason.TRUNCATED_ARCHIVE,
            f"missing segments of {zip_path.name}: have {[p.name for p in parts]}",
        )
    return [*parts, zip_path]


def _zip64_extra(
    extra: bytes, size: int, compressed: int, offset: int, disk: int
) -> tuple[int, int, int, int]:
    i = 0
    while i + 4 <= len(extra):
        tag, length = struct.unpack_from("<HH", extra, i)
        if tag == 1:
            fields = extra[i + 4 : i + 4 + length]
            vals = []
            j = 0
            for current, width in ((size, 8), (compressed, 8), (offset, 8), (disk, 4)):
                if current == (0xFFFFFFFF if width == 8 else 0xFFFF):
                    vals.append(int.from_bytes(fields[j : j + width], "little"))
                    j += width
                else:
                    vals.append(current)
            return vals[0], vals[1], vals[2], vals[3]
        i += 4 + length
    return size, compressed, offset, disk


class ZipImages:
    """The members of a plain or split zip archive, or of a zip cut into byte ranges, by file name.

    `parts`, when given, are the files whose concatenation is the archive, in order; `zip_path`
    then only names it (errors say which parts). Without them the parts are the zip's `zip -s`
    segments, if any, and the zip itself. Either way a member's disk number indexes the parts
    (always 0 in a zip cut into byte ranges, whose offsets then count from its first byte)."""

    def __init__(self, zip_path: Path, parts: list[Path] | None = None) -> None:
        self.path = zip_path
        self.label = zip_path.name
        if parts is not None:
            if not parts:
                raise ArchiveError(DropReason.TRUNCATED_ARCHIVE, f"{zip_path.name}: no parts")
            names = ", ".join(p.name for p in parts)
            self.label = f"{zip_path.name} ({len(parts)} part(s) {names} in {parts[0].parent})"
        self.segments = _Segments(parts if parts is not None else split_segments(zip_path))
        # A zip -s archive keeps its end records whole in its last segment; a cut into byte ranges
        # can fall anywhere, the end records included.
        self._end_within = 0 if parts is not None else self.segments.base[-1]
        self.members: dict[str, Member] = {}
        self.refused: dict[str, DropReason] = {}
        self.clashes: dict[str, tuple[str, str]] = {}
        self._read_central_directory()

    def _read_central_directory(self) -> None:
        seg = self.segments
        total_size = seg.base[-1] + seg.sizes[-1]
        tail_from = max(self._end_within, total_size - (65536 + 22))
        tail = self._directory_bytes(tail_from, total_size - tail_from)
        at = tail.rfind(_EOCD, 0, len(tail) - 22 + len(_EOCD))  # a whole 22-byte record, not a cut one
        if at < 0:
            raise ArchiveError(DropReason.TRUNCATED_ARCHIVE, f"{self.label}: no end of central directory")
        (_, _, cd_disk, _, total, cd_size, cd_offset, _) = struct.unpack_from("<4sHHHHIIH", tail, at)
        if 0xFFFF in (cd_disk, total) or 0xFFFFFFFF in (cd_size, cd_offset):
            loc = tail.rfind(_ZIP64_LOCATOR, 0, at)
            if loc < 0:
                raise ArchiveError(DropReason.TRUNCATED_ARCHIVE, f"{self.label}: zip64 locator missing")
            _, z64_disk, z64_off, _ = struct.unpack_from("<4sIQI", tail, loc)
            if z64_disk >= len(seg.paths):
                raise ArchiveError(
                    DropReason.TRUNCATED_ARCHIVE, f"{self.label}: zip64 record on a missing segment"
                )
            rec = self._directory_bytes(seg.base[z64_disk] + z64_off, 56)
            if rec[:4] != _ZIP64_EOCD:
                raise ArchiveError(DropReason.TRUNCATED_ARCHIVE, f"{self.label}: bad zip64 record")
            (_, _, _, _, _, cd_disk, _, total, cd_size, cd_offset) = struct.unpack_from("<4sQHHIIQQQQ", rec)
        if cd_disk >= len(seg.paths):
            raise ArchiveError(
                DropReason.TRUNCATED_ARCHIVE, f"{self.label}: central directory on a missing segment"
            )
        cd = self._directory_bytes(seg.base[cd_disk] + cd_offset, cd_size)
        i = 0
        for _ in range(total):
            if cd[i : i + 4] != _CENTRAL or i + 46 > len(cd):
                raise ArchiveError(DropReason.TRUNCATED_ARCHIVE, f"{self.label}: corrupt central directory")
            (
                _,
                made_by,
                _,
                flags,
                method,
                _,
                _,
                crc,
                csize,
                usize,
                nlen,
                elen,
                clen,
                disk,
                _,
                attrs,
                offset,
            ) = struct.unpack_from("<4sHHHHHHIIIHHHHHII", cd, i)
            name = cd[i + 46 : i + 46 + nlen].decode("utf-8" if flags & 0x800 else "cp437")
            extra = cd[i + 46 + nlen : i + 46 + nlen + elen]
            usize, csize, offset, disk = _zip64_extra(extra, usize, csize, offset, disk)
            i += 46 + nlen + elen + clen
            # A Unix-made member with S_IFLNK in its mode is a symlink: its "content" is a path.
            symlink = made_by >> 8 == 3 and stat.S_ISLNK(attrs >> 16)
            self._index(
                Member(name, disk, offset, csize, usize, method, crc, flags | (_SYMLINK if symlink else 0))
            )

    def _directory_bytes(self, pos: int, n: int) -> bytes:
        """End records or central directory bytes: where they run short (a part or segment cut
        or missing), the whole archive is unreadable (OPEN_DROPS), named by all its parts."""
        try:
            return self.segments.read(pos, n)
        except ArchiveError:
            raise ArchiveError(
                DropReason.TRUNCATED_ARCHIVE, f"{self.label}: its directory runs past the end of its data"
            ) from None

    def _index(self, m: Member) -> None:
        if m.name.endswith("/"):
            return
        path = PurePosixPath(m.name.replace("\\", "/"))
        # Members are looked up by file name, so a refusal is recorded under it too.
        if path.is_absolute() or ".." in path.parts or re.match(r"^[A-Za-z]:", m.name) or m.flags & _SYMLINK:
            self.refused[path.name] = DropReason.UNSAFE_ARCHIVE_MEMBER
        elif m.flags & 0x1:
            self.refused[path.name] = DropReason.ENCRYPTED_ARCHIVE_MEMBER
        elif m.method not in (0, 8):
            self.refused[path.name] = DropReason.UNSUPPORTED_COMPRESSION
        elif m.size > MAX_MEMBER_BYTES or (m.compressed and m.size / m.compressed > MAX_RATIO):
            self.refused[path.name] = DropReason.ARCHIVE_MEMBER_TOO_LARGE
        elif m.disk >= len(self.segments.paths):
            self.refused[path.name] = DropReason.TRUNCATED_ARCHIVE_MEMBER  # on a missing segment
        else:
            first = self.members.setdefault(path.name, m)
            if first is not m and (first.crc, first.size) != (m.crc, m.size):
                self.clashes.setdefault(path.name, (first.name, m.name))

    def names(self) -> set[str]:
        return set(self.members)

    def read(self, name: str) -> bytes:
        """A member's bytes; ArchiveError with the refusal reason for a refused member, KeyError
        for one the archive does not hold."""
        if name not in self.members and name in self.refused:
            raise ArchiveError(self.refused[name], name)
        m = self.members[name]
        seg = self.segments
        start = seg.base[m.disk] + m.offset
        where = f"{name} in {seg.holding(start, 30 + m.compressed)}"  # the part(s) at fault, if damaged
        header = seg.read(start, 30)
        if header[:4] != _LOCAL:
            raise ArchiveError(DropReason.TRUNCATED_ARCHIVE_MEMBER, f"{where}: no local header at its offset")
        nlen, elen = struct.unpack_from("<HH", header, 26)
        data = seg.read(start + 30 + nlen + elen, m.compressed)
        if m.method == 8:
            data = _inflate_at_most(where, data, m.size)
        if len(data) != m.size or (zlib.crc32(data) & 0xFFFFFFFF) != m.crc:
            raise ArchiveError(DropReason.TRUNCATED_ARCHIVE_MEMBER, f"{where}: size or CRC mismatch")
        return data

    def close(self) -> None:
        self.segments.close()


def _inflate_at_most(name: str, data: bytes, size: int) -> bytes:
    """A raw deflate stream that must inflate to `size` bytes (the central directory's word):
    one byte past it is refused before any more is inflated, so a member whose headers understate
    its size costs its declared size in memory, never its real one."""
    d = zlib.decompressobj(-15)
    try:
        out = d.decompress(data, size + 1)
    except zlib.error as e:
        raise ArchiveError(DropReason.TRUNCATED_ARCHIVE_MEMBER, f"{name}: {e}") from None
    if len(out) > size or d.unconsumed_tail:
        raise ArchiveError(
            DropReason.ARCHIVE_MEMBER_TOO_LARGE, f"{name}: inflates past its declared {size} B"
        )
    return out


class FolderImages:
    """An extracted folder of screenshots, by file name (the first one found wins)."""

    def __init__(self, root: Path) -> None:
        self.path = root
        self.members: dict[str, Path] = {}
        self.refused: dict[str, DropReason] = {}
        self.clashes: dict[str, tuple[str, str]] = {}
        inside = root.resolve()
        for dirpath, _, files in os.walk(root):
            for f in sorted(files):
                if f.lower().endswith(IMAGE_SUFFIXES):
                    p = Path(dirpath) / f
                    if p.is_symlink() and not p.resolve().is_relative_to(inside):
                        self.refused.setdefault(
                            f, DropReason.UNSAFE_ARCHIVE_MEMBER
                        )  # points out of the folder
                        continue
                    first = self.members.setdefault(f, p)
                    if first != p and _size(first) != _size(p):
                        self.clashes.setdefault(f, (str(first), str(p)))

    def names(self) -> set[str]:
        return set(self.members)

    def read(self, name: str) -> bytes:
        """A file's bytes; ArchiveError with the refusal reason for a refused file, KeyError for
        one the folder does not hold."""
        if name not in self.members and name in self.refused:
            raise ArchiveError(self.refused[name], name)
        p = self.members[name]
        if p.stat().st_size > MAX_MEMBER_BYTES:
            raise ArchiveError(DropReason.ARCHIVE_MEMBER_TOO_LARGE, name)
        return p.read_bytes()

    def close(self) -> None:
        return None


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:  # a dangling link: reading it is what fails, by name
        return None


def open_images(directory: Path) -> ZipImages | FolderImages:
    """The image source in `directory`: its zip archive (plain or split) if there is one,
    else the folder itself. Raises ImageSourceError when there is neither, or several zips;
    ArchiveError when the one archive is unreadable."""
    zips = sorted(directory.glob("*.zip")) if directory.is_dir() else []
    if len(zips) > 1:
        raise ImageSourceError(f"{directory}: several zip archives {[z.name for z in zips]}")
    if zips:
        return ZipImages(zips[0])
    if directory.is_dir() and any(directory.rglob("*")):
        return FolderImages(directory)
    raise ImageSourceError(f"{directory}: no images.zip and no extracted images")
