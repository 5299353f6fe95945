"""A clear answer for `dagster asset materialize` run over a source's assets without --partition.

Dagster's own answer is a traceback ending in "Asset has partitions, but no '--partition'
option was provided", which names no partition. The CLI loads this code location before it
looks at partitions, so the location reads the command line it was loaded for and, when a
selection reaches a source's partitioned assets with no --partition, names that source's
partitions and exits with status 2. Any other command, or this one with a partition, passes
untouched.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from gui_assets.source_spec import SourceSpec

PARTITION_FLAGS = ("--partition", "--partition-range")
SELECT_FLAGS = ("--select",)
UNPARTITIONED_SUFFIXES = ("_upstream",)  # the observable source assets
EXIT_USAGE = 2


def _is_asset_materialize(argv: Sequence[str]) -> bool:
    program = Path(argv[0]).name if argv else ""
    runs_dagster = program == "dagster" or (program == "__main__.py" and "dagster" in argv[0])
    return runs_dagster and list(argv[1:3]) == ["asset", "materialize"]


def _option(argv: Sequence[str], names: tuple[str, ...]) -> str | None:
    for i, arg in enumerate(argv):
        for name in names:
            if arg == name and i + 1 < len(argv):
                return argv[i + 1]
            if arg.startswith(name + "="):
                return arg.split("=", 1)[1]
    return None


def _has_flag(argv: Sequence[str], names: tuple[str, ...]) -> bool:
    return any(arg == n or arg.startswith(n + "=") for arg in argv for n in names)


def selected_sources(selection: str, sources: Sequence[SourceSpec]) -> list[SourceSpec]:
    """Sources whose partitioned assets a selection names (legacy `key*`/`+key` tokens, `key:`
    or `group:` clauses); a token naming nothing of ours is left for Dagster to judge."""
    chosen = []
    for spec in sources:
        for token in selection.split(","):
            name = token.strip().strip("*+").removeprefix("key:").removeprefix("group:").strip("*")
            if not name or name.endswith(UNPARTITIONED_SUFFIXES):
                continue
            if name == spec.name or name.startswith(spec.name + "_"):
                chosen.append(spec)
                break
    return chosen


def missing_partition_message(argv: Sequence[str], sources: Sequence[SourceSpec]) -> str | None:
    """What to tell the user, or None when the command is fine as it is."""
    if not _is_asset_materialize(argv) or _has_flag(argv, PARTITION_FLAGS):
        return None
    selection = _option(argv, SELECT_FLAGS)
    if selection is None:
        return None
    chosen = selected_sources(selection, sources)
    if not chosen:
        return None
    lines = [f"gui_assets: --select '{selection}' reaches partitioned assets; name one with --partition."]
    for spec in chosen:
        keys = list(spec.partition_keys)
        lines += [
            f"  {spec.name} partitions: {', '.join(keys)}",
            f"    one:   dagster asset materialize --select '{selection}' --partition {keys[0]}",
            f"    every: for p in {' '.join(keys)}; do "
            f"dagster asset materialize --select '{selection}' --partition $p; done",
        ]
    return "\n".join(lines)


def refuse_missing_partition(sources: Sequence[SourceSpec], argv: Sequence[str] | None = None) -> None:
    message = missing_partition_message(sys.argv if argv is None else argv, sources)
    if message is not None:
        print(message, file=sys.stderr)
        raise SystemExit(EXIT_USAGE)
