"""A published shard copied under a new upstream revision, without writing it again.

Every demo records its upstream file's revision in its `source_ref` attribute, so an edit of
one row of a file changes every shard holding episodes of that file. A shard whose episodes
are otherwise unchanged differs from the last build's only there: `source_ref` is a
variable-length string, which HDF5 keeps verbatim in a global heap collection (no length
prefix of its own beyond the object's, no checksum, no compression), so a revision of the same
length replaced in place gives exactly the bytes a fresh writer makes.

`copy_revised` copies the old shard and writes the new revision over each `"revision": "<old>"`
of a `source_ref`; the copy's hash comes from the same read that finds them. It
refuses (`RevisionPatchError`, and the caller writes the unit the ordinary way) unless the old
revision appears exactly once per demo and nowhere else, the new one has the same length, and
the copy reads back with the new revision in every demo.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import h5py

_BLOCK = 16 << 20
# copy_file_range cannot serve these files here: across file systems on old kernels, or not at all
_NO_COPY_RANGE = {errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EBADF}


class RevisionPatchError(Exception):
    """The shard cannot be revised in place; it must be written again."""


def revision_needle(revision: str) -> bytes:
    """How a revision appears inside a demo's `source_ref` (json.dumps with sort_keys)."""
    return json.dumps({"revision": revision})[1:-1].encode("utf-8")


@dataclass(frozen=True, slots=True)
class Scan:
    """What one read of a published shard found, and the hash of its revised copy."""

    spots: list[int]  # file offsets of the old revision inside a source_ref's `"revision": "..."`
    anywhere: int  # every appearance of the old revision, in context or not
    sha256: str  # of the file with the new revision at every spot
    size: int  # bytes read: the copy must have as many for the hash to be its own


def _scan(src: Path, old: bytes, new: bytes, context: bytes) -> Scan:
    """One sequential read of `src`: where `old` sits inside `context`, how often it appears at
    all, and the sha256 the file will have once `new` is written over each such spot (so publish
    need not read the copy again). A block's last bytes are held back and searched again with the
    next block, so an appearance cut by a block's edge is seen whole, and seen once. One buffer
    serves every block: a fresh one a block costs more than the search."""
    keep = len(context) - 1
    lead = context.index(old)
    digest = hashlib.sha256()
    spots: list[int] = []
    anywhere = 0
    buf = bytearray(keep + _BLOCK)
    view = memoryview(buf)
    with src.open("rb", buffering=0) as fh:
        held = start = 0  # bytes at the front of buf held back; the file offset of buf[0]
        while n := fh.readinto(view[held:]):
            end = held + n
            at = buf.find(old, 0, end)
            while at >= 0:
                anywhere += at + len(old) > held  # wholly in the held bytes: counted last block
                at = buf.find(old, at + 1, end)
            at = buf.find(context, 0, end)  # never wholly in the held bytes, which are shorter
            while at >= 0:
                buf[at + lead : at + lead + len(new)] = new
                spots.append(start + at + lead)
                at = buf.find(context, at + 1, end)
            cut = max(0, end - keep)
            digest.update(view[:cut])
            buf[: end - cut] = buf[cut:end]
            held, start = end - cut, start + cut
        digest.update(view[:held])
    view.release()
    return Scan(spots, anywhere, digest.hexdigest(), start + held)


def _check_revised(path: Path, revision: str, demos: int) -> None:
    with h5py.File(path, "r") as f:
        names = list(f["data"].keys())
        for name in names:
            ref = json.loads(f["data"][name].attrs["source_ref"])
            if ref.get("revision") != revision:
                raise RevisionPatchError(f"{path.name}: {name} reads back revision {ref.get('revision')!r}")
        if len(names) != demos:
            raise RevisionPatchError(f"{path.name}: {len(names)} demos, expected {demos}")


def clone(src: Path, dst: Path) -> None:
    """Copy `src` to `dst` in the kernel with copy_file_range, which on a file system with shared
    extents (XFS with reflink, btrfs) shares the blocks instead of writing them; shutil's copy
    where the call is not there, refuses these files or stops short."""
    if dst.exists() and os.path.samefile(src, dst):  # opening dst would empty src
        raise shutil.SameFileError(f"{src} and {dst} are the same file")
    try:
        with src.open("rb") as fin, dst.open("wb") as fout:
            left = os.fstat(fin.fileno()).st_size
            while left > 0:
                done = os.copy_file_range(fin.fileno(), fout.fileno(), left)
                if done == 0:  # some file systems answer a copy they cannot make with 0
                    raise OSError(errno.ENOTSUP, f"copy_file_range stopped {left} bytes short")
                left -= done
    except (AttributeError, OSError) as e:
        if isinstance(e, OSError) and e.errno not in _NO_COPY_RANGE:
            raise
        shutil.copyfile(src, dst)


def copy_revised(src: Path, dst: Path, old_revision: str, new_revision: str, demos: int) -> str:
    """Copy `src` to `dst` with every demo's revision changed; the copy's sha256. The kernel
    copies while a thread scans and hashes the source as patched; only the revisions are then
    written from here."""
    old, new = old_revision.encode("utf-8"), new_revision.encode("utf-8")
    if len(old) != len(new) or not old:
        raise RevisionPatchError(f"revisions differ in length ({old_revision!r} -> {new_revision!r})")
    context = revision_needle(old_revision)
    if old not in context or new not in revision_needle(new_revision):
        raise RevisionPatchError(f"a revision JSON escapes ({old_revision!r} -> {new_revision!r})")
    with ThreadPoolExecutor(1, thread_name_prefix="gui-assets-revise") as pool:
        scanning = pool.submit(_scan, src, old, new, context)
        clone(src, dst)
        scan = scanning.result()
    if scan.anywhere != len(scan.spots):
        raise RevisionPatchError(f"{src.name}: the old revision appears outside a source_ref")
    if len(scan.spots) != demos:
        raise RevisionPatchError(f"{src.name}: {len(scan.spots)} source_ref revisions for {demos} demos")
    copied = dst.stat().st_size
    if copied != scan.size:
        raise RevisionPatchError(f"{src.name}: the copy has {copied} bytes, the read {scan.size}")
    with dst.open("r+b") as fh:
        for at in scan.spots:
            fh.seek(at)
            fh.write(new)
    _check_revised(dst, new_revision, demos)
    return scan.sha256
