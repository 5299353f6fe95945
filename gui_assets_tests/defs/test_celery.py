"""A real distributed build: Redis broker, two Celery worker processes, PostgreSQL storage.

The CLI run uses GUI_ASSETS_EXECUTOR=celery, so every step (raw, IR, splits, the shard plan,
each shard unit, publishing, dataset_info, the checks) is sent to the workers; both take
shard units. The instance storage is a real PostgreSQL server (Debian's package, started here
in a temp folder), as workers on several machines would share. The shards must equal a
single-process build's byte for byte.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from benchmarks.frames import write_mirror
from gui_assets.core.atomic import sha256_file
from gui_assets.core.config import BuildConfig
from gui_assets.pipeline.chain import RawSettings, build_directory
from gui_assets.sources.mind2web.source import SPEC as MIND2WEB
from gui_assets_tests.conftest import clean_env, dagster_materialize, free_port

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
CHAIN = "mind2web,mind2web_episodes,mind2web_splits,mind2web_shards,mind2web_dataset_info"
CAP_MB = 6


def _postgres_bin() -> Path | None:
    root = Path("/usr/lib/postgresql")
    versions = sorted(root.iterdir(), key=lambda p: int(p.name)) if root.is_dir() else []
    return versions[-1] / "bin" if versions else None


def _wait_port(port: int, timeout: float = 30) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listens on {port}")


@pytest.fixture
def redis_url(tmp_path):
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (scripts/test installs Debian's redis-server)")
    port = free_port()
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_port(port)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def postgres(tmp_path):
    """A throwaway PostgreSQL server owned by the `postgres` user (it refuses to run as root)."""
    bindir = _postgres_bin()
    if bindir is None:
        pytest.skip("PostgreSQL is not installed (scripts/test installs Debian's postgresql)")
    base = Path(tempfile.mkdtemp(prefix="gui-assets-pg-"))  # pytest's tmp dirs are root-only
    os.chmod(base, 0o755)
    data = base / "data"
    data.mkdir()
    as_pg = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if as_pg:
        shutil.chown(data, "postgres")
    subprocess.run([*as_pg, str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"],
                   check=True, capture_output=True)  # fmt: skip
    port = free_port()
    opts = f"-p {port} -c listen_addresses=127.0.0.1 -k {data}"
    # -l: the server must not inherit our pipes, or waiting for pg_ctl waits for the server.
    start = [
        *as_pg,
        str(bindir / "pg_ctl"),
        "-D",
        str(data),
        "-o",
        opts,
        "-l",
        str(data / "server.log"),
        "-w",
        "start",
    ]
    subprocess.run(
        start, check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        subprocess.run(
            [
                str(bindir / "psql"),
                "-h",
                "127.0.0.1",
                "-p",
                str(port),
                "-U",
                "postgres",
                "-c",
                "CREATE DATABASE dagster",
            ],
            check=True,
            capture_output=True,
        )
        yield {
            "DAGSTER_PG_USERNAME": "postgres",
            "DAGSTER_PG_PASSWORD": "unused-with-trust",
            "DAGSTER_PG_HOST": "127.0.0.1",
            "DAGSTER_PG_DB": "dagster",
            "DAGSTER_PG_PORT": str(port),
        }
    finally:
        stop = [*as_pg, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]
        subprocess.run(stop, capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


def test_a_two_worker_celery_build_on_postgres_writes_the_single_process_shards(
    tmp_path, redis_url, postgres, mirror_frames
):
    mirror = tmp_path / "mirror"
    write_mirror(mirror, steps=72, width=1280, height=1080, episode_len=8, jobs=2, frames=mirror_frames)
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(REPO / "deploy" / "dagster-postgres.yaml", home / "dagster.yaml")
    (tmp_path / "celery.yaml").write_text(
        f'execution:\n  config:\n    broker: "{redis_url}"\n    backend: "{redis_url}"\n', encoding="utf-8"
    )
    out = tmp_path / "out"
    env = clean_env(
        DAGSTER_HOME=str(home),
        GUI_ASSETS_OUT=str(out),
        GUI_ASSETS_MIRROR=str(mirror),
        GUI_ASSETS_EXECUTOR="celery",
        GUI_ASSETS_CELERY_BROKER=redis_url,
        GUI_ASSETS_WRITE_THREADS="1",
        PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        **postgres,
    )
    # Create the schema once, before three processes race to (as a deployment does at install).
    subprocess.run([sys.executable, "-m", "dagster", "instance", "migrate"], env=env, check=True,
                   capture_output=True, timeout=300)  # fmt: skip
    workers = []
    logs = []
    for name in ("w1", "w2"):
        log = tmp_path / f"{name}.log"
        logs.append(log)
        workers.append(
            subprocess.Popen(
                [
                    "dagster-celery",
                    "worker",
                    "start",
                    "-A",
                    "dagster_celery.app",
                    "-y",
                    str(tmp_path / "celery.yaml"),
                    "-n",
                    f"{name}@%h",
                    "--",
                    "--concurrency=1",
                    "--loglevel=INFO",
                ],
                cwd=REPO,
                env=env,
                stdout=log.open("wb"),
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
    try:
        config = json.dumps({"resources": {"build": {"config": {"shard_cap_mb": CAP_MB}}}})
        r = dagster_materialize(
            ["--select", CHAIN, "--partition", "train", "--config-json", config], REPO, env, timeout=900
        )
        assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
        assert "celery" in (r.stdout + r.stderr).lower()
    finally:
        for w in workers:
            os.killpg(w.pid, 15)
        for w in workers:
            try:
                w.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(w.pid, 9)
    unit_tasks, hashed_there = {}, {}
    for log in logs:
        text = log.read_text(errors="replace")
        unit_tasks[log.stem] = text.count("write_shard_unit")
        hashed_there[log.stem] = text.count("pieces (hashed here)")
    assert all(n > 0 for n in unit_tasks.values()), unit_tasks  # both workers wrote shard units
    # and hashed their own pieces there, instead of leaving every byte to publish on one machine
    assert all(n > 0 for n in hashed_there.values()), hashed_there

    single = tmp_path / "single"
    build_directory(
        MIND2WEB, "train", single, RawSettings("mirror", mirror), BuildConfig(shard_cap_bytes=CAP_MB * 10**6)
    )
    ours = sorted((out / "mind2web_train").glob("*.hdf5"))
    theirs = sorted((single / "mind2web_train").glob("*.hdf5"))
    assert len(ours) >= 4 and [p.name for p in ours] == [p.name for p in theirs]
    assert [sha256_file(p) for p in ours] == [sha256_file(p) for p in theirs]
    a = json.loads((out / "mind2web_train" / "dataset_info.json").read_text())
    b = json.loads((single / "mind2web_train" / "dataset_info.json").read_text())
    assert a["shards"] == b["shards"] and a["stats"] == b["stats"]
