"""A fuzz case's own process: `Worker` runs `fuzz_cases.run_case` cases one at a time in a child
process under a memory limit, for the CI suite and for `fuzz_explore`.

- Peak RSS per case: the child resets its RSS high-water mark (writing 5 to
  /proc/self/clear_refs) before each case and reads VmHWM after it, so the figure is the whole
  child process at its worst during that case (its resident baseline included, ~0.3 GB).
- Limits: the child's address space (RLIMIT_AS, set with setrlimit after a warm-up build) may
  grow at most `memory_mb` past what it had warmed up, so an allocation that large fails at once
  with MemoryError; and the parent polls the child's RSS every 20 ms and SIGKILLs it past
  `memory_mb`. A case whose peak passes `memory_mb`, any exception (MemoryError included), a
  killed or crashed child and a case running past `case_timeout` are a FAULT with the case's
  label and replay key, never a hang; the next case gets a fresh child.

The child speaks JSON lines: the parent writes {"case": key}; the child answers {"event": "label"}
once the damage is done (so a child killed mid-build still names its case), then {"event":
"done", outcome, label, peak, seconds, fault}.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
FAULT = "FAULT"
POLL_SECONDS = 0.02
STARTUP_SECONDS = 600.0
MB = 1 << 20


@dataclass(slots=True)
class CaseReport:
    """What one case came to, as the parent saw it."""

    case: str  # the replay key
    outcome: str  # fuzz_cases.OUTCOMES or FAULT
    label: str = ""  # the damaged file and what was done to it ("" if the damage itself failed)
    peak_rss_mb: float = 0.0  # the worker's VmHWM over the case (or the most the parent saw)
    seconds: float = 0.0
    fault: str = ""  # the traceback, or why the worker was killed or died

    def describe(self) -> str:
        lines = [f"case {self.case} ({self.label or 'no label'}): {self.outcome}, {self.peak_rss_mb:.0f} MB"]
        if self.fault:
            lines += [
                self.fault.rstrip(),
                f"replay: python -m gui_assets_tests.fuzz_explore --replay {self.case}",
            ]
        return "\n".join(lines)


def _status_kb(field_name: str, pid: int | str = "self") -> int:
    """A `Vm*` figure of /proc/<pid>/status in kB; 0 when the process is gone."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    found = re.search(rf"^{field_name}:\s+(\d+) kB", text, re.MULTILINE)
    return int(found.group(1)) if found else 0


def _reset_peak_rss() -> None:
    """Reset this process's VmHWM to its current RSS (Linux: clear_refs 5)."""
    Path("/proc/self/clear_refs").write_text("5")


# --- the worker process ------------------------------------------------------------------


def worker_main(argv: list[str] | None = None) -> int:
    """Run cases read from stdin (one JSON line each), answer on the original stdout (fd 1 is
    pointed at stderr, so nothing the build prints can corrupt the protocol)."""
    p = argparse.ArgumentParser(prog="python -m gui_assets_tests.fuzz_worker")
    for name in ("--mirror", "--baselines", "--workdir"):
        p.add_argument(name, required=True)
    p.add_argument("--memory-mb", type=int, required=True)
    args = p.parse_args(argv)
    proto = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it lets this case finish

    def send(**msg: Any) -> None:
        proto.write(json.dumps(msg) + "\n")
        proto.flush()

    from gui_assets.pipeline.chain import RawSettings, build_directory
    from gui_assets_tests import fuzz_cases as fuzz

    mirror, workdir = Path(args.mirror), Path(args.workdir)
    base = json.loads(Path(args.baselines).read_text(encoding="utf-8"))
    # Warm up (thread pools, allocator arenas, lazy imports) so the address-space limit measures
    # what a case adds, not what any first build maps.
    warm = Path(tempfile.mkdtemp(prefix="warm-", dir=workdir))
    spec, key = fuzz.TARGETS[0]
    build_directory(spec, key, warm, RawSettings("mirror", mirror))
    shutil.rmtree(warm, ignore_errors=True)
    limit = _status_kb("VmSize") * 1024 + args.memory_mb * MB
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
    send(event="ready", address_space_mb=limit // MB, rss_mb=_status_kb("VmRSS") / 1024)
    for line in sys.stdin:
        case = fuzz.FuzzCase.parse(json.loads(line)["case"])
        work = Path(tempfile.mkdtemp(prefix="case-", dir=workdir))
        label, fault, outcome = "", "", FAULT
        _reset_peak_rss()
        start = time.perf_counter()
        try:
            result = fuzz.run_case(
                case, mirror, work, base[case.source], lambda text: send(event="label", label=text)
            )
            label, outcome = result.label, result.outcome
        except Exception:  # any exception is the finding: reported whole, with the case to replay it
            fault = traceback.format_exc()
        seconds = time.perf_counter() - start
        peak = _status_kb("VmHWM") / 1024
        shutil.rmtree(work, ignore_errors=True)
        if not fault and peak > args.memory_mb:
            outcome, fault = FAULT, f"peak RSS {peak:.0f} MB is over the {args.memory_mb} MB limit"
        if fault:
            outcome = FAULT
        send(event="done", outcome=outcome, label=label, peak=peak, seconds=seconds, fault=fault)
        if fault:
            return 1  # a fresh process for the next case: a fault may leave this one damaged
    return 0


# --- the parent's side -------------------------------------------------------------------


class Worker:
    """One worker process running fuzz cases one at a time under `memory_mb`. `run()` never
    hangs: a worker that dies, passes the limit or the case timeout is killed and reported as a
    FAULT, and the next `run()` starts a fresh one."""

    def __init__(
        self,
        mirror: Path,
        baselines: Path,
        workdir: Path,
        memory_mb: int,
        case_timeout: float = 600.0,
        name: str = "worker",
    ) -> None:
        self.mirror, self.baselines, self.workdir = mirror, baselines, workdir
        self.memory_mb, self.case_timeout, self.name = memory_mb, case_timeout, name
        self.log = workdir / f"{name}.log"
        self.ready: dict[str, Any] = {}
        self.started = 0
        self.seen_mb = 0.0  # the most RSS the parent saw during the current case
        self._proc: subprocess.Popen[bytes] | None = None
        self._buffer = b""

    def _start(self) -> subprocess.Popen[bytes]:
        cmd = [sys.executable, "-m", "gui_assets_tests.fuzz_worker"]
        cmd += ["--mirror", str(self.mirror), "--baselines", str(self.baselines)]
        cmd += ["--workdir", str(self.workdir), "--memory-mb", str(self.memory_mb)]
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])),
        }
        with self.log.open("ab") as log:
            proc = subprocess.Popen(
                cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, cwd=REPO_ROOT, env=env
            )
        self._proc, self._buffer = proc, b""
        self.started += 1
        ready, why = self._next_message(proc, STARTUP_SECONDS)
        if ready is None or ready.get("event") != "ready":
            self._kill()
            raise RuntimeError(f"fuzz worker did not start ({why}):\n{self._log_tail()}")
        self.ready = ready
        return proc

    def _next_message(
        self, proc: subprocess.Popen[bytes], timeout: float
    ) -> tuple[dict[str, Any] | None, str]:
        """The next protocol line, or (None, why not) when the worker died, passed the memory
        limit or `timeout` seconds (then it is killed). Tracks the most RSS seen in `seen_mb`."""
        assert proc.stdout is not None
        deadline = time.monotonic() + timeout
        fd = proc.stdout.fileno()
        while b"\n" not in self._buffer:
            readable, _, _ = select.select([fd], [], [], POLL_SECONDS)
            if readable:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    code = proc.wait()
                    died = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
                    return None, f"the worker died ({died}):\n{self._log_tail()}"
                self._buffer += chunk
                continue
            rss = _status_kb("VmRSS", proc.pid) / 1024
            self.seen_mb = max(self.seen_mb, rss)
            if rss > self.memory_mb:
                self._kill()
                return None, f"the worker was killed: RSS {rss:.0f} MB is over the {self.memory_mb} MB limit"
            if time.monotonic() > deadline:
                self._kill()
                return None, f"the worker was killed: still running after {timeout:.0f} s"
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line), ""

    def run(self, case: object) -> CaseReport:
        key = str(case)
        proc = self._proc if self._proc is not None and self._proc.poll() is None else self._start()
        assert proc.stdin is not None
        started, self.seen_mb = time.monotonic(), 0.0
        label = ""
        try:
            proc.stdin.write((json.dumps({"case": key}) + "\n").encode())
            proc.stdin.flush()
        except BrokenPipeError:
            pass  # it died since: _next_message says how
        while True:
            msg, why = self._next_message(proc, started + self.case_timeout - time.monotonic())
            if msg is None:
                self._proc = None
                return CaseReport(key, FAULT, label, self.seen_mb, time.monotonic() - started, why)
            if msg["event"] == "label":
                label = msg["label"]
                continue
            report = CaseReport(
                key, msg["outcome"], msg["label"] or label, msg["peak"], msg["seconds"], msg["fault"]
            )
            if report.outcome == FAULT:
                self.close()  # the worker exits after a fault; the next case gets a fresh one
            return report

    def _kill(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            os.kill(self._proc.pid, signal.SIGKILL)
            self._proc.wait()
        self._proc = None

    def _log_tail(self, chars: int = 4000) -> str:
        try:
            with self.log.open("rb") as f:
                f.seek(max(0, f.seek(0, os.SEEK_END) - chars))
                return f.read().decode("utf-8", errors="replace")
        except OSError:
            return ""

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(BrokenPipeError):
            assert proc.stdin is not None
            proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


if __name__ == "__main__":
    sys.exit(worker_main())
