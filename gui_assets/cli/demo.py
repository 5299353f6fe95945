"""`gui-assets demo`: build every registered partition of every source, one Dagster run each.

Each partition is the user's own command, `dagster asset materialize -m gui_assets --select
'<source>*' --partition <key>`, run as a subprocess of the same Python from the current
directory, so DAGSTER_HOME (or the directory's dagster.yaml) and every GUI_ASSETS_* variable
apply exactly as they do when it is typed. One line of progress per partition; each run's output
goes to a log file under the build's `_work/demo_logs/`. The first failure stops the command with
that run's exit status, the end of its log and the command to rerun it.

    gui-assets demo                              every source, every partition
    gui-assets demo --only mind2web:train,agentnet
    gui-assets demo --list                       print the commands instead of running them
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gui_assets.core.layout import WORK_DIR
from gui_assets.core.memory import build_process_env
from gui_assets.pipeline.run_summary import SUMMARY_FILE, RunSummary, read_summary
from gui_assets.sources.registry import SOURCES

LOG_DIR = "demo_logs"  # under <out>/_work: pipeline state, never published
LOG_TAIL_LINES = 40  # of a failed run's log, printed with the failure
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_NOT_STARTED = 127


@dataclass(frozen=True, slots=True)
class Partition:
    source: str
    key: str

    def command(self) -> list[str]:
        """The command as a user types it."""
        return ["dagster", *self.arguments()]

    def arguments(self) -> list[str]:
        return [
            "asset",
            "materialize",
            "-m",
            "gui_assets",
            "--select",
            f"{self.source}*",
            "--partition",
            self.key,
        ]


class SelectionError(ValueError):
    """An --only entry that names no registered source or partition."""


def every_partition() -> list[Partition]:
    return [Partition(spec.name, key) for spec in SOURCES for key in spec.partition_keys]


def parse_only(text: str) -> list[Partition]:
    """`mind2web:train,agentnet` -> that partition and every agentnet partition, in that order,
    each once."""
    keys = {spec.name: spec.partition_keys for spec in SOURCES}
    chosen: list[Partition] = []
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        source, _, key = entry.partition(":")
        if source not in keys:
            raise SelectionError(f"no source {source!r} (sources: {', '.join(keys)})")
        if key and key not in keys[source]:
            raise SelectionError(f"{source} has no partition {key!r} (partitions: {', '.join(keys[source])})")
        for k in [key] if key else keys[source]:
            if Partition(source, k) not in chosen:
                chosen.append(Partition(source, k))
    if not chosen:
        raise SelectionError("--only names no partition")
    return chosen


def out_dir() -> Path:
    """Where the runs write: GUI_ASSETS_OUT, else ./build (the paths resource's own default)."""
    return Path(os.environ.get("GUI_ASSETS_OUT") or "build").resolve()


def _seconds(s: float) -> str:
    return f"{s:.1f} s" if s < 60 else f"{int(s // 60)} min {s % 60:.0f} s"


def _tail(log: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def run_one(partition: Partition, log: Path) -> int:
    """One partition's run, its output in `log`; its exit status."""
    cmd = [sys.executable, "-m", "dagster", *partition.arguments()]  # the Dagster of this Python
    env = build_process_env(os.environ)  # the allocator settings a build process starts with
    with log.open("w", encoding="utf-8") as fh:
        return subprocess.run(
            cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env
        ).returncode


def whole_build_lines(summaries: Sequence[RunSummary]) -> list[str]:
    """The demo build in a few lines: each directory built, every check, what went where."""
    lines = [f"  {b.directory}: {b.demos} demos, {b.steps} steps" for s in summaries for b in s.built]
    failed = [f"{name} ({s.partition})" for s in summaries for name in s.checks_failed]
    lines.append(f"checks: {sum(s.checks_passed for s in summaries)} passed, {len(failed)} failed")
    lines += [f"  failed: {name}" for name in failed]
    sent: dict[str, list[int]] = {}
    for s in summaries:
        for p in s.published:
            sent.setdefault(p.target, [0, 0])
            sent[p.target][0] += p.sent
            sent[p.target][1] += p.unchanged
    lines += [f"published to {t}: {n} files sent, {same} unchanged" for t, (n, same) in sent.items()]
    return lines


def build(partitions: Sequence[Partition]) -> int:
    out = out_dir()
    logs = out / WORK_DIR / LOG_DIR
    try:
        logs.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        print(f"gui-assets demo: cannot write the run logs under {logs}: {e}", file=sys.stderr)
        return 1
    started = time.monotonic()
    summaries: list[RunSummary] = []
    for i, p in enumerate(partitions, 1):
        log = logs / f"{p.source}_{p.key}.log"
        print(f"[{i}/{len(partitions)}] {p.source} {p.key} ...", end="", flush=True)
        t = time.monotonic()
        (out / WORK_DIR / SUMMARY_FILE).unlink(missing_ok=True)  # so a run that keeps none adds none
        try:
            code = run_one(p, log)
        except KeyboardInterrupt:
            print(f" interrupted\nrerun: {shlex.join(p.command())}", flush=True)
            return EXIT_INTERRUPTED
        except OSError as e:
            print(f" not started: {e}", flush=True)
            return EXIT_NOT_STARTED
        if code != 0:
            print(f" failed after {_seconds(time.monotonic() - t)} (exit {code})", flush=True)
            print(_tail(log), file=sys.stderr)
            print(f"\nlog:   {log}\nrerun: {shlex.join(p.command())}", file=sys.stderr)
            return code
        print(f" {_seconds(time.monotonic() - t)}", flush=True)
        summary = read_summary(out)  # the run's own, kept by its closing step (after the old one went)
        if summary is not None:
            summaries.append(summary)
    print(f"built {len(partitions)} partitions in {_seconds(time.monotonic() - started)}")
    print("\n".join(whole_build_lines(summaries)))
    print(f"output: {out}  (run logs: {logs})")
    print(f"look at it: gui-assets view {shlex.quote(str(out))}")
    return 0


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="gui-assets demo",
        description="Build every registered partition of every source (the demo mirror unless "
        "GUI_ASSETS_MIRROR or GUI_ASSETS_SOURCE says otherwise), one `dagster asset materialize` "
        "run each, from the current directory.",
    )
    ap.add_argument(
        "--only",
        metavar="SOURCE[:KEY],...",
        help="build just these: a source's every partition, or one partition (mind2web:train,agentnet)",
    )
    ap.add_argument("--list", action="store_true", help="print the commands instead of running them")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        partitions = parse_only(args.only) if args.only is not None else every_partition()
    except SelectionError as e:
        print(f"gui-assets demo: {e}", file=sys.stderr)
        return EXIT_USAGE
    if args.list:
        for p in partitions:
            print(shlex.join(p.command()))
        return 0
    return build(partitions)


if __name__ == "__main__":
    raise SystemExit(main())
