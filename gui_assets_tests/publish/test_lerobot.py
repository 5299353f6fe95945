"""The LeRobot v3.0 export: its layout and metadata, frames that keep their bytes or are encoded
losslessly, the checks (which fail on a broken export), reuse, and lerobot itself loading every
dataset of the demo build offline (in its own virtual environment, as its users have it)."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import h5py
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gui_assets.checks import lerobot_verify
from gui_assets.core.episode_store import ImageStore, iter_episodes
from gui_assets.core.layout import OutLayout, built_directories
from gui_assets.publish import lerobot, lerobot_export
from gui_assets.publish import lerobot_meta as meta
from gui_assets.publish.hub import LocalHubTarget, upload
from gui_assets_tests.conftest import AGENTVIEW_HW
from gui_assets_tests.pysource import parse_file

REPO = Path(__file__).resolve().parents[2]
CLIENT = Path(__file__).resolve().parents[1] / "lerobot_client.py"


def lerobot_python() -> Path | None:
    """GUI_ASSETS_LEROBOT_PYTHON, else the repo's `.venv-lerobot` (scripts/test makes it)."""
    given = os.environ.get("GUI_ASSETS_LEROBOT_PYTHON")
    path = Path(given) if given else REPO / ".venv-lerobot" / "bin" / "python"
    return path if path.is_file() else None


@pytest.fixture(scope="module")
def exported(every_demo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("lerobot") / "out"
    shutil.copytree(every_demo, out, symlinks=True)
    lerobot_export.write_export(out)
    return out


def _datasets(out: Path) -> list[Path]:
    return sorted(p for p in (out / lerobot.EXPORT_DIR).iterdir() if not p.name.startswith("."))


def test_every_directory_becomes_datasets_of_one_frame_size_each(exported):
    infos = built_directories(exported)
    names = {p.name for p in _datasets(exported)}
    assert {i.directory for i in infos} <= names
    extra = names - {i.directory for i in infos}
    assert extra and all("_" in n and "x" in n.rsplit("_", 1)[1] for n in extra)  # <directory>_<H>x<W>
    for root in _datasets(exported):
        info = json.loads((root / "meta" / "info.json").read_text())
        assert info["codebase_version"] == "v3.0" and info["fps"] == meta.FPS
        c = info["features"][meta.AGENTVIEW]["shape"][2]
        assert c == 3 and info["features"][meta.EYE_IN_HAND]["shape"] == [128, 128, 3]
        assert info["features"]["action_type"]["labels"]["0"] == "CLICK"
        for path in (root / "data").glob("*/*.parquet"):
            table = pq.read_table(path, columns=[meta.AGENTVIEW])
            assert table.num_rows > 0
        for entry in ("stats.json", "tasks.parquet"):
            assert (root / "meta" / entry).is_file()
        stats = json.loads((root / "meta" / "stats.json").read_text())
        assert len(stats[meta.AGENTVIEW]["mean"]) == 3 and 0 <= stats[meta.AGENTVIEW]["mean"][0][0][0] <= 1
        assert stats["action"]["count"] == [info["total_frames"]]


def test_the_holdout_is_its_own_split_after_the_main_episodes(exported):
    info = json.loads((exported / "lerobot" / "agentnet_ubuntu" / "meta" / "info.json").read_text())
    train, val = info["splits"]["train"], info["splits"]["validation"]
    assert train.split(":")[1] == val.split(":")[0] and val.split(":")[1] == str(info["total_episodes"])


def test_the_checks_pass_on_the_export(exported):
    for verify in (lerobot_verify.counts, lerobot_verify.tasks, lerobot_verify.frames):
        verdict = verify(exported)
        assert verdict.passed, (verdict.summary, verdict.examples)
    assert lerobot_verify.frames(exported).figures["frames_compared"] >= 4 * 10


def test_whole_png_screenshots_keep_their_stored_bytes(exported):
    layout = OutLayout(exported)
    images = ImageStore(layout.image_store)
    root = exported / "lerobot" / "agentnet_ubuntu"
    steps = [s for ep in iter_episodes(layout.episodes("agentnet_ubuntu")) for s in ep.steps]
    stored = {images.path(s.observation.image_sha256, "png").read_bytes() for s in steps}
    table = pq.read_table(next((root / "data").glob("*/*.parquet")), columns=[meta.AGENTVIEW])
    cells = [c["bytes"] for c in table.column(meta.AGENTVIEW).to_pylist()]
    assert cells and all(c in stored for c in cells)


def _rewrite(path: Path, change) -> None:
    table = pq.read_table(path)
    pq.write_table(change(table), path)


def test_the_checks_fail_on_a_changed_frame_a_lost_episode_and_a_wrong_task(exported, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(exported, out, symlinks=True)
    root = out / "lerobot" / "mind2web_train"
    data = next((root / "data").glob("*/*.parquet"))

    def swap_frames(table: pa.Table) -> pa.Table:  # step 0 shows step 1's frame
        col = table.column(meta.AGENTVIEW).to_pylist()
        col[0] = col[1]
        return table.set_column(
            table.schema.get_field_index(meta.AGENTVIEW), meta.AGENTVIEW, pa.array(col, meta.IMAGE_STRUCT)
        )

    _rewrite(data, swap_frames)
    assert not lerobot_verify.frames(out, samples=10_000).passed
    _rewrite(data, lambda t: t.slice(0, t.num_rows - 1))
    verdict = lerobot_verify.counts(out)
    assert not verdict.passed and any("mind2web_train" in e for e in verdict.examples)
    episodes = next((root / "meta" / "episodes").glob("*/*.parquet"))
    _rewrite(
        episodes,
        lambda t: t.set_column(
            t.schema.get_field_index("tasks"), "tasks", pa.array([["wrong"]] * t.num_rows)
        ),
    )
    assert not lerobot_verify.tasks(out).passed


def test_an_unchanged_dataset_is_reused_and_a_gone_directory_is_removed(exported, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(exported, out, symlinks=True)
    first = lerobot_export.write_export(out)
    assert first.written == [] and len(first.reused) == len(_datasets(out))
    info_path = out / "weblinx_train" / "dataset_info.json"
    info = json.loads(info_path.read_text())
    info["build"]["note"] = "rebuilt"  # a changed dataset_info: that directory's dataset is redone
    info_path.write_text(json.dumps(info))
    shutil.rmtree(out / "pango_sample")
    again = lerobot_export.write_export(out)
    assert again.written == ["weblinx_train"] and again.removed == ["pango_sample"]
    assert again.digest() != first.digest()
    (out / "lerobot" / "weblinx_train" / "meta" / "stats.json").write_text("{}")  # tampered: redone
    assert lerobot_export.write_export(out).written == ["weblinx_train"]


def test_agentview_hw_gives_one_dataset_per_directory(agentview_hw_build, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(agentview_hw_build, out, symlinks=True)
    result = lerobot_export.write_export(out)
    assert sorted(result.datasets) == ["agentnet_win_mac", "mind2web_train"]
    for figures in result.datasets.values():
        assert figures["frame_hw"] == list(AGENTVIEW_HW) and figures["agentview_original"] == 0
    assert all(v(out).passed for v in (lerobot_verify.counts, lerobot_verify.frames, lerobot_verify.tasks))


def _request(out: Path, roots: dict[str, Path], path: Path) -> None:
    layout = OutLayout(out)
    datasets = []
    for info in built_directories(out):
        for part in lerobot.parts_of(info, layout.directory(info.directory)):
            demos = []
            for shard in part.shards:
                with h5py.File(shard, "r") as f:
                    demos += [[str(shard), n] for n in sorted(f["data"], key=lambda k: int(k[5:]))]
            datasets.append({"name": part.name, "root": str(roots[part.name]), "demos": demos})
    path.write_text(json.dumps({"seed": 0, "items": 12, "datasets": datasets}))


def _run_lerobot(python: Path, request: Path, home: Path) -> dict:
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "HF_HOME": str(home / "hf"),
        "HF_LEROBOT_HOME": str(home / "lerobot"),
    }
    env.pop("PYTHONPATH", None)
    r = subprocess.run(
        [str(python), str(CLIENT), str(request)], capture_output=True, text=True, env=env, timeout=900
    )
    assert r.returncode == 0, r.stderr[-4000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    ("build", "video"), [("every_demo", False), ("agentview_hw_build", False), ("agentview_hw_build", True)]
)
@pytest.mark.slow
def test_lerobot_loads_and_batches_every_dataset_as_uploaded(build, video, request, tmp_path):
    python = lerobot_python()
    if python is None:
        pytest.skip("lerobot's virtual environment is missing (scripts/test makes .venv-lerobot)")
    out = tmp_path / "out"
    shutil.copytree(request.getfixturevalue(build), out, symlinks=True)
    lerobot_export.write_export(out, video=video)
    # What a user downloads with `hf download <repo> --include 'lerobot/<dataset>/*'`.
    hub = LocalHubTarget(tmp_path / "hub")
    listed = lerobot_export.published_files(out)
    upload([(p, local) for p, local, _ in listed], hub, "lerobot", known={p: s for p, _, s in listed})
    roots = {p.name: tmp_path / "hub" / "lerobot" / p.name for p in _datasets(out)}
    req = tmp_path / "request.json"
    _request(out, roots, req)
    reports = _run_lerobot(python, req, tmp_path)
    assert set(reports) == set(roots)
    for name, report in reports.items():
        info = json.loads((roots[name] / "meta" / "info.json").read_text())
        assert report["mismatches"] == [], name
        assert report["video_keys"] == ([meta.AGENTVIEW] if video else [])
        assert not video or report["video_psnr_min"] > 30  # decoded by lerobot (torchcodec)
        assert report["frames"] == report["rows_batched"] == info["total_frames"] and report["items"] >= 1
        assert report["episodes"] == info["total_episodes"]
        h, w, _ = info["features"][meta.AGENTVIEW]["shape"]
        assert report["agentview_shapes"] == [[3, h, w]]
        doctor = report["doctor"]  # `lerobot-doctor check <root> --json`, run by the client
        assert doctor["exit_status"] == 0 and "summary" in doctor, doctor
        assert doctor["summary"]["FAIL"] == 0, [c for c in doctor["checks"] if c["severity"] == "FAIL"]


def test_the_judge_imports_nothing_of_ours():
    tree = parse_file(CLIENT)
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "lerobot.datasets.lerobot_dataset" in imported
    assert not any(m.split(".")[0] in ("gui_assets", "gui_assets_tests") for m in imported)


def _psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return float("inf") if mse == 0 else 10 * np.log10(255.0**2 / mse)


def test_the_video_option_streams_agentview_frames_at_their_timestamps(every_demo, tmp_path):
    av = pytest.importorskip("av")
    out = tmp_path / "out"
    shutil.copytree(every_demo, out, symlinks=True)
    for gone in (
        "agentnet_ubuntu",
        "cuagym_browser_use",
        "cuagym_desktop_use",
        "pango_sample",
        "webarena_human",
    ):
        shutil.rmtree(out / gone)  # four sizes and a holdout are enough
    result = lerobot_export.write_export(out, video=True)
    assert result.datasets and all(f["video"] for f in result.datasets.values())
    layout = OutLayout(out)
    psnrs = []
    for info in built_directories(out):
        for part in lerobot.parts_of(info, layout.directory(info.directory)):
            root = out / "lerobot" / part.name
            meta_info = json.loads((root / "meta" / "info.json").read_text())
            feature = meta_info["features"][meta.AGENTVIEW]
            assert feature["dtype"] == "video" and feature["info"]["video.codec"] == "av1"
            assert meta_info["video_path"]
            data = next((root / "data").glob("*/*.parquet"))
            assert meta.AGENTVIEW not in pq.read_schema(data).names
            rows = pq.read_table(next((root / "meta" / "episodes").glob("*/*.parquet"))).to_pylist()
            video = root / f"videos/{meta.AGENTVIEW}/chunk-000/file-000.mp4"
            with av.open(str(video)) as container:
                decoded = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
            assert len(decoded) == meta_info["total_frames"]
            frames = []
            for shard in part.shards:
                with h5py.File(shard, "r") as f:
                    for name in sorted(f["data"], key=lambda k: int(k[5:])):
                        frames += list(f["data"][name]["obs/agentview_rgb"][()])
            assert len(frames) == len(decoded)
            for row in rows:  # an episode's frames sit at [from, to) seconds of its file
                start = row[f"videos/{meta.AGENTVIEW}/from_timestamp"]
                assert row[f"videos/{meta.AGENTVIEW}/to_timestamp"] == start + row["length"] / meta.FPS
                assert start * meta.FPS == row["dataset_from_index"]
            psnrs += [_psnr(a, b) for a, b in zip(decoded, frames, strict=True)]
    assert min(psnrs) > 30, min(psnrs)  # lossy, but the page is legible


def test_the_video_encoder_leaves_the_callers_scheduling_as_it_was(tmp_path):
    """SVT-AV1 run as root (CI is) moves the thread that opens it to SCHED_FIFO 99. Encoding runs
    in a thread of its own here, so a regression cannot leave the test worker real-time."""
    pytest.importorskip("av")
    if not hasattr(os, "sched_getscheduler"):
        pytest.skip("this OS has no scheduling classes to keep (Linux only)")
    from gui_assets.publish.lerobot_video import VideoFiles

    seen: dict[str, object] = {}

    def encode() -> None:
        seen["before"] = os.sched_getscheduler(0)
        video = VideoFiles(tmp_path, meta.AGENTVIEW, (64, 96))
        video.at_episode_start()
        for i in range(4):
            video.add(np.full((64, 96, 3), 40 * i, np.uint8))
        seen["during"] = os.sched_getscheduler(0)
        seen["files"] = video.close()
        seen["after"] = os.sched_getscheduler(0)
        child = subprocess.run(
            [sys.executable, "-c", "import os; print(os.sched_getscheduler(0))"],
            capture_output=True, text=True, check=True,
        )
        seen["child"] = int(child.stdout)

    thread = threading.Thread(target=encode)
    thread.start()
    thread.join(120)
    assert len(seen["files"]) == 1  # type: ignore[arg-type]
    assert seen["before"] == seen["during"] == seen["after"] == seen["child"] == os.SCHED_OTHER, seen
