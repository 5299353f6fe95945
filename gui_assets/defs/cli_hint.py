"""A clear answer for a build of a source's assets asked for without --partition.

For `dagster asset materialize --select S` and `dg launch --assets S`, Dagster's own answer is a
traceback ending in "Asset has partitions, but no '--partition' option was provided", which names
no partition. Both commands load this code location before they look at partitions, so, when the
definitions load (gui_assets.definitions, never on import of a module), the location reads the
command line of the process and, when a selection reaches a source's partitioned assets with no
--partition, names that source's partitions and exits with status 2. Any other command, or these
with a partition, passes untouched.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from gui_assets.source_spec import SourceSpec

PARTITION_FLAGS = ("--partition", "--partition-range")
UNPARTITIONED_SUFFIXES = ("_upstream",)  # the observable source assets
EXIT_USAGE = 2
# program -> (the subcommand's words, its selection flag)
BUILD_COMMANDS: dict[str, tuple[tuple[str, ...], str]] = {
    "dagster": (("asset", "materialize"), "--select"),
    "dg": (("launch",), "--assets"),
}


def _program(argv: Sequence[str]) -> str:
    """The command's name: `python -m dagster` runs as .../dagster/__main__.py."""
    if not argv:
        return ""
    path = Path(argv[0])
    return path.parent.name if path.name == "__main__.py" else path.name


def _build_command(argv: Sequence[str]) -> str | None:
    """The selection flag when argv is one of BUILD_COMMANDS, else None."""
    known = BUILD_COMMANDS.get(_program(argv))
    if known is None:
        return None
    words, select_flag = known
    return select_flag if tuple(argv[1 : 1 + len(words)]) == words else None


def _option(argv: Sequence[str], name: str) -> str | None:
    for i, arg in enumerate(argv):
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
    select_flag = _build_command(argv)
    if select_flag is None or _has_flag(argv, PARTITION_FLAGS):
        return None
    selection = _option(argv, select_flag)
    if selection is None:
        return None
    chosen = selected_sources(selection, sources)
    if not chosen:
        return None
    command = shlex.join([_program(argv), *argv[1:]])  # as typed, for the user to rerun
    head = f"gui_assets: {select_flag} '{selection}' reaches partitioned assets; name one with --partition."
    lines = [head]
    for spec in chosen:
        keys = list(spec.partition_keys)
        lines += [
            f"  {spec.name} partitions: {', '.join(keys)}",
            f"    one:   {command} --partition {keys[0]}",
            f"    every: for p in {' '.join(keys)}; do {command} --partition $p; done",
        ]
    return "\n".join(lines)


def refuse_missing_partition(sources: Sequence[SourceSpec], argv: Sequence[str] | None = None) -> None:
    """Exits with EXIT_USAGE, the partitions named on stderr, when `argv` (the process's own
    command line unless given) asks a source's partitioned assets for no partition."""
    message = missing_partition_message(sys.argv if argv is None else argv, sources)
    if message is not None:
        print(message, file=sys.stderr)
        raise SystemExit(EXIT_USAGE)
