"""`dagster asset materialize` without --partition: the partitions are named, nothing else is touched."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gui_assets.defs.cli_hint import missing_partition_message, refuse_missing_partition
from gui_assets.sources import SOURCES

DAGSTER = "/venv/bin/dagster"


@pytest.mark.parametrize(
    ("selection", "named"),
    [
        ("mind2web*", ["mind2web"]),
        ("+agentnet_shards", ["agentnet"]),
        ("key:weblinx_*", ["weblinx"]),
        ("pango*,cuagym_episodes", ["pango", "cuagym"]),
    ],
)
def test_a_selection_of_partitioned_assets_without_a_partition_is_answered(selection, named):
    message = missing_partition_message([DAGSTER, "asset", "materialize", "--select", selection], SOURCES)
    assert message is not None
    for spec in SOURCES:
        assert (f"{spec.name} partitions: {', '.join(spec.partition_keys)}" in message) == (
            spec.name in named
        )


@pytest.mark.parametrize(
    "argv",
    [
        [DAGSTER, "asset", "materialize", "--select", "mind2web*", "--partition", "train"],
        [DAGSTER, "asset", "materialize", "--select=mind2web*", "--partition=train"],
        [DAGSTER, "asset", "materialize", "--select", "mind2web*", "--partition-range", "a...b"],
        [DAGSTER, "asset", "materialize", "--select", "preview"],  # unpartitioned
        [DAGSTER, "asset", "materialize", "--select", "mind2web_upstream"],  # observable, unpartitioned
        [DAGSTER, "asset", "list", "--select", "mind2web*"],
        [DAGSTER, "dev"],
        ["/venv/bin/pytest", "asset", "materialize", "--select", "mind2web*"],
    ],
)
def test_every_other_command_passes_untouched(argv):
    assert missing_partition_message(argv, SOURCES) is None
    refuse_missing_partition(SOURCES, argv)  # returns


def test_the_refusal_exits_with_a_usage_status(capsys):
    with pytest.raises(SystemExit) as e:
        refuse_missing_partition(SOURCES, [DAGSTER, "asset", "materialize", "--select=mind2web*"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "for p in train test_task test_website test_domain; do" in err


def test_dg_launch_without_a_partition_is_answered_in_its_own_words():
    argv = ["/venv/bin/dg", "launch", "--assets", "weblinx*"]
    message = missing_partition_message(argv, SOURCES)
    assert message is not None and "weblinx partitions: train, valid" in message
    assert "one:   dg launch --assets 'weblinx*' --partition train" in message
    assert missing_partition_message([*argv, "--partition", "valid"], SOURCES) is None


def test_the_suggested_command_is_the_one_typed_with_a_partition_added():
    """`-m gui_assets` and `python -m dagster` stay in what the user is told to run."""
    argv = ["/venv/lib/dagster/__main__.py", "asset", "materialize", "-m", "gui_assets", "--select", "pango*"]
    message = missing_partition_message(argv, SOURCES)
    assert message is not None
    assert "one:   dagster asset materialize -m gui_assets --select 'pango*' --partition sample" in message


def test_loading_a_module_of_the_package_never_reads_the_command_line():
    """The refusal runs when the definitions load, never on import: a process whose own argv
    would be refused imports the package, the core and this module untouched."""
    code = (
        "import sys; sys.argv = ['/venv/bin/dagster', 'asset', 'materialize', '--select', 'mind2web*'];"
        "import gui_assets, gui_assets.pipeline, gui_assets.defs.cli_hint; print('imported')"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert (r.returncode, r.stdout.strip()) == (0, "imported"), r.stderr[-2000:]
    r = subprocess.run(
        [sys.executable, "-c", code.replace("print('imported')", "gui_assets.defs")],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2 and "mind2web partitions:" in r.stderr, r.stderr[-2000:]
