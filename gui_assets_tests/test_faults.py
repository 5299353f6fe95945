"""Resource faults and secrets: a disk that fills up, a token that must never be written.

The full disk is real: a small tmpfs mounted as the output (the test needs mount rights, as
CI's root has; without them it says so and skips). The secret grep runs real CLI builds in hub
mode against a localhost hub with HF_TOKEN set, alerts to a localhost webhook, and searches
every byte the runs wrote (outputs, hub cache, Dagster's storage and logs, the CLI's output,
the alerts received) for the token.
"""

from __future__ import annotations

import ast
import base64
import hashlib
import json
import re
import subprocess
import uuid
from pathlib import Path

import dagster as dg
import h5py
import numpy as np
import pytest

from benchmarks.frames import write_mirror
from gui_assets.core.config import BuildConfig
from gui_assets.core.layout import OutLayout
from gui_assets.defs.repo_assets import build_repo_assets
from gui_assets.defs.resources import AlertsResource, BuildSettings, GuiAssetsPaths, HubResource
from gui_assets.pipeline.chain import (
    DiskFullError,
    RawSettings,
    assign_splits,
    build_directory,
    build_episodes,
    fetch_raw,
    write_shards,
)
from gui_assets.publish import lerobot_export
from gui_assets.sources.mind2web.source import SPEC as MIND2WEB
from gui_assets_tests.conftest import clean_env, dagster_materialize
from gui_assets_tests.hub_server import LocalHub
from gui_assets_tests.pysource import parse_file
from gui_assets_tests.webhook_server import WebhookReceiver

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def small_disk(tmp_path):
    """A tmpfs of a chosen size mounted at a fresh directory, unmounted afterwards."""
    mounts: list[Path] = []

    def mount(size_bytes: int) -> Path:
        where = tmp_path / f"disk{len(mounts)}"
        where.mkdir()
        r = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size_bytes}", "tmpfs", str(where)],
            capture_output=True,
            text=True,
        )
        if r.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here to fill a real disk: {r.stderr.strip()}")
        mounts.append(where)
        return where

    yield mount
    for where in mounts:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_disk_that_fills_mid_shard_fails_by_name_and_keeps_nothing_partial(
    tmp_path, small_disk, mirror_frames
):
    mirror = tmp_path / "mirror"
    repo = write_mirror(
        mirror, steps=48, width=1280, height=1080, episode_len=6, jobs=2, frames=mirror_frames
    )
    pngs = sum(p.stat().st_size for p in (repo / "data").glob("*.parquet"))
    # Room for the IR (the screenshots and small tables) and a few shards' worth, not all.
    out = small_disk(pngs + 12_000_000)
    layout = OutLayout(out)
    config = BuildConfig(shard_cap_bytes=4_000_000)
    fetch_raw(MIND2WEB, "train", layout, RawSettings("mirror", mirror))
    build_episodes(MIND2WEB, "train", layout, config)
    assign_splits(MIND2WEB, "train", layout)
    with pytest.raises(DiskFullError) as e:
        write_shards(MIND2WEB, "train", layout, config, threads=2)
    message = str(e.value)
    assert "mind2web_train: writing shards" in message and "is full" in message
    assert "No space left on device" in message
    shard_dir = layout.directory("mind2web_train")
    assert not shard_dir.exists() or not list(shard_dir.iterdir())  # nothing published
    assert not list(out.rglob(".*.tmp-*"))  # the failing unit's partial pieces are gone
    for piece in out.rglob("*.hdf5"):  # units that finished before the disk filled are whole
        with h5py.File(piece, "r") as f:
            assert f["data"].attrs["total"] > 0
    # The IR survived whole, so with room again the stage completes from it.
    bigger = small_disk(pngs + 80_000_000)
    for src in out.rglob("*"):
        if src.is_file():
            dst = bigger / src.relative_to(out)
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(src.read_bytes())
    manifest = write_shards(MIND2WEB, "train", OutLayout(bigger), config, threads=2)
    assert sum(s.steps for s in manifest.shards) == 48


def test_a_full_disk_fails_the_cli_partition_with_that_message(tmp_path, small_disk, mirror_frames):
    """Through Dagster: the step fails with the message, not a stack trace of h5py internals."""
    mirror = tmp_path / "mirror"
    repo = write_mirror(
        mirror, steps=24, width=1280, height=1080, episode_len=6, jobs=2, frames=mirror_frames
    )
    pngs = sum(p.stat().st_size for p in (repo / "data").glob("*.parquet"))
    out = small_disk(pngs + 6_000_000)
    home = tmp_path / "home"
    home.mkdir()
    env = clean_env(GUI_ASSETS_MIRROR=str(mirror), GUI_ASSETS_OUT=str(out), DAGSTER_HOME=str(home))
    chain = "mind2web,mind2web_episodes,mind2web_splits,mind2web_shards"
    r = dagster_materialize(["--partition", "train", "--select", chain], REPO_ROOT, env)
    assert r.returncode != 0
    assert "is full" in r.stdout + r.stderr and "free space and rerun" in r.stdout + r.stderr
    assert not list((out / "mind2web_train").glob("*.hdf5"))


def _files(folder: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()
    }


def test_a_whole_build_that_outgrows_its_disk_keeps_the_last_build_and_the_rerun_is_identical(
    tmp_path, small_disk
):
    """Upstream doubles (24 -> 48 steps) on a disk that held the first build with room for only part
    of the second: the build fails naming the folder, the bytes free and the bytes it still needs;
    the previous shards and dataset_info.json stay as they were; once the disk is grown the rerun
    writes exactly what a build that never failed writes."""
    config = BuildConfig(shard_cap_bytes=3_000_000)
    before, after = tmp_path / "m24", tmp_path / "m48"
    write_mirror(before, steps=24, width=1280, height=1080, episode_len=6, jobs=2, cheap=True)
    write_mirror(after, steps=48, width=1280, height=1080, episode_len=6, jobs=2, cheap=True)
    reference = build_directory(
        MIND2WEB, "train", tmp_path / "never-failed", RawSettings("mirror", after), config
    )
    out = small_disk(24_000_000)  # the first build takes about 16 MB, both together about 32 MB
    build_directory(MIND2WEB, "train", out, RawSettings("mirror", before), config)
    published = out / "mind2web_train"
    first = _files(published)
    with pytest.raises(DiskFullError) as e:
        build_directory(MIND2WEB, "train", out, RawSettings("mirror", after), config)
    message = str(e.value)
    assert (
        message.startswith("mind2web_train: ") and "is full (" in message and " bytes free, about " in message
    )
    assert re.search(r"about \d+ bytes needed to finish", message), message
    assert _files(published) == first  # the last build's shards and dataset_info.json, untouched
    subprocess.run(["mount", "-o", "remount,size=64000000", str(out)], check=True)
    info = build_directory(MIND2WEB, "train", out, RawSettings("mirror", after), config)
    assert info.stats["steps"] == reference.stats["steps"] == 48
    assert _files(published) == _files(tmp_path / "never-failed" / "mind2web_train")


def _copy_tree(src: Path, dst: Path) -> None:
    subprocess.run(["cp", "-a", f"{src}/.", str(dst)], check=True)


def _du(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def test_a_disk_that_fills_during_an_export_fails_by_name_and_the_rerun_matches(
    tmp_path, small_disk, mirror_frames
):
    """The publishing exports on a full disk: the step names the folder and the bytes free, the
    shards and dataset_info.json stay as they were, and with room again the export equals one
    that never failed."""
    mirror = tmp_path / "mirror"
    write_mirror(mirror, steps=24, width=1280, height=1080, episode_len=6, jobs=2, frames=mirror_frames)
    built = tmp_path / "built"
    build_directory(MIND2WEB, "train", built, RawSettings("mirror", mirror))
    before = {p.relative_to(built): p.read_bytes() for p in (built / "mind2web_train").iterdir()}
    out = small_disk(_du(built) + 2_000_000)  # the build fits; a second copy of its frames does not
    _copy_tree(built, out)
    resources = {
        "paths": GuiAssetsPaths(out=str(out), mirror=str(mirror)),
        "hub": HubResource(),
        "build": BuildSettings(lerobot_export=True),
        "alerts": AlertsResource(),
    }
    lerobot_asset = next(
        a for a in build_repo_assets([MIND2WEB]) if a.key.to_user_string() == "lerobot_export"
    )
    with dg.instance_for_test() as instance:
        r = dg.materialize([lerobot_asset], resources=resources, instance=instance, raise_on_error=False)
    assert not r.success
    failure = next(e for e in r.all_events if e.event_type_value == "STEP_FAILURE")
    message = failure.step_failure_data.error.message
    assert f"{out / 'lerobot'}" in message and "bytes free" in message and "No space left" in message
    assert {p.relative_to(out): p.read_bytes() for p in (out / "mind2web_train").iterdir()} == before
    assert not [p for p in (out / "lerobot").glob("*") if not p.name.startswith(".")]  # nothing half-made
    assert not list((out / "lerobot").glob(".*"))  # and no temp folder left behind
    # With room again (a bigger disk holding the same build), the export completes and equals one
    # made where there always was room.
    roomy = small_disk(3 * _du(built) + 8_000_000)
    _copy_tree(out, roomy)
    lerobot_export.write_export(roomy)
    lerobot_export.write_export(built)
    for p in (built / "lerobot").rglob("*"):
        if p.is_file():
            assert (roomy / "lerobot" / p.relative_to(built / "lerobot")).read_bytes() == p.read_bytes(), p


# --- secrets -----------------------------------------------------------------------------


def _every_file(*roots: Path) -> list[Path]:
    return [
        p for root in roots if root.exists() for p in root.rglob("*") if p.is_file() and not p.is_symlink()
    ]


@pytest.mark.slow
def test_the_hub_token_is_never_written_anywhere(tmp_path, demo_mirror):
    token = f"hf_{uuid.uuid4().hex}{uuid.uuid4().hex[:6]}"
    forms = [token.encode(), base64.b64encode(token.encode()), token[3:].encode()]
    out, home, cache = tmp_path / "out", tmp_path / "home", tmp_path / "hf"
    home.mkdir()
    logs: list[str] = []
    with LocalHub(demo_mirror) as hub, WebhookReceiver() as hook:
        env = clean_env(
            GUI_ASSETS_SOURCE="hub",
            HF_ENDPOINT=hub.endpoint,
            HF_TOKEN=token,
            HF_HOME=str(cache),
            GUI_ASSETS_OUT=str(out),
            GUI_ASSETS_ALERT_WEBHOOK=hook.url,
            DAGSTER_HOME=str(home),
        )

        def cli(*args: str, ok: bool | None = True) -> None:
            r = dagster_materialize(list(args), REPO_ROOT, env)
            logs.append(r.stdout + r.stderr)
            assert ok is None or (r.returncode == 0) == ok, (r.stdout + r.stderr)[-3000:]

        # 1. A whole chain in hub mode, uploads (to <out>/hub) and the publishing assets included.
        cli("--select", "mind2web*", "--partition", "test_task")
        cli("--select", "preview,dataset_card,hub_card")
        repo_calls = [q for q in hub.state.requests if "datasets/" in q.path]
        assert repo_calls and all(q.authorized for q in repo_calls)  # the token was really used
        # 2. A failed check, so an alert goes out: a shard altered after dataset_info recorded it.
        shard = next((out / "mind2web_test_task").glob("*.hdf5"))
        with h5py.File(shard, "r+") as f:
            demo = f["data/demo_0"]
            demo["actions"][0] = np.asarray(demo["actions"][0]) + 0.5
        cli(
            "--select", "mind2web_dataset_info", "--partition", "test_task", ok=None
        )  # a WARN-free ERROR check
        assert hook.received, "the failed check should have alerted the webhook"
        # 3. A hub that cannot be reached: the failure and its exception are logged.
        env["HF_ENDPOINT"] = "http://127.0.0.1:9"
        cli("--select", "mind2web", "--partition", "test_domain", ok=False)
        received = json.dumps(hook.received)

    searched = _every_file(out, home, cache)
    assert len(searched) > 20
    for p in searched:
        data = p.read_bytes()
        assert not any(f in data for f in forms), f"token found in {p}"
    for text in [*logs, received]:
        assert not any(f.decode() in text for f in forms), "token found in the CLI output or an alert"


def test_nothing_evaluates_input_text():
    """No eval/exec/compile and no pickle or unsafe YAML loading anywhere in the package:
    PyAutoGUI code, JSON and trace text are parsed, never run (AST check, not a grep)."""
    banned_calls = {"eval", "exec", "compile", "__import__"}
    banned_attrs = {("pickle", "load"), ("pickle", "loads"), ("yaml", "load"), ("marshal", "loads")}
    offenders = []
    for path in sorted((REPO_ROOT / "gui_assets").rglob("*.py")):
        tree = parse_file(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                f = node.func
                if isinstance(f, ast.Name) and f.id in banned_calls:
                    offenders.append(f"{path.name}:{node.lineno} {f.id}()")
                if (
                    isinstance(f, ast.Attribute)
                    and isinstance(f.value, ast.Name)
                    and (f.value.id, f.attr) in banned_attrs
                ):
                    offenders.append(f"{path.name}:{node.lineno} {f.value.id}.{f.attr}()")
    assert offenders == []
