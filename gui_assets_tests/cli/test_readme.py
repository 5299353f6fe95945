"""The README as a newcomer uses it: the test command is CI's whole script, its tables stay
readable, and its picture's caption counts the assets per group as the definitions make them."""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")
NUMBERS = {4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine"}


def code_block_after(heading: str) -> list[str]:
    """The lines of the first fenced block after the line starting with `heading`."""
    rest = README[README.index(heading) :]
    block = re.search(r"```[a-z]*\n(.*?)```", rest, re.DOTALL)
    assert block, f"no code block after {heading!r}"
    return block.group(1).strip().splitlines()


def test_the_readme_test_command_is_all_that_ci_runs():
    assert code_block_after("Run the tests") == ["scripts/test"]
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    commands = [line for line in ci if line.strip() and not line.startswith(("#", "set ", "cd "))]
    assert commands == ["scripts/test"]


def test_the_test_script_is_valid_bash_and_hands_its_arguments_and_status_to_pytest():
    script = REPO / "scripts" / "test"
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    lines = script.read_text(encoding="utf-8").splitlines()
    # exec: pytest's status is the script's; eatmydata execs its command in turn
    assert lines[-1] == 'exec eatmydata pytest "$@"'
    assert "set -euo pipefail" in lines  # a failed install or lint stops it before pytest


def test_no_table_cell_is_over_300_characters():
    long = [
        (n, cell.strip()[:60])
        for n, line in enumerate(README.splitlines(), 1)
        if line.startswith("|")
        for cell in line.split("|")
        if len(cell) > 300
    ]
    assert not long


def test_the_graph_caption_counts_the_assets_per_group():
    from gui_assets.definitions import defs

    graph = defs.resolve_asset_graph()
    groups = Counter(graph.get(key).group_name for key in graph.get_all_asset_keys())
    publish = groups.pop("publish")
    per_source = set(groups.values())
    assert len(per_source) == 1, groups  # one factory: every source group the same size
    (n,) = per_source
    text = " ".join(README.split())
    # per source, not a count of sources: adding a source folder must not make this line stale
    assert f"one group of {NUMBERS[n]} assets per source" in text
    assert f"Each source group holds {NUMBERS[n]} assets" in text
    assert f"the publish group's {NUMBERS[publish]}" in text
