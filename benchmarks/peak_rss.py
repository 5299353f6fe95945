"""Run a command and report its own peak RSS, not its parent's.

`os.wait4`'s ru_maxrss for a child started by a big process is not the child's alone: CPython
starts children with vfork, and Linux carries the high-water mark of the memory the child ran
in before exec (the parent's) into the child's account: a 400 MB build started from a 1.7 GB
pytest process reads as 1.7 GB. So the command runs under a small launcher, `python -c
LAUNCHER`, which starts it (vfork from a ~10 MB process), waits with wait4 and writes the
command's ru_maxrss in KB (and its ru_oublock, the 512-byte blocks it wrote to storage) to the
file named by its first argument.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO

LAUNCHER = """
import os, subprocess, sys
proc = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(proc.pid, 0)
with open(sys.argv[1], "w") as fh:
    fh.write(f"{usage.ru_maxrss} {usage.ru_oublock}")
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_measured(
    cmd: list[str], cwd: Path, env: dict[str, str], out: IO[bytes] | int | None, timeout: float | None = None
) -> tuple[int, float]:
    """(exit status, peak RSS in MB of `cmd` itself). On timeout the launcher and the command
    are killed (the launcher's process group) and TimeoutExpired is raised."""
    code, peak_mb, _ = run_measured_io(cmd, cwd, env, out, timeout)
    return code, peak_mb


def run_measured_io(
    cmd: list[str], cwd: Path, env: dict[str, str], out: IO[bytes] | int | None, timeout: float | None = None
) -> tuple[int, float, int]:
    """run_measured, plus the bytes `cmd` (and the children it waited for) wrote to storage."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "maxrss"
        launcher = subprocess.Popen(
            [sys.executable, "-c", LAUNCHER, str(report), *cmd],
            cwd=cwd,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            code = launcher.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(launcher.pid, 9)
            launcher.wait()
            raise
        fields = report.read_text().split() if report.is_file() else ["0", "0"]
    return code, int(fields[0]) / 1024, int(fields[1]) * 512
