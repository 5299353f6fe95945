"""`gui-assets`: the commands a user runs besides Dagster's.

    gui-assets demo [...]       build every registered partition of the demo (or a chosen few)
    gui-assets validate DIR...  judge a build or a download against the output format
    gui-assets view PATH...     a local web page over shards, directories or a whole build
    gui-assets docs             rewrite the docs generated from the sources' declarations
    gui-assets backfill [...]   every partition of every source, through a running webserver

Each subcommand lives in its own module and is imported only when it runs, so `gui-assets
validate` and `gui-assets view` never load Dagster or the pipeline.

Beside this entry point: `demo` (the demo build, through Dagster's own CLI), `docs` (the sources'
pages and the README's tables, generated from the registry) and `backfill` (every partition
through a running webserver). Modules here may import every layer but the Dagster shell.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

# subcommand -> (module with `main(argv) -> int`, one line of help)
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("gui_assets.cli.demo", "build the demo dataset (every source, every partition)"),
    "validate": ("gui_assets.validate", "check a build or a download against the output format"),
    "view": ("gui_assets.viewer", "serve a local page to look at demonstrations in shards"),
    "docs": ("gui_assets.cli.docs", "rewrite the docs generated from the sources' declarations"),
    "backfill": ("gui_assets.cli.backfill", "backfill every partition through a running webserver"),
}


def usage() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = ["usage: gui-assets COMMAND [ARGS...]", "", "commands:"]
    lines += [f"  {name:<{width}}  {help_}" for name, (_, help_) in COMMANDS.items()]
    lines += ["", "`gui-assets COMMAND --help` describes a command's arguments."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(usage())
        return 0 if args else 2
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        print(f"gui-assets: unknown command {name!r}\n\n{usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[name][0])
    return int(module.main(rest) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
