"""The skip policy: under CI=true a skip off the allow-list fails the run; locally it is a skip."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

CASES = """
import pytest

def test_runs():
    assert True

def test_needs_a_missing_tool():
    pytest.skip("the tool is not installed")

@pytest.mark.hub
def test_needs_the_hub():
    pytest.skip("no network")

@pytest.mark.xfail(reason="known", strict=True)
def test_known_failure():
    assert False
"""


def _run(tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_cases.py").write_text(CASES)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    hub: the real hub\n")
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci is not None:
        env["CI"] = ci
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "gui_assets_tests.skip_policy", "-rs", "-q", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_under_ci_a_skip_off_the_allow_list_fails_the_run(tmp_path):
    r = _run(tmp_path, "true")
    assert r.returncode == 1, r.stdout
    assert "1 failed, 1 passed, 1 skipped, 1 xfailed" in r.stdout, r.stdout
    assert "test_needs_a_missing_tool: the tool is not installed" in r.stdout
    assert "skipped under CI=true" in r.stdout
    assert "test_needs_the_hub" not in r.stdout.split("not on the skip allow-list")[1]


@pytest.mark.parametrize("ci", [None, "false"])
def test_outside_ci_a_skip_stays_a_skip_and_is_named(tmp_path, ci):
    r = _run(tmp_path, ci)
    assert r.returncode == 0, r.stdout
    assert "1 passed, 2 skipped, 1 xfailed" in r.stdout, r.stdout
    assert "1 test(s) skipped (would fail under CI=true)" in r.stdout
