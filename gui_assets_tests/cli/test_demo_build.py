"""`gui-assets demo`: which partitions it builds, how it reports progress and stops, end to end."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gui_assets.cli import demo as demo_build
from gui_assets.cli.demo import Partition, SelectionError, parse_only
from gui_assets.sources.registry import SOURCES
from gui_assets_tests.conftest import clean_env


def test_every_registered_partition_is_listed_as_the_users_command(capsys):
    assert demo_build.main(["--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    expected = [
        f"dagster asset materialize -m gui_assets --select '{s.name}*' --partition {k}"
        for s in SOURCES
        for k in s.partition_keys
    ]
    assert lines == expected and len(lines) == sum(len(s.partition_keys) for s in SOURCES)


def test_only_picks_partitions_and_whole_sources_in_the_order_given():
    agentnet = next(s for s in SOURCES if s.name == "agentnet")
    chosen = parse_only("mind2web:train, agentnet,mind2web:train")
    assert chosen == [
        Partition("mind2web", "train"),
        *(Partition("agentnet", k) for k in agentnet.partition_keys),
    ]


@pytest.mark.parametrize(
    ("only", "says"),
    [
        ("nosuch", "no source 'nosuch'"),
        ("mind2web:nosuch", "mind2web has no partition 'nosuch'"),
        (",", "no partition"),
    ],
)
def test_a_selection_naming_nothing_is_refused_with_a_usage_status(only, says, capsys):
    with pytest.raises(SelectionError, match=re.escape(says)):
        parse_only(only)
    assert demo_build.main(["--only", only]) == 2
    assert says in capsys.readouterr().err


def test_progress_per_partition_then_stop_at_the_first_failure(tmp_path, monkeypatch, capsys):
    """The runs are replaced by one that logs and fails on the second partition: one progress
    line each, the failure's exit status, the end of its log and the command to rerun."""
    monkeypatch.setenv("GUI_ASSETS_OUT", str(tmp_path / "out"))
    ran: list[Partition] = []

    def fake_run(partition: Partition, log: Path) -> int:
        ran.append(partition)
        log.write_text(
            f"building {partition.source} {partition.key}\nthe last line of the log\n", encoding="utf-8"
        )
        return 3 if len(ran) == 2 else 0

    monkeypatch.setattr(demo_build, "run_one", fake_run)
    code = demo_build.main(["--only", "weblinx,pango"])
    out, err = capsys.readouterr()
    assert code == 3 and ran == [Partition("weblinx", "train"), Partition("weblinx", "valid")]
    lines = out.splitlines()
    assert re.fullmatch(r"\[1/3\] weblinx train \.\.\. \d+\.\d s", lines[0]), lines
    assert re.fullmatch(r"\[2/3\] weblinx valid \.\.\. failed after \d+\.\d s \(exit 3\)", lines[1]), lines
    assert "the last line of the log" in err
    assert "rerun: dagster asset materialize -m gui_assets --select 'weblinx*' --partition valid" in err
    assert str(tmp_path / "out" / "_work" / "demo_logs" / "weblinx_valid.log") in err


def test_the_end_says_where_the_output_is_and_how_to_check_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GUI_ASSETS_OUT", str(tmp_path / "out"))
    monkeypatch.setattr(demo_build, "run_one", lambda partition, log: 0)
    assert demo_build.main(["--only", "pango"]) == 0
    out = capsys.readouterr().out
    assert f"output: {tmp_path / 'out'}" in out
    assert f"look at it: gui-assets view {tmp_path / 'out'}" in out


def test_a_run_that_cannot_start_is_named(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GUI_ASSETS_OUT", str(tmp_path / "out"))

    def cannot_start(partition: Partition, log: Path) -> int:
        raise FileNotFoundError(2, "No such file or directory", "python")

    monkeypatch.setattr(demo_build, "run_one", cannot_start)
    assert demo_build.main(["--only", "pango"]) == demo_build.EXIT_NOT_STARTED
    assert "not started" in capsys.readouterr().out


@pytest.mark.slow
def test_the_demo_command_builds_a_partition_as_the_user_would(tmp_path):
    """`gui-assets demo --only pango:sample` in a fresh directory, nothing set: the run's own
    command in a subprocess, its shard and dataset_info.json under ./build."""
    gui_assets = Path(sys.executable).parent / "gui-assets"
    r = subprocess.run(
        [str(gui_assets), "demo", "--only", "pango:sample"],
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, (r.stdout, r.stderr[-3000:])
    assert re.match(r"\[1/1\] pango sample \.\.\. \d+\.\d s\n", r.stdout), r.stdout
    build = tmp_path / "build"
    assert (build / "pango_sample" / "dataset_info.json").is_file()
    assert (build / "pango_sample" / "pango_sample_0000.hdf5").is_file()
    assert (build / "_work" / "demo_logs" / "pango_sample.log").is_file()
    assert f"look at it: gui-assets view {build}" in r.stdout
    # the whole build summed up from the runs' own summaries
    stats = json.loads((build / "pango_sample" / "dataset_info.json").read_text(encoding="utf-8"))["stats"]
    assert f"  pango_sample: {stats['episodes_out']} demos, {stats['steps']} steps" in r.stdout
    assert re.search(r"^checks: [1-9]\d* passed, 0 failed$", r.stdout, re.MULTILINE), r.stdout
    assert f"published to {build / 'hub'}: " in r.stdout


def test_each_run_starts_with_the_build_process_allocator_settings(tmp_path, monkeypatch):
    """A user's own value stands; the others are added (gui_assets.core.memory)."""
    from gui_assets.core.memory import BUILD_PROCESS_ENV

    started: list[dict[str, str]] = []

    def fake_run(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        started.append(dict(kwargs["env"]))  # type: ignore[call-overload]
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(demo_build.subprocess, "run", fake_run)
    for name in BUILD_PROCESS_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MALLOC_ARENA_MAX", "2")
    assert demo_build.run_one(Partition("pango", "sample"), tmp_path / "log") == 0
    (env,) = started
    assert env["MALLOC_ARENA_MAX"] == "2"
    assert env["ARROW_DEFAULT_MEMORY_POOL"] == BUILD_PROCESS_ENV["ARROW_DEFAULT_MEMORY_POOL"]
