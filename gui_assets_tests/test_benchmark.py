"""The throughput benchmark runs end to end on a few steps: every row it prints is computed from
real runs (the script, the user's command at N and 2N steps), and the outputs agree pixel for pixel."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import throughput
from benchmarks.peak_rss import run_measured

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
    assert json.loads((tmp_path / "results.json").read_text()) == json.loads(json.dumps(results))
    printed = capsys.readouterr().out
    assert "'mind2web*' (in_process) @40" in printed and "marginal script" in printed


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
