"""The throughput benchmark runs end to end on a few steps: every row it prints is computed from
real runs (the script, the user's command at N and 2N steps), and the outputs agree pixel for pixel."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from benchmarks import codecs, scale, throughput
from benchmarks.frames import BASE_PAGES, cheap_screenshot, write_mirror
from benchmarks.peak_rss import run_measured, run_measured_io
from gui_assets.core.images import decode_rgb

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_benchmark_reports_the_users_command_and_the_marginal_rate(tmp_path, capsys):
    results = throughput.main(["--steps", "20", "--scale", "2", "--episode-len", "5", "--work", str(tmp_path),
                               "--no-chain", "--samples", "4"])  # fmt: skip
    runs = results["runs"]
    assert set(runs) == {"script@20", "users-in_process@20", "script@40", "users-in_process@40"}
    users = runs["users-in_process@40"]
    assert users["select"] == "mind2web*" and users["readback"] == {"frames_compared": 4, "equal": True}
    assert 0 < users["publishing_share"] < 1 and users["publishing_seconds"] > 0
    assert {"preview", "cua_lite_export", "mind2web_upload", "mind2web_episodes"} <= set(
        users["step_seconds"]
    )
    marginal = results["marginal"]
    assert marginal["script"]["extra_steps"] == marginal["users-in_process"]["extra_steps"] == 20
    assert "ratio_to_script" in marginal["users-in_process"]
    bound = results["bound"]  # decode and deflate alone, twice around the larger command
    assert bound["frames"] == 40 and len(bound["before_and_after"]) == 2 and bound["steps_per_s"] > 0
    share = marginal["users-in_process"]["share_of_bound"]
    assert share == round(marginal["users-in_process"]["steps_per_s"] / bound["steps_per_s"], 3)
    assert json.loads((tmp_path / "results.json").read_text()) == json.loads(json.dumps(results))
    printed = capsys.readouterr().out
    assert "'mind2web*' (in_process) @40" in printed and "marginal script" in printed
    assert "decode-and-deflate bound" in printed and "of the bound" in printed
    fingerprint = results["fingerprint"]  # the audit's per-step cost, against the writer's own
    assert fingerprint["frames"] == 40 and 0 < fingerprint["fingerprint_ms"] < fingerprint["writer_ms"]
    assert "screen fingerprint:" in printed


def test_a_commands_peak_rss_is_its_own_not_its_big_parents():
    """Measured under the launcher, a 10 MB command started by a process holding 600 MB reads as
    itself, and a command that touches 300 MB reads as at least that."""
    held = bytearray(600 * 1024 * 1024)
    held[::4096] = b"\x01" * len(held[::4096])  # touch every page: resident in this process
    small = [sys.executable, "-c", "pass"]
    big = [sys.executable, "-c", "b = bytearray(300 * 2**20); b[::4096] = b'\\x01' * len(b[::4096])"]
    code, peak = run_measured(small, REPO, dict(os.environ), subprocess.DEVNULL)
    assert code == 0 and peak < 100, peak
    code, peak = run_measured(big, REPO, dict(os.environ), subprocess.DEVNULL)
    assert code == 0 and 300 <= peak < 400, peak
    del held


def test_a_commands_bytes_written_to_storage_are_counted():
    code = "import os, sys; f = open(sys.argv[1], 'wb'); f.write(os.urandom(40 << 20)); os.fsync(f.fileno())"
    write = [sys.executable, "-c", code]
    with tempfile.TemporaryDirectory(dir=REPO) as tmp:
        code, _, written = run_measured_io(
            [*write, f"{tmp}/blob"], REPO, dict(os.environ), subprocess.DEVNULL
        )
    assert code == 0 and 40 << 20 <= written < 60 << 20, written


def test_cheap_frames_are_distinct_and_decode_to_their_size():
    shots = [cheap_screenshot(i, 640, 360)[0] for i in (0, 1, BASE_PAGES)]  # 0 and BASE_PAGES share a page
    assert len(set(shots)) == 3
    assert all(decode_rgb(s).shape == (360, 640, 3) for s in shots)


def test_a_mirror_of_kept_frames_is_the_mirror_drawn_afresh(tmp_path):
    def rows(repo: Path) -> list[dict]:
        return [r for p in sorted((repo / "data").glob("*.parquet")) for r in pq.read_table(p).to_pylist()]

    size = {"width": 640, "height": 480, "episode_len": 2, "jobs": 1}
    drawn = rows(write_mirror(tmp_path / "drawn", steps=4, **size))
    kept = tmp_path / "frames"
    assert rows(write_mirror(tmp_path / "keeping", steps=4, frames=kept, **size)) == drawn
    kept_files = sorted(kept.rglob("*.png"))
    assert len(kept_files) == 4
    # A kept frame is read, not drawn again: frame 0 replaced in the folder shows in the mirror.
    kept_files[0].write_bytes(b"kept frame 0")
    read = rows(write_mirror(tmp_path / "reading", steps=3, frames=kept, **size))
    assert read[0]["screenshot"]["bytes"] == b"kept frame 0"
    assert {**read[0], "screenshot": None} == {**drawn[0], "screenshot": None}
    assert read[1:] == drawn[1:3]


@pytest.mark.slow
def test_the_scale_benchmark_measures_every_stage_at_two_sizes(tmp_path):
    results = scale.main(["--steps", "20", "--steps", "40", "--work", str(tmp_path)])
    for steps in ("20", "40"):
        run = results["runs"][steps]
        assert list(run["stages"]) == list(scale.STAGES)
        shards = run["stages"]["mind2web_shards"]
        assert (
            shards["written_bytes"] >= run["shard_bytes"] > 0 and shards["left_bytes"] >= run["shard_bytes"]
        )
        assert all(s["peak_rss_mb"] > 50 and s["seconds"] > 0 for s in run["stages"].values())
    assert set(results["growth"]) == {"ms_per_step", "peak_rss_mb"}
    assert json.loads((tmp_path / "results-scale.json").read_text())["runs"]["40"]["steps"] == 40


def test_the_codec_benchmark_checks_every_codec_round_trips(tmp_path):
    results = codecs.main(["--frames", "2", "--writer-steps", "4", "--work", str(tmp_path)])
    seen = {(r["frames"], r["codec"], r["level"]) for r in results["codecs"]}
    assert ("pages", "libdeflate", 6) in seen and ("screenshots", "zlib-ng", 6) in seen
    base = [r for r in results["codecs"] if (r["codec"], r["level"]) == ("zlib", 4)]
    assert [r["bytes_vs_zlib4"] for r in base] == [1.0, 1.0]
    assert [w["level"] for w in results["writer"]] == list(codecs.WRITER_LEVELS)
    assert results["script_recipe"]["bytes_per_step"] > 0
    assert all(w["bytes_vs_script"] > 0 for w in results["writer"])
