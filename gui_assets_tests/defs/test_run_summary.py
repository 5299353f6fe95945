"""The closing summary of a run: after its last step, what was built (directory, demos, steps),
the checks passed and failed, what was written and published where; kept for `gui-assets demo`."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import dagster as dg
import pytest

from gui_assets.cli.demo import whole_build_lines
from gui_assets.defs.run_summary import steps_left
from gui_assets.pipeline.run_summary import BuiltDirectory, Published, RunSummary, read_summary
from gui_assets_tests.conftest import clean_env, cli_materialize

START, OK, FAIL = (
    dg.DagsterEventType.STEP_START,
    dg.DagsterEventType.STEP_SUCCESS,
    dg.DagsterEventType.STEP_FAILURE,
)


def plan(edges: dict[str, list[str]]) -> SimpleNamespace:
    """A plan snapshot's shape: steps with inputs from upstream steps."""
    steps = [
        SimpleNamespace(
            key=k,
            inputs=[SimpleNamespace(upstream_output_handles=[SimpleNamespace(step_key=u)]) for u in ups],
        )
        for k, ups in edges.items()
    ]
    return SimpleNamespace(steps=steps)


def events(*pairs: tuple[dg.DagsterEventType, str]) -> list[SimpleNamespace]:
    return [SimpleNamespace(dagster_event=SimpleNamespace(event_type=t, step_key=k)) for t, k in pairs]


CHAIN = plan(
    {"raw": [], "episodes": ["raw"], "write[?]": ["episodes"], "publish": ["write[?]"], "check": ["publish"]}
)


def test_the_last_step_to_end_is_the_one_with_nothing_left():
    done = events((START, "raw"), (OK, "raw"), (START, "episodes"), (OK, "episodes"))
    assert steps_left(CHAIN, None, done, "episodes", False) == {"publish", "check"}
    units = [*done, *events((START, "write[u0]"), (START, "write[u1]"), (OK, "write[u0]"))]
    assert steps_left(CHAIN, None, units, "write[u0]", False) == {"write[u1]", "publish", "check"}
    finished = [*units, *events((OK, "write[u1]"), (START, "publish"), (OK, "publish"), (START, "check"))]
    assert steps_left(CHAIN, None, finished, "check", False) == set()


def test_steps_downstream_of_a_failure_are_not_waited_for():
    failed = events((START, "raw"), (OK, "raw"), (START, "episodes"))
    assert steps_left(CHAIN, None, failed, "episodes", True) == set()  # the failing step is the last
    unit_failed = events(
        (START, "raw"), (OK, "raw"), (START, "episodes"), (OK, "episodes"), (START, "write[u0]")
    )
    assert steps_left(CHAIN, None, unit_failed, "write[u0]", True) == set()


def test_only_the_selected_steps_are_waited_for():
    done = events((START, "raw"), (OK, "raw"))
    assert steps_left(CHAIN, ["raw"], done, "raw", False) == set()


def test_a_whole_demo_build_sums_its_runs():
    a = RunSummary("a" * 32, True, "train", [BuiltDirectory("m_train", "/o/m_train", 3, 40)], checks_passed=5)
    a.published = [Published("m_upload", "/o/hub", 3, 0)]
    b = RunSummary(
        "b" * 32, True, "ubuntu", [BuiltDirectory("a_ubuntu", "/o/a_ubuntu", 2, 9)], checks_passed=4
    )
    b.checks_failed = ["a_shards:pre_action_frame"]
    b.published = [Published("a_upload", "/o/hub", 2, 1)]
    assert whole_build_lines([a, b]) == [
        "  m_train: 3 demos, 40 steps",
        "  a_ubuntu: 2 demos, 9 steps",
        "checks: 9 passed, 1 failed",
        "  failed: a_shards:pre_action_frame (ubuntu)",
        "published to /o/hub: 5 files sent, 1 unchanged",
    ]


@pytest.mark.slow
def test_a_cli_run_ends_with_its_summary(tmp_path: Path, demo_mirror: Path) -> None:
    """`--select 'pango*' --partition sample` as a user types it: it builds the partition, and the
    run ends with its summary."""
    r = cli_materialize("sample", tmp_path, clean_env(GUI_ASSETS_MIRROR=str(demo_mirror)), source="pango")
    assert r.returncode == 0, r.stderr[-3000:]
    build = (tmp_path / "build").resolve()
    info = json.loads((build / "pango_sample" / "dataset_info.json").read_text())
    demos, steps = info["stats"]["episodes_out"], info["stats"]["steps"]
    assert demos >= 3 and (build / "pango_sample" / "pango_sample_0000.hdf5").is_file()
    err = r.stderr
    head = err.index("gui_assets: run ")
    assert err.rindex("STEP_SUCCESS") < head  # after the run's last step
    summary = err[head:].splitlines()
    assert summary[0].endswith(" succeeded, partition sample"), summary
    assert f"  built      pango_sample: {demos} demos, {steps} steps in {build / 'pango_sample'}" in summary
    checks = next(line for line in summary if line.startswith("  checks"))
    passed = int(checks.split()[1])
    assert passed > 0 and checks.endswith(" passed, 0 failed")
    assert f"  published  pango_upload: 2 files sent, 0 unchanged, to {build / 'hub'}" in summary
    assert f"  wrote      dataset_card: {build / 'README.md'}" in summary
    assert err.count("gui_assets: run ") == 1
    kept = read_summary(build)
    assert kept is not None and kept.succeeded and kept.checks_passed == passed
    assert [(b.directory, b.demos, b.steps) for b in kept.built] == [("pango_sample", demos, steps)]


@pytest.mark.slow
def test_a_failed_run_says_so_and_names_the_failed_step(tmp_path: Path) -> None:
    empty = tmp_path / "empty_mirror"
    empty.mkdir()
    r = cli_materialize("sample", tmp_path, clean_env(GUI_ASSETS_MIRROR=str(empty)), source="pango")
    assert r.returncode != 0
    summary = r.stderr[r.stderr.index("gui_assets: run ") :].splitlines()
    assert summary[0].endswith(" FAILED, partition sample"), summary
    assert "  checks     0 passed, 0 failed" in summary
    assert "  failed steps: pango" in summary
