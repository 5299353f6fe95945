"""A shard copied under a new upstream revision is byte for byte the shard the writer makes with
that revision, and the copy is refused whenever that cannot be promised."""

from __future__ import annotations

import errno
import hashlib
import json
import shutil
from pathlib import Path

import h5py
import pytest

from gui_assets import revision_patch
from gui_assets.config import BuildConfig
from gui_assets.episode_store import ImageStore
from gui_assets.ir import ActionType, GuiEpisode, Observation, SourceRef, step_builder
from gui_assets.revision_patch import RevisionPatchError, copy_revised
from gui_assets.writers.libero_hdf5 import LiberoShardWriter
from gui_assets_tests.conftest import page_bytes

OLD, NEW = "mirror-aa950368b4697c70", "mirror-7a7882ed3fe2c499"


def _episodes(store: ImageStore, revision: str, instruction: str = "find a flight") -> list[GuiEpisode]:
    sha = store.put(page_bytes(320, 240, seed=3), "png")
    out = []
    for e in range(3):
        ref = SourceRef("osunlp/Multimodal-Mind2Web", revision, "data/train-00000-of-00002.parquet", row=e)
        make = step_builder(Observation(sha, "png", 0, 0, 320, 240), ref)
        steps = [make(ActionType.CLICK, (0.25, 0.5), (1.0, 1.0, 0.0, 0.0)) for _ in range(2)]
        out.append(GuiEpisode(f"ep{e}", "mind2web", f"{instruction} {e}", steps))
    return out


def _shard(tmp: Path, store: ImageStore, revision: str, name: str, **kw: str) -> Path:
    folder = tmp / name
    writer = LiberoShardWriter(folder, "mind2web_train", "mind2web", BuildConfig())
    writer.write_episodes(iter(_episodes(store, revision, **kw)), store)
    (piece,) = writer.close()
    return folder / piece.file


@pytest.fixture
def store(tmp_path) -> ImageStore:
    return ImageStore(tmp_path / "images")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_revised_copy_is_the_shard_written_with_the_new_revision(tmp_path, store):
    old = _shard(tmp_path, store, OLD, "old")
    fresh = _shard(tmp_path, store, NEW, "fresh")
    assert _sha(old) != _sha(fresh)
    copy = tmp_path / "copy.hdf5"
    sha = copy_revised(old, copy, OLD, NEW, demos=3)
    assert _sha(copy) == _sha(fresh) == sha  # the hash it reports is of the bytes it wrote
    with h5py.File(copy) as f:
        assert {json.loads(f["data"][d].attrs["source_ref"])["revision"] for d in f["data"]} == {NEW}


def test_a_revision_of_another_length_is_refused(tmp_path, store):
    old = _shard(tmp_path, store, OLD, "old")
    with pytest.raises(RevisionPatchError, match="length"):
        copy_revised(old, tmp_path / "copy.hdf5", OLD, "0123456789abcdef0123456789abcdef01234567", demos=3)
    assert not (tmp_path / "copy.hdf5").exists()


def test_a_count_that_does_not_match_the_demos_is_refused(tmp_path, store):
    old = _shard(tmp_path, store, OLD, "old")
    with pytest.raises(RevisionPatchError, match="3 source_ref revisions for 4 demos"):
        copy_revised(old, tmp_path / "copy.hdf5", OLD, NEW, demos=4)


def test_the_old_revision_anywhere_but_a_source_ref_is_refused(tmp_path, store):
    """An instruction that quotes the revision would be left stale by a patch: refuse it."""
    old = _shard(tmp_path, store, OLD, "old", instruction=f"open {OLD}")
    with pytest.raises(RevisionPatchError, match="outside a source_ref"):
        copy_revised(old, tmp_path / "copy.hdf5", OLD, NEW, demos=3)


def test_a_copy_that_does_not_read_back_is_refused(tmp_path, store):
    """The read-back is the last guard. Here demo_0's source_ref names another revision, yet the
    old one appears four times, each inside a source_ref-like text: the heap object h5py left
    behind when it rewrote the attribute, demo_1's, demo_2's and another attribute's."""
    damaged = tmp_path / "damaged.hdf5"
    shutil.copyfile(_shard(tmp_path, store, OLD, "old"), damaged)
    with h5py.File(damaged, "r+") as f:
        demo = f["data"]["demo_0"]
        ref = json.loads(demo.attrs["source_ref"])
        demo.attrs["source_ref"] = json.dumps({**ref, "revision": "mirror-0000000000000000"}, sort_keys=True)
        demo.attrs["note"] = json.dumps({"revision": OLD})
    with pytest.raises(RevisionPatchError, match="demo_0 reads back"):
        copy_revised(damaged, tmp_path / "copy.hdf5", OLD, NEW, demos=4)


def test_revisions_across_block_edges_are_each_found_once(tmp_path, monkeypatch):
    """The scan reads blocks; a needle cut by a block's edge is found and counted once, and so is
    a bare revision cut by one."""
    monkeypatch.setattr(revision_patch, "_BLOCK", 7)
    needle, replacement = revision_patch.revision_needle(OLD), revision_patch.revision_needle(NEW)
    data = b"x" * 5 + needle + b"y" * 13 + needle + needle + b"z" * 3 + OLD.encode() + b"w" * 11
    src, dst = tmp_path / "blob", tmp_path / "copy"
    src.write_bytes(data)
    scan = revision_patch._scan(src, OLD.encode(), NEW.encode(), needle)
    lead = needle.index(OLD.encode())
    assert scan.spots == [5 + lead, 5 + len(needle) + 13 + lead, 5 + 2 * len(needle) + 13 + lead]
    assert scan.anywhere == 4
    dst.write_bytes(data.replace(needle, replacement))
    assert scan.sha256 == _sha(dst)  # the hash of the file as it will be once patched


@pytest.mark.parametrize("refusal", [OSError(errno.EXDEV, "cross-device"), AttributeError("none here")])
def test_a_clone_the_kernel_cannot_make_is_copied(tmp_path, monkeypatch, refusal):
    src = tmp_path / "src.bin"
    src.write_bytes(bytes(range(256)) * 5000)

    def refuse(*args: object) -> int:
        raise refusal

    monkeypatch.setattr(revision_patch.os, "copy_file_range", refuse)
    revision_patch.clone(src, tmp_path / "dst.bin")
    assert (tmp_path / "dst.bin").read_bytes() == src.read_bytes()


def test_a_clone_that_fails_otherwise_says_so(tmp_path, monkeypatch):
    src = tmp_path / "src.bin"
    src.write_bytes(b"x" * 1000)

    def fail(*args: object) -> int:
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(revision_patch.os, "copy_file_range", fail)
    with pytest.raises(OSError, match="I/O error"):
        revision_patch.clone(src, tmp_path / "dst.bin")


def test_a_clone_the_kernel_stops_short_is_copied(tmp_path, monkeypatch):
    """Some file systems answer a copy they cannot make with 0 bytes copied."""
    src = tmp_path / "src.bin"
    src.write_bytes(bytes(range(256)) * 5000)
    monkeypatch.setattr(revision_patch.os, "copy_file_range", lambda *args: 0)
    revision_patch.clone(src, tmp_path / "dst.bin")
    assert (tmp_path / "dst.bin").read_bytes() == src.read_bytes()


def test_a_clone_onto_its_own_source_is_refused_and_the_source_kept(tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(b"published" * 1000)
    (tmp_path / "link.bin").hardlink_to(src)
    with pytest.raises(shutil.SameFileError):
        revision_patch.clone(src, tmp_path / "link.bin")
    assert src.read_bytes() == b"published" * 1000


def test_a_revision_json_escapes_is_refused(tmp_path, store):
    old = _shard(tmp_path, store, OLD, "old")
    with pytest.raises(RevisionPatchError, match="escapes"):
        copy_revised(old, tmp_path / "copy.hdf5", OLD, 'mirror-7a7882ed3fe2c4"9', demos=3)
