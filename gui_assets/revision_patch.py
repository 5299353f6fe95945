"""A published shard copied under a new upstream revision, without writing it again.

Every demo records the partition's upstream revision in its `source_ref` attribute, so any
upstream change, even one row of one file, changes every shard of the partition. A shard whose
episodes are otherwise unchanged differs from the last build's only there: `source_ref` is a
variable-length string, which HDF5 keeps verbatim in a global heap collection (no length
prefix of its own beyond the object's, no checksum, no compression), so a revision of the same
length replaced in place gives exactly the bytes a fresh writer makes.

`copy_revised` copies the old shard and writes the new revision over each `"revision": "<old>"`
of a `source_ref`. It refuses (`RevisionPatchError`, and the caller
writes the unit the ordinary way) unless the old revision appears exactly once per demo and
nowhere else, the new one has the same length, and the copy reads back with the new revision
in every demo.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import h5py

_BLOCK = 16 << 20


class RevisionPatchError(Exception):
    """The shard cannot be revised in place; it must be written again."""


def revision_needle(revision: str) -> bytes:
    """How a revision appears inside a demo's `source_ref` (json.dumps with sort_keys)."""
    return json.dumps({"revision": revision})[1:-1].encode("utf-8")


def _find_all(path: Path, needles: tuple[bytes, ...]) -> list[list[int]]:
    """Offsets of each needle in the file, in one pass a block at a time (a mapped file would
    count a whole shard in the process's resident memory)."""
    found: list[list[int]] = [[] for _ in needles]
    keep = max(len(n) for n in needles) - 1  # a match may straddle two blocks
    with path.open("rb") as fh:
        tail, offset = b"", 0  # the end of the last window; the file offset of the next block
        while block := fh.read(_BLOCK):
            window, base = tail + block, offset - len(tail)
            for needle, spots in zip(needles, found, strict=True):
                at = window.find(needle)
                while at >= 0:
                    if at + len(needle) > len(tail):  # not wholly in the tail: not found before
                        spots.append(base + at)
                    at = window.find(needle, at + 1)
            tail = window[-keep:] if keep else b""
            offset += len(block)
    return found


def _offsets(path: Path, old: bytes, context: bytes) -> list[int]:
    """Offsets of `old` in the file, each checked to sit inside `context`."""
    in_context, anywhere = _find_all(path, (context, old))
    if len(anywhere) != len(in_context):
        raise RevisionPatchError(f"{path.name}: the old revision appears outside a source_ref")
    lead = context.index(old)
    return [at + lead for at in in_context]


def _check_revised(path: Path, revision: str, demos: int) -> None:
    with h5py.File(path, "r") as f:
        names = list(f["data"].keys())
        for name in names:
            ref = json.loads(f["data"][name].attrs["source_ref"])
            if ref.get("revision") != revision:
                raise RevisionPatchError(f"{path.name}: {name} reads back revision {ref.get('revision')!r}")
        if len(names) != demos:
            raise RevisionPatchError(f"{path.name}: {len(names)} demos, expected {demos}")


def copy_revised(src: Path, dst: Path, old_revision: str, new_revision: str, demos: int) -> None:
    """Copy `src` to `dst` with every demo's revision changed (the copy is the kernel's; only the
    revisions are written from here)."""
    old, new = old_revision.encode("utf-8"), new_revision.encode("utf-8")
    if len(old) != len(new) or not old:
        raise RevisionPatchError(f"revisions differ in length ({old_revision!r} -> {new_revision!r})")
    spots = _offsets(src, old, revision_needle(old_revision))
    if len(spots) != demos:
        raise RevisionPatchError(f"{src.name}: {len(spots)} source_ref revisions for {demos} demos")
    shutil.copyfile(src, dst)
    with dst.open("r+b") as fh:
        for at in spots:
            fh.seek(at)
            fh.write(new)
    _check_revised(dst, new_revision, demos)
