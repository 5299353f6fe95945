"""`python -m gui_assets.validate DIR [DIR...]`: judge a build or a download against the output format.

DIR is a whole output folder (its `<directory>/`s, README.md, preview/ and cua_lite/; hub/,
lerobot/ and _work/ are skipped with a note), one `<directory>/`, or one shard file. Every rule
of docs/format.md is judged by its id (`gui_assets.validate.rules.RULES`); each broken one is
printed with the file, demo and step where it broke.

Exit status: 0 when every rule holds, 1 when any is broken, 2 for a usage error (a path that is
not there, or holds nothing to judge).

This is an independent judge: it holds its own statement of the format (`format.py`) and reads
files with h5py, numpy and json; it imports nothing of the package outside this folder,
least of all the pipeline that writes them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from gui_assets.validate.directory import check_directory, check_single_shard, is_directory
from gui_assets.validate.format import CARD, CUA_LITE_DIR, PREVIEW_DIR, SKIPPED_FOLDERS
from gui_assets.validate.output import check_card, check_cua_lite, check_preview
from gui_assets.validate.report import Target, json_report, text_report
from gui_assets.validate.shards import DEFAULT_PIXEL_SAMPLES, Sampling

__all__ = ["main", "validate"]


class UsageError(Exception):
    """A path that cannot be judged at all (exit status 2)."""


def _output_folder(out: Path, sampling: Sampling) -> list[Target]:
    targets: list[Target] = []
    extras = Target(out.name or str(out), str(out), "output")
    for child in sorted(out.iterdir()):
        if child.name.startswith(".") or not child.is_dir() or child.name in (PREVIEW_DIR, CUA_LITE_DIR):
            continue
        if child.name in SKIPPED_FOLDERS:
            extras.notes.append(f"skipped {child.name}/: {SKIPPED_FOLDERS[child.name]}")
        elif is_directory(child):
            targets.append(check_directory(child, sampling))
        else:
            extras.notes.append(f"skipped {child.name}/: no shards and no dataset_info.json")
    if not targets:
        raise UsageError(f"{out}: no <directory>/ with shards or a dataset_info.json in it")
    check_card(extras, out)
    check_preview(extras, out)
    check_cua_lite(extras, out, sampling.full)
    if extras.checked or extras.notes or (out / CARD).exists():
        targets.append(extras)
    return targets


def validate(paths: Sequence[Path], sampling: Sampling | None = None) -> list[Target]:
    """Judge each path (output folder, directory or shard); raises UsageError for one that is neither."""
    sampling = sampling or Sampling()
    targets: list[Target] = []
    for path in paths:
        if not path.exists():
            raise UsageError(f"{path}: no such file or folder")
        if path.is_file():
            if path.suffix != ".hdf5":
                raise UsageError(f"{path}: neither a folder nor an .hdf5 shard")
            targets.append(check_single_shard(path, sampling))
        elif is_directory(path):
            targets.append(check_directory(path, sampling))
        else:
            targets.extend(_output_folder(path, sampling))
    return targets


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m gui_assets.validate",
        description="Judge a build or a download against the gui_assets output format (docs/format.md).",
    )
    parser.add_argument(
        "paths", nargs="+", type=Path, metavar="DIR", help="an output folder, a directory or a shard"
    )
    parser.add_argument("--json", action="store_true", help="print the findings as JSON")
    parser.add_argument("--full", action="store_true", help="compare eye-in-hand pixels at every step")
    parser.add_argument(
        "--samples",
        type=int,
        default=DEFAULT_PIXEL_SAMPLES,
        metavar="N",
        help="steps per shard whose eye-in-hand pixels are compared (default %(default)s)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as e:  # argparse has printed its usage or help
        return int(e.code or 0)
    if args.samples < 1:
        parser.print_usage(sys.stderr)
        print("python -m gui_assets.validate: --samples must be at least 1", file=sys.stderr)
        return 2
    try:
        targets = validate(args.paths, Sampling(per_shard=args.samples, full=args.full))
    except UsageError as e:
        print(f"python -m gui_assets.validate: {e}", file=sys.stderr)
        return 2
    print(json_report(targets) if args.json else text_report(targets))
    return 1 if any(t.total for t in targets) else 0
