"""Fixture factories: real-format inputs built in code, and one demo build shared per session."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gui_assets.core.atomic import file_lock
from gui_assets.core.config import BuildConfig
from gui_assets.core.episode_store import ImageStore
from gui_assets.core.ir import GuiEpisode
from gui_assets.core.layout import DatasetInfo, OutLayout
from gui_assets.core.stats import BuildStats
from gui_assets.pipeline.chain import RawSettings, build_directory, fetch_raw
from gui_assets.pipeline.episodes import adapt
from gui_assets.sources.agentnet.source import SPEC as AGENTNET
from gui_assets.sources.demo_mirror import ensure_demo_mirror
from gui_assets.sources.demo_render import Widget, encode, render_page
from gui_assets.sources.mind2web.demo import SCHEMA
from gui_assets.sources.mind2web.source import SPEC as MIND2WEB
from gui_assets.sources.registry import SOURCES
from gui_assets.sources.spec import SourceSpec

REPO = "osunlp/Multimodal-Mind2Web"
T = TypeVar("T")


def page_bytes(
    width: int = 1280,
    height: int = 1080,
    fmt: str = "png",
    widgets: list[Widget] | None = None,
    seed: int = 1,
) -> bytes:
    """A real screenshot of a UI-like page."""
    return encode(render_page(seed, width, height, widgets or [], "testsite"), fmt)


def candidate(rect: str, original: bool | None = None, tag: str = "button") -> str:
    """A pos_candidates entry as the parquet stores it: JSON whose `attributes` is JSON again."""
    c: dict[str, Any] = {
        "tag": tag,
        "attributes": json.dumps({"backend_node_id": "42", "bounding_box_rect": rect}),
    }
    if original is not None:
        c["is_original_target"] = original
    return json.dumps(c)


def m2w_row(
    annotation_id: str = "task-1",
    index: Any = "0",
    op: str = "CLICK",
    value: str = "",
    original_op: str | None = None,
    rect: str | None = "100,100,200,50",
    screenshot: bytes | None = None,
    page: tuple[int, int] = (1280, 1080),
    task: str = "do the thing",
    operation: str | None = None,
    pos_candidates: list[str] | None = None,
) -> dict[str, Any]:
    """One Multimodal-Mind2Web parquet row; every field in its upstream type."""
    if pos_candidates is None:
        pos_candidates = [candidate(rect)] if rect is not None else []
    if screenshot is None:
        screenshot = page_bytes(*page)
    return {
        "action_uid": f"{annotation_id}-{index}",
        "raw_html": "<html></html>",
        "cleaned_html": "<html></html>",
        "operation": operation
        if operation is not None
        else json.dumps({"original_op": original_op or op, "value": value, "op": op}),
        "pos_candidates": pos_candidates,
        "neg_candidates": [],
        "website": "site",
        "domain": "Travel",
        "subdomain": "Airlines",
        "annotation_id": annotation_id,
        "confirmed_task": task,
        "screenshot": {"bytes": screenshot, "path": None} if screenshot != b"" else None,
        "action_reprs": ["[button]  x -> CLICK"],
        "target_action_index": index if isinstance(index, str) or index is None else str(index),
        "target_action_reprs": "[button]  x -> CLICK",
    }


def run_adapter(
    spec: SourceSpec,
    mirror: Path,
    partition: str,
    tmp: Path,
    options: dict[str, Any] | None = None,
    **config: Any,
) -> tuple[list[GuiEpisode], BuildStats]:
    """A source's adapter over one partition of a mirror, as the episodes stage runs it, with
    BuildConfig knobs `config` and the source's `options`: (the episodes, the stage's counts)."""
    raw = fetch_raw(spec, partition, OutLayout(tmp / "out"), RawSettings(mode="mirror", mirror=mirror))
    stats = BuildStats()
    build = BuildConfig(**config, source_options={spec.name: options or {}})
    episodes = list(adapt(spec, raw, ImageStore(tmp / "images"), build, stats))
    return episodes, stats


WriteMirror = Callable[..., Path]


@pytest.fixture
def write_m2w(tmp_path: Path) -> WriteMirror:
    """write_m2w([[rows of file 0], [rows of file 1]], split="train") -> the mirror root."""

    def write(files: list[list[dict[str, Any]]], split: str = "train") -> Path:
        data = tmp_path / "mirror" / REPO / "data"
        data.mkdir(parents=True, exist_ok=True)
        for i, rows in enumerate(files):
            name = f"{split}-{i:05d}-of-{len(files):05d}-{i:016x}.parquet"
            pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), data / name)
        return tmp_path / "mirror"

    return write


def _session_root(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """The folder every xdist worker of this session has its own temp folder in (the session's
    own temp folder without xdist)."""
    root = tmp_path_factory.getbasetemp()
    # xdist's fixture, not the environment: that would leak into a nested pytest
    return root if worker_id == "master" else root.parent


def in_worker_order(items: Sequence[T], worker_id: str) -> list[T]:
    """`items` in the order this worker walks them: odd-numbered xdist workers from the end, so
    two workers that arrive together at a build of pieces split it instead of queueing."""
    number = int(worker_id.removeprefix("gw")) if worker_id.startswith("gw") else 0
    return list(reversed(items)) if number % 2 else list(items)


def built_once(
    tmp_path_factory: pytest.TempPathFactory,
    worker_id: str,
    name: str,
    build: Callable[[Path, str], object],
    pieces: Sequence[str] = ("all",),
) -> Path:
    """`build(folder, piece)` run once per test session for every piece, even across xdist
    workers, all into one folder in the session's shared temp folder. Each piece has a lock:
    the first worker to get to a piece builds it, a worker that finds it being built waits for
    it, and workers walk the pieces from opposite ends (`in_worker_order`), so a build in pieces
    is shared between them. A piece that fails is built again by the next worker to get to it:
    pieces share the folder and are built over what the failure left, as a pipeline rerun is.
    What is built here is read, never changed, by the tests."""
    root = _session_root(tmp_path_factory, worker_id)
    folder = root / name
    folder.mkdir(exist_ok=True)
    for piece in in_worker_order(pieces, worker_id):
        with file_lock(root / f"{name}.{piece}.lock"):
            if not (root / f"{name}.{piece}.done").exists():
                if len(pieces) == 1:  # a whole build starts afresh from what a failed one left
                    shutil.rmtree(folder, ignore_errors=True)
                    folder.mkdir()
                build(folder, piece)
                (root / f"{name}.{piece}.done").touch()
    return folder


def partitions_of(sources: Sequence[SourceSpec]) -> dict[str, tuple[SourceSpec, str]]:
    """Every partition of `sources` by `<source>:<partition>`: the pieces of a build of them."""
    return {f"{spec.name}:{key}": (spec, key) for spec in sources for key in spec.partition_keys}


def demo_mirror_with(
    tmp_path_factory: pytest.TempPathFactory, worker_id: str, sources: Sequence[SourceSpec]
) -> Path:
    """The session's demo mirror with (at least) the parts of `sources`, each generated once per
    session: parts have locks of their own, so workers arriving together generate different
    parts."""
    root = _session_root(tmp_path_factory, worker_id) / "demo" / "mirror"
    return ensure_demo_mirror(root, in_worker_order(sources, worker_id))


@pytest.fixture(scope="session")
def demo_mirror(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """The demo mirror of every registered source."""
    return demo_mirror_with(tmp_path_factory, worker_id, SOURCES)


@pytest.fixture(scope="session")
def demo_build(
    tmp_path_factory: pytest.TempPathFactory, worker_id: str, demo_mirror: Path
) -> tuple[Path, dict[str, DatasetInfo]]:
    """Every Mind2Web partition of the demo mirror built once: (out dir, infos by partition)."""

    def build(out: Path, key: str) -> None:
        build_directory(MIND2WEB, key, out, RawSettings(mode="mirror", mirror=demo_mirror))

    out = built_once(tmp_path_factory, worker_id, "build", build, MIND2WEB.partition_keys)
    infos = {
        key: DatasetInfo.read(out / MIND2WEB.directory(key) / "dataset_info.json")
        for key in MIND2WEB.partition_keys
    }
    return out, infos


@pytest.fixture(scope="session")
def every_demo(demo_mirror: Path, tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """Every partition of every source of the demo mirror, built once: the out dir."""
    partitions = partitions_of(SOURCES)

    def build(out: Path, piece: str) -> None:
        spec, key = partitions[piece]
        build_directory(spec, key, out, RawSettings("mirror", demo_mirror))

    return built_once(tmp_path_factory, worker_id, "every-demo", build, list(partitions))


# Frames 0..119 at 1280x1080: what the tests' generated Mind2Web mirrors (benchmarks.frames) are
# made of. Each mirror starts at frame 0 and the largest holds 120 steps.
MIRROR_FRAMES = 120
MIRROR_FRAME_SIZE = (1280, 1080)


@pytest.fixture(scope="session")
def mirror_frames(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """The frames of the tests' generated mirrors, drawn once per session in pieces of ten that
    the workers share, for `write_mirror(..., frames=mirror_frames)`: a frame takes about 0.15 s
    to draw, and seven tests would otherwise draw the same ones again, about 380 in all."""
    from benchmarks.frames import frame_png

    def draw(folder: Path, piece: str) -> None:
        for index in range(int(piece), int(piece) + 10):
            frame_png(index, *MIRROR_FRAME_SIZE, frames=folder)

    pieces = [str(start) for start in range(0, MIRROR_FRAMES, 10)]
    return built_once(tmp_path_factory, worker_id, "mirror-frames", draw, pieces)


AGENTVIEW_HW = (360, 640)


@pytest.fixture(scope="session")
def agentview_hw_build(demo_mirror: Path, tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """Mind2Web train and AgentNet win_mac (three native sizes) built at agentview_hw 360x640."""

    partitions = {"mind2web:train": (MIND2WEB, "train"), "agentnet:win_mac": (AGENTNET, "win_mac")}

    def build(out: Path, piece: str) -> None:
        spec, key = partitions[piece]
        config = BuildConfig(agentview_hw=AGENTVIEW_HW)
        build_directory(spec, key, out, RawSettings("mirror", demo_mirror), config)

    return built_once(tmp_path_factory, worker_id, "agentview-hw", build, list(partitions))


def cli_materialize(
    partition: str, cwd: Path, env: dict[str, str] | None = None, source: str = "mind2web"
) -> subprocess.CompletedProcess[str]:
    """The README's command, `dagster asset materialize -m gui_assets --select '<source>*'
    --partition P`, run as a user runs it: a separate process in `cwd`."""
    return dagster_materialize(["--select", f"{source}*", "--partition", partition], cwd, env)


def dagster_materialize(
    args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """`dagster asset materialize -m gui_assets <args>` in its own process, output captured."""
    cmd = [sys.executable, "-m", "dagster", "asset", "materialize", "-m", "gui_assets", *args]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def free_port() -> int:
    """A localhost TCP port nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without any gui_assets, Dagster-home or hub setting, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GUI_ASSETS_", "DAGSTER_HOME", "HF_"))}
    env.update(extra)
    return env


def asset_keys(asset: Any) -> set[Any]:
    """The keys an AssetsDefinition produces, or a source asset's one key."""
    return set(asset.keys) if hasattr(asset, "keys") else {asset.key}


def source_definitions(source: str) -> list:
    """One source's assets and checks from the code location (one partitions definition)."""
    from gui_assets.definitions import defs

    assets = [
        a for a in defs.assets or [] if all(k.to_user_string().startswith(source) for k in asset_keys(a))
    ]
    checks = [
        c
        for c in defs.asset_checks or []
        if all(k.asset_key.to_user_string().startswith(source) for k in c.check_keys)
    ]
    return [*assets, *checks]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow tests first: a worker that starts a long CLI run late is what makes the suite
    long, so they are handed out before the quick ones (whose order is unchanged). xdist hands
    tests out one at a time (`--maxschedchunk 1` in pyproject): its default sends each worker a
    run of consecutive tests up front, which put every slow test on the first worker."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def _scheduling() -> tuple[int, os.sched_param] | None:
    """This thread's scheduling policy and parameters (None where the OS does not say: macOS)."""
    if not hasattr(os, "sched_getscheduler"):
        return None
    return os.sched_getscheduler(0), os.sched_getparam(0)


WORKER_SCHEDULING = _scheduling()


@pytest.fixture(autouse=True)
def worker_scheduling_unchanged() -> Iterator[None]:
    """A test that leaves its worker in another scheduling class fails, and the class is put back.
    Everything a worker starts later inherits it: a real-time worker once starved CI's two cores
    until the run was killed (SVT-AV1, run as root, had switched it to SCHED_FIFO 99)."""
    yield
    now = _scheduling()
    if now != WORKER_SCHEDULING and WORKER_SCHEDULING is not None:
        os.sched_setscheduler(0, *WORKER_SCHEDULING)
        pytest.fail(f"the test left its worker's scheduling at {now}, not {WORKER_SCHEDULING}")


FUZZ_CASES: Counter[str] = Counter()
FUZZ_OUTCOMES: Counter[str] = Counter()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Add up the fuzz tests' counts from their reports (sent back by every xdist worker)."""
    for name, value in report.user_properties:
        if name == "fuzz_cases" and report.when == "call":
            FUZZ_CASES[value["source"]] += sum(value["outcomes"].values())
            FUZZ_OUTCOMES.update(value["outcomes"])


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Say how many fuzz cases ran (the count is part of what the suite proves)."""
    if not FUZZ_CASES:
        return
    terminalreporter.write_sep("-", "adapter fuzz")
    terminalreporter.write_line(
        f"{sum(FUZZ_CASES.values())} fuzz cases: "
        + ", ".join(f"{k} {v}" for k, v in sorted(FUZZ_CASES.items()))
        + "; outcomes: "
        + ", ".join(f"{k} {v}" for k, v in sorted(FUZZ_OUTCOMES.items()))
    )
