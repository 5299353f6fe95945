"""One run at a time per partition: the lease, and two real CLI runs of one partition at once."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.frames import write_mirror
from gui_assets.pipeline.chain import RawSettings, build_directory
from gui_assets.pipeline.lease import LEASE, PartitionBusy, claim, read_holder
from gui_assets.sources.mind2web.source import SPEC as MIND2WEB
from gui_assets_tests.conftest import clean_env

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parents[2]


def _never_heard_of(run_id: str) -> None:
    return None


def test_a_run_takes_the_lease_confirms_it_and_another_run_is_refused_by_name(tmp_path):
    work = tmp_path / "work"
    claim(work, "d", "run-a", os.getpid(), _never_heard_of)
    first = read_holder(work)
    claim(work, "d", "run-a", os.getpid(), _never_heard_of)  # a later stage of the same run
    assert read_holder(work).since == first.since
    with pytest.raises(
        PartitionBusy, match=f"d: another run is building this partition: run run-a \\(process {os.getpid()}"
    ):
        claim(work, "d", "run-b", os.getpid(), _never_heard_of)


def test_a_lease_is_free_once_its_run_is_over_or_its_process_is_gone(tmp_path):
    work = tmp_path / "work"
    claim(work, "d", "run-a", os.getpid(), _never_heard_of)
    claim(work, "d", "run-b", os.getpid(), lambda run: run == "run-a")  # the instance: run-a finished
    assert read_holder(work).run_id == "run-b"
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    claim(work, "d", "run-c", gone.pid, lambda run: run == "run-b")  # run-c, whose process then died
    claim(work, "d", "run-d", os.getpid(), _never_heard_of)
    assert read_holder(work).run_id == "run-d"
    (work / LEASE).write_text("{not json")  # unreadable: nobody can be shown to hold it
    claim(work, "d", "run-e", None, _never_heard_of)
    assert read_holder(work).run_id == "run-e"


def _sha256s(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("*.hdf5"))}


def test_two_runs_of_one_partition_at_once_one_fails_naming_the_other(tmp_path, mirror_frames):
    """While one CLI run holds the partition, a second run from the same Dagster home and a third
    from another home (another machine's instance, the same output folder) both fail naming it."""
    mirror = tmp_path / "mirror"
    write_mirror(mirror, steps=120, width=1280, height=1080, episode_len=6, jobs=2, frames=mirror_frames)
    out = tmp_path / "out"
    home_a, home_b = tmp_path / "home-a", tmp_path / "home-b"
    home_a.mkdir()
    home_b.mkdir()
    cmd = [sys.executable, "-m", "dagster", "asset", "materialize", "-m", "gui_assets"]
    cmd += ["--select", "mind2web*", "--partition", "train"]

    def start(home: Path) -> subprocess.Popen[str]:
        env = clean_env(GUI_ASSETS_MIRROR=str(mirror), GUI_ASSETS_OUT=str(out), DAGSTER_HOME=str(home))
        return subprocess.Popen(
            cmd, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )

    first = start(home_a)
    lease = out / "_work" / "mind2web_train" / LEASE
    deadline = time.monotonic() + 120
    while not lease.exists() and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    holder = json.loads(lease.read_text())["run_id"]
    contenders = {"shared home": start(home_a), "separate home": start(home_b)}
    for name, second in contenders.items():
        said, _ = second.communicate(timeout=300)
        assert second.returncode != 0, name
        assert f"another run is building this partition: run {holder}" in said, (name, said[-3000:])
    first_said, _ = first.communicate(timeout=600)
    assert first.returncode == 0, first_said[-3000:]
    # The published shards are a single build's.
    alone = tmp_path / "alone"
    build_directory(MIND2WEB, "train", alone, RawSettings("mirror", mirror))
    assert _sha256s(out / "mind2web_train") == _sha256s(alone / "mind2web_train")
