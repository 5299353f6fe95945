"""The shard-integrity promise: shards open, are numbered contiguously, respect the cap, and
match what dataset_info.json says of them (counts, sizes, hashes). The rules are the validator's
(gui_assets.validate.directory.check_integrity); this module only makes its findings a Verdict."""

from __future__ import annotations

from pathlib import Path

from gui_assets.checks.verdict import Verdict, judged
from gui_assets.validate.directory import check_integrity


def shard_integrity(directory: Path) -> Verdict:
    """ERROR when a shard will not open, numbering has a gap, a shard passes the cap by more
    than its last episode, or dataset_info.json's counts, sizes or hashes differ from the files."""
    target = check_integrity(directory)
    shards = target.figures["shards"]
    figures = {"shards": shards, "demos": target.figures["demos"], "steps": target.figures["steps"]}
    return judged(target, figures, f"{shards} shards match dataset_info.json", "{} integrity problems")
