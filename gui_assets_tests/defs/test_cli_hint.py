"""`dagster asset materialize` without --partition: the partitions are named, nothing else is touched."""

from __future__ import annotations

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
