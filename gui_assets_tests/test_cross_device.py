"""Publishing across file systems: a build directory on a data disk (a symlink or mount) while the
work folder sits elsewhere, where a rename between them fails with EXDEV.

The other file systems are real tmpfs mounts made for the test (as root); a test that needs only
one falls back to /dev/shm."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from gui_assets.core.atomic import TMP_MARK, move_into_place
from gui_assets_tests.conftest import clean_env, cli_materialize


def _try_mount_tmpfs(point: Path) -> bool:
    point.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    return subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2g", "tmpfs", str(point)]).returncode == 0


@contextmanager
def _tmpfs(tmp_path: Path, name: str) -> Iterator[Path]:
    """An empty folder on a tmpfs of its own (mounted as root), else a folder of /dev/shm."""
    point = tmp_path / name
    mounted = _try_mount_tmpfs(point)
    folder = point if mounted else Path(tempfile.mkdtemp(dir="/dev/shm"))
    if os.stat(folder).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no tmpfs apart from the temp folder's file system (mount failed, no /dev/shm)")
    try:
        yield folder
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(point)], check=False)
        else:
            shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def other_fs(tmp_path: Path) -> Iterator[Path]:
    """An empty folder on a tmpfs: a file system other than tmp_path's."""
    with _tmpfs(tmp_path, "tmpfs") as folder:
        yield folder


def test_a_rename_between_the_two_really_crosses_file_systems(tmp_path: Path, other_fs: Path) -> None:
    (tmp_path / "a").write_bytes(b"x")
    with pytest.raises(OSError) as e:
        os.replace(tmp_path / "a", other_fs / "a")
    assert e.value.errno == 18  # EXDEV: what move_into_place is for


def test_a_file_moves_across_file_systems_over_the_old_one(tmp_path: Path, other_fs: Path) -> None:
    src = tmp_path / "piece.hdf5"
    src.write_bytes(b"new bytes" * 1000)
    final = other_fs / "shard.hdf5"
    final.write_bytes(b"old")
    move_into_place(src, final)
    assert final.read_bytes() == b"new bytes" * 1000
    assert not src.exists()
    assert [p.name for p in other_fs.iterdir()] == ["shard.hdf5"]  # no temp name left beside it


def test_on_one_file_system_it_is_a_rename(tmp_path: Path) -> None:
    src, final = tmp_path / "a", tmp_path / "b"
    src.write_bytes(b"x")
    inode = src.stat().st_ino
    move_into_place(src, final)
    assert final.stat().st_ino == inode and not src.exists()


def _files(root: Path) -> dict[str, str]:
    """sha256 of every file under `root` (through symlinked folders), by relative path."""
    out = {}
    for dirpath, _dirs, names in os.walk(root, followlinks=True):
        for name in names:
            p = Path(dirpath) / name
            out[p.relative_to(root).as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


MOVED = ("mind2web_train", "_work", "hub", "cua_lite")


@pytest.mark.slow
def test_a_cli_build_publishes_across_file_systems_and_reruns_clean(
    tmp_path: Path, demo_mirror: Path
) -> None:
    """A dataset directory, the work folder, the local repo folder and the cua-lite export are each
    a symlink onto a tmpfs of its own, so every file crosses a file system on its way out (from
    the work folder to each of the others). The build succeeds, its output validates, and a rerun
    succeeds with the same bytes and leaves no temp file on any file system."""
    build = tmp_path / "build"
    build.mkdir()
    with ExitStack() as stack:
        mounts = {name: stack.enter_context(_tmpfs(tmp_path, f"tmpfs-{name}")) for name in MOVED}
        if len({os.stat(m).st_dev for m in mounts.values()} | {os.stat(build).st_dev}) != len(MOVED) + 1:
            pytest.skip("needs a tmpfs mounted for each of the four folders (root)")
        for name, folder in mounts.items():
            (build / name).symlink_to(folder)
        _build_twice_and_compare(build, tmp_path, demo_mirror)
        assert (mounts["mind2web_train"] / "mind2web_train_0000.hdf5").is_file()
        assert all((build / name).is_symlink() for name in MOVED)  # the user's links, not folders


def _build_twice_and_compare(build: Path, cwd: Path, demo_mirror: Path) -> None:
    env = clean_env(GUI_ASSETS_MIRROR=str(demo_mirror))
    first = cli_materialize("train", cwd, env)
    assert first.returncode == 0, first.stderr[-3000:]
    built = _files(build)
    assert any(p.startswith("mind2web_train/") and p.endswith(".hdf5") for p in built)
    v = subprocess.run(
        [sys.executable, "-m", "gui_assets.validate", str(build)], capture_output=True, text=True
    )
    assert v.returncode == 0, v.stdout + v.stderr

    again = cli_materialize("train", cwd, env)
    assert again.returncode == 0, again.stderr[-3000:]
    published = {p: h for p, h in _files(build).items() if not p.startswith("_work/")}
    assert published == {p: h for p, h in built.items() if not p.startswith("_work/")}
    leftovers = [p for p in _files(build) if TMP_MARK in p or ".old" in Path(p).name]
    assert not leftovers
