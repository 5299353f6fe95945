"""Every published file is a function of the inputs: the same demo partitions built twice, at
different times into two folders, publish the same bytes under the same names. Nothing is
allowed to differ (a timestamp or a path in a sample page would re-upload it on every rebuild).
What is not published, `_work/` (pipeline state and run logs), is left out."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gui_assets.core.layout import WORK_DIR
from gui_assets_tests.conftest import clean_env

PARTITIONS = "mind2web:train,pango:sample"


def published(build: Path) -> dict[str, str]:
    """sha256 of every file under `build` except the work folder, by relative path."""
    files = {}
    for dirpath, dirs, names in os.walk(build):
        dirs[:] = [d for d in dirs if not (Path(dirpath) == build and d == WORK_DIR)]
        for name in names:
            p = Path(dirpath) / name
            files[p.relative_to(build).as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()
    return files


def demo(cwd: Path, mirror: Path) -> None:
    cwd.mkdir()
    gui_assets = Path(sys.executable).parent / "gui-assets"
    r = subprocess.run(
        [str(gui_assets), "demo", "--only", PARTITIONS],
        cwd=cwd,
        env=clean_env(GUI_ASSETS_MIRROR=str(mirror)),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 0, (r.stdout, r.stderr[-3000:])


@pytest.mark.slow
def test_two_builds_of_the_same_inputs_publish_the_same_bytes(tmp_path: Path, demo_mirror: Path) -> None:
    demo(tmp_path / "first", demo_mirror)
    time.sleep(1.1)  # a second apart at least: a timestamp in any file would show
    demo(tmp_path / "second", demo_mirror)
    first, second = published(tmp_path / "first" / "build"), published(tmp_path / "second" / "build")
    assert any(p.startswith("samples/") for p in first)  # the sample pages are among them
    assert any(p.startswith("hub/") for p in first)  # and the local repo folder's copies
    assert sorted(first) == sorted(second)
    differing = sorted(p for p in first if first[p] != second[p])
    assert not differing
