"""Fuzzing at depth: fresh random fuzz cases for every source, in parallel worker processes under a
memory limit, with a report.

    python -m gui_assets_tests.fuzz_explore --cases-per-source 1667 --jobs 1 --memory-mb 1536 \\
        --report fuzz-report.json [--sources mind2web,pango] [--seed S] [--mirror DIR]
    python -m gui_assets_tests.fuzz_explore --replay mind2web:4182:nan:big_jpeg:3141592653

Each case is `fuzz_cases.run_case`, the body the CI suite runs (the same damage vocabulary, the same
rules), drawn from a seeded generator (`--seed`, random unless given; every case gets its own
seed) and run by one of `--jobs` worker processes (`fuzz_worker.Worker`): each case's peak RSS is
measured in its worker (clear_refs, then VmHWM), and a case passing `--memory-mb` (RSS polled and
killed, address space capped by setrlimit), raising, crashing or hanging is a FAULT with its label
and replay key; the worker is then replaced.

Outcomes: built whole / partition failed by name / records dropped and counted / FAULT. The
summary table (cases, outcomes, faults and peak RSS per source, the worst case, wall time and
rate) is printed at the end; the JSON report (`--report`) is rewritten every progress tick, so a
long run can be watched. The exit status is 1 when any case faulted.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gui_assets_tests.fuzz_worker import FAULT, CaseReport, Worker, worker_main

PROGRESS_SECONDS = 60.0  # how often the report is rewritten and a progress line printed

# --- the explorer ------------------------------------------------------------------------


@dataclass
class Tally:
    """Every report so far, by source; what the table and the JSON report are made from."""

    sources: list[str]
    outcomes: dict[str, Counter[str]] = field(default_factory=dict)
    peaks: dict[str, list[float]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    faults: list[CaseReport] = field(default_factory=list)
    worst: CaseReport | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, report: CaseReport) -> None:
        source = report.case.split(":", 1)[0]
        with self.lock:
            self.outcomes.setdefault(source, Counter())[report.outcome] += 1
            self.peaks.setdefault(source, []).append(report.peak_rss_mb)
            self.seconds[source] = self.seconds.get(source, 0.0) + report.seconds
            if report.outcome == FAULT:
                self.faults.append(report)
            if self.worst is None or report.peak_rss_mb > self.worst.peak_rss_mb:
                self.worst = report

    def total(self) -> int:
        return sum(sum(c.values()) for c in self.outcomes.values())

    def per_source(self) -> dict[str, dict[str, Any]]:
        """Figures by source, and under "all" for every case together."""
        out = {
            source: _figures(
                self.peaks.get(source, []), self.seconds.get(source, 0.0), self.outcomes.get(source)
            )
            for source in self.sources
        }
        every: Counter[str] = sum(self.outcomes.values(), Counter())
        out["all"] = _figures(
            [p for ps in self.peaks.values() for p in ps], sum(self.seconds.values()), every
        )
        return out


def _figures(peaks: list[float], seconds: float, outcomes: Counter[str] | None) -> dict[str, Any]:
    peaks, n = sorted(peaks), len(peaks)
    return {
        "cases": n,
        "outcomes": dict(sorted((outcomes or Counter()).items())),
        "peak_rss_mb_max": round(peaks[-1], 1) if peaks else None,
        "peak_rss_mb_median": round(statistics.median(peaks), 1) if peaks else None,
        "peak_rss_mb_p99": round(peaks[min(n - 1, int(n * 0.99))], 1) if peaks else None,
        "seconds_per_case": round(seconds / n, 3) if n else None,
    }


def _draw(sources: list[str], per_source: int, seed: int, open_faults: bool) -> Iterator[object]:
    """Fresh cases, round robin over the sources, from one seeded generator."""
    from gui_assets_tests.fuzz_cases import DRAWN_IMAGE_DAMAGE, FuzzCase
    from gui_assets_tests.fuzz_damage import IMAGE_DAMAGE

    rng = random.Random(seed)
    kinds = IMAGE_DAMAGE if open_faults else DRAWN_IMAGE_DAMAGE
    for _ in range(per_source):
        for source in sources:
            yield FuzzCase.draw(source, rng, kinds)


def explore_report(
    tally: Tally, seed: int, wall: float, finished: bool, settings: dict[str, Any]
) -> dict[str, Any]:
    """The JSON report: `settings` (how the run was made), then its figures."""
    with tally.lock:
        total = tally.total()
        return {
            **settings,
            "seed": seed,
            "finished": finished,
            "wall_seconds": round(wall, 1),
            "cases_run": total,
            "cases_per_second": round(total / wall, 3) if wall else None,
            "per_source": tally.per_source(),  # and "all"
            "worst_case": asdict(tally.worst) if tally.worst else None,
            "faults": [asdict(f) for f in tally.faults],
            "peak_rss_method": "per case: clear_refs 5 before, VmHWM after (the worker process)",
        }


def _settings(args: argparse.Namespace, workers: list[Worker]) -> dict[str, Any]:
    return {
        "command": "python -m gui_assets_tests.fuzz_explore " + " ".join(sys.argv[1:]),
        "jobs": args.jobs,
        "memory_mb": args.memory_mb,
        "open_faults_drawn": args.open_faults,
        "cases_per_source": args.cases_per_source,
        "workers_started": sum(w.started for w in workers),
        "worker_address_space_mb": [w.ready.get("address_space_mb") for w in workers],
    }


def _write_json(path: Path, doc: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


# The summary table's columns: (heading, width, the outcome counted or the per-source figure).
_COLUMNS = (
    ("cases", 6, "cases"),
    ("whole", 6, "built whole"),
    ("failed", 6, "partition failed by name"),
    ("dropped", 7, "records dropped and counted"),
    ("FAULT", 5, FAULT),
    ("peak MB", 8, "peak_rss_mb_max"),
    ("p99 MB", 7, "peak_rss_mb_p99"),
    ("s/case", 6, "seconds_per_case"),
)


def _row(name: str, figures: dict[str, Any]) -> str:
    cells = []
    for _, width, key in _COLUMNS:
        value = figures.get(key, figures.get("outcomes", {}).get(key, 0)) or 0
        cells.append(f"{value:>{width}.2f}" if isinstance(value, float) else f"{value:>{width}}")
    return f"{name:10} " + " ".join(cells)


def summary_table(doc: dict[str, Any]) -> str:
    head = f"{'source':10} " + " ".join(f"{h:>{w}}" for h, w, _ in _COLUMNS)
    rows = [head, "-" * len(head)]
    rows += [_row(source, figures) for source, figures in doc["per_source"].items() if source != "all"]
    worst = doc["worst_case"] or {}
    rows += [
        "-" * len(head),
        _row("all", doc["per_source"]["all"]),
        f"wall {doc['wall_seconds']:.0f} s, {doc['cases_per_second']} cases/s with {doc.get('jobs')} job(s), "
        f"seed {doc['seed']}, limit {doc.get('memory_mb')} MB",
        f"worst peak RSS {worst.get('peak_rss_mb', 0):.0f} MB: {worst.get('case')} ({worst.get('label')})",
    ]
    for f in doc["faults"]:
        rows += ["", CaseReport(**f).describe()]
    return "\n".join(rows)


def _prepare(args: argparse.Namespace, sources: set[str]) -> tuple[Path, Path, Path]:
    """(workdir, demo mirror, baselines JSON) for a run over `sources`."""
    from gui_assets.sources.demo_mirror import ensure_demo_mirror
    from gui_assets.sources.registry import SOURCES
    from gui_assets_tests.fuzz_cases import build_baselines

    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="fuzz-explore-")).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    demo = workdir / "demo-mirror"
    mirror = Path(args.mirror).resolve() if args.mirror else ensure_demo_mirror(demo, SOURCES)
    baselines = workdir / "baselines.json"
    built = build_baselines(mirror, workdir / "baseline", sources)
    baselines.write_text(json.dumps(built), encoding="utf-8")
    return workdir, mirror, baselines


def _run(workers: list[Worker], cases: Iterator[object], tally: Tally, tick: Callable[[], None]) -> bool:
    """Every case through the workers, one thread each; `tick()` every progress period. False
    when interrupted (SIGINT or SIGTERM: the cases in flight finish first)."""
    take, stop = threading.Lock(), threading.Event()

    def loop(worker: Worker) -> None:
        with worker:
            while not stop.is_set():
                with take:
                    case = next(cases, None)
                if case is None:
                    return
                tally.add(worker.run(case))

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    # Both stop a run gracefully, even started in the background (where SIGINT comes ignored).
    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, interrupt)
    threads = [threading.Thread(target=loop, args=(w,), daemon=True) for w in workers]
    for t in threads:
        t.start()
    try:
        while any(t.is_alive() for t in threads):
            for t in threads:
                t.join(timeout=PROGRESS_SECONDS / len(threads))
            tick()
    except KeyboardInterrupt:
        stop.set()
        print("fuzz_explore: interrupted; finishing the cases in flight", file=sys.stderr)
        for t in threads:
            t.join()
    return not stop.is_set()


def explore(args: argparse.Namespace) -> int:
    from gui_assets_tests.fuzz_cases import PARTITIONS

    sources = args.sources.split(",") if args.sources else list(PARTITIONS)
    unknown = sorted(set(sources) - set(PARTITIONS))
    if unknown:
        raise SystemExit(f"unknown sources {unknown}; known: {', '.join(PARTITIONS)}")
    seed = args.seed if args.seed is not None else secrets.randbits(32)
    workdir, mirror, baselines = _prepare(args, set(sources))
    report_path = Path(args.report) if args.report else workdir / "report.json"
    print(
        f"fuzz_explore: seed {seed}, {len(sources)} sources x {args.cases_per_source} cases, "
        f"{args.jobs} job(s), {args.memory_mb} MB, report {report_path}",
        file=sys.stderr,
    )
    tally = Tally(sources)
    workers = [
        Worker(mirror, baselines, workdir, args.memory_mb, args.case_timeout, f"worker-{i}")
        for i in range(args.jobs)
    ]
    start = time.monotonic()

    def tick() -> None:
        doc = explore_report(tally, seed, time.monotonic() - start, False, _settings(args, workers))
        _write_json(report_path, doc)
        worst = (doc["worst_case"] or {}).get("peak_rss_mb", 0)
        print(
            f"[{doc['wall_seconds'] / 60:.0f} min] {doc['cases_run']} cases, {doc['cases_per_second']}/s, "
            f"{len(doc['faults'])} faults, worst {worst:.0f} MB",
            file=sys.stderr,
            flush=True,
        )

    finished = _run(workers, _draw(sources, args.cases_per_source, seed, args.open_faults), tally, tick)
    doc = explore_report(tally, seed, time.monotonic() - start, finished, _settings(args, workers))
    _write_json(report_path, doc)
    print(summary_table(doc))
    print(f"report: {report_path}")
    if not args.keep:
        for p in (workdir / "baseline", *workdir.glob("case-*"), *workdir.glob("warm-*")):
            shutil.rmtree(p, ignore_errors=True)
    return 1 if doc["faults"] else 0


def replay(args: argparse.Namespace) -> int:
    from gui_assets_tests.fuzz_cases import FuzzCase

    case = FuzzCase.parse(args.replay)
    workdir, mirror, baselines = _prepare(args, {case.source})
    with Worker(mirror, baselines, workdir, args.memory_mb, args.case_timeout) as worker:
        report = worker.run(case)
    print(report.describe())
    return 1 if report.outcome == FAULT else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m gui_assets_tests.fuzz_explore", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--cases-per-source", type=int, default=100)
    p.add_argument("--jobs", type=int, default=1, help="worker processes (each runs one case at a time)")
    p.add_argument("--memory-mb", type=int, default=1536, help="the most RSS a case may reach")
    p.add_argument("--sources", help="comma-separated source names (default: all six)")
    p.add_argument("--seed", type=int, help="the generator's seed (default: random, printed)")
    p.add_argument("--report", help="the JSON report (default: <workdir>/report.json)")
    p.add_argument("--mirror", help="an existing demo mirror (default: generated in the workdir)")
    p.add_argument("--workdir", help="scratch space (default: a new temp folder)")
    p.add_argument("--case-timeout", type=float, default=600.0, help="seconds before a case is a FAULT")
    p.add_argument(
        "--open-faults", action="store_true", help="also draw the damage of known open faults (test_fuzz)"
    )
    p.add_argument("--keep", action="store_true", help="keep the workdir's builds")
    p.add_argument("--replay", metavar="CASE", help="run one case key (source:file_pick:value:image:seed)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--baselines", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:  # the child command of a run started before fuzz_worker existed
        paths = ["--mirror", args.mirror, "--baselines", args.baselines, "--workdir", args.workdir]
        return worker_main([*paths, "--memory-mb", str(args.memory_mb)])
    if args.replay:
        return replay(args)
    return explore(args)


if __name__ == "__main__":
    sys.exit(main())
