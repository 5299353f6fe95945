"""A run's closing summary: what it built (directory, demos, steps), the checks it passed and
failed, what it wrote and published where. gui_assets.defs.run_summary makes one at the end of
every run and keeps it as `<out>/_work/run_summary.json`; `gui-assets demo` sums them."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gui_assets.core.atomic import atomic_write_text
from gui_assets.core.layout import WORK_DIR

SUMMARY_FILE = "run_summary.json"  # under <out>/_work: pipeline state, never published


@dataclass
class BuiltDirectory:
    directory: str
    path: str
    demos: int
    steps: int


@dataclass
class Published:
    asset: str
    target: str
    sent: int
    unchanged: int


@dataclass
class RunSummary:
    run_id: str
    succeeded: bool
    partition: str | None = None
    built: list[BuiltDirectory] = field(default_factory=list)
    wrote: dict[str, str] = field(default_factory=dict)  # asset -> path
    published: list[Published] = field(default_factory=list)
    checks_passed: int = 0
    checks_failed: list[str] = field(default_factory=list)  # "asset:check"
    failed_steps: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunSummary:
        return cls(
            **{
                **d,
                "built": [BuiltDirectory(**b) for b in d.get("built", [])],
                "published": [Published(**p) for p in d.get("published", [])],
            }
        )

    def lines(self) -> list[str]:
        verdict = "succeeded" if self.succeeded else "FAILED"
        part = f", partition {self.partition}" if self.partition else ""
        out = [f"gui_assets: run {self.run_id[:8]} {verdict}{part}"]
        for b in self.built:
            out.append(f"  built      {b.directory}: {b.demos} demos, {b.steps} steps in {b.path}")
        failed = len(self.checks_failed)
        out.append(f"  checks     {self.checks_passed} passed, {failed} failed")
        out += [f"    failed   {name}" for name in self.checks_failed]
        for asset, path in self.wrote.items():
            out.append(f"  wrote      {asset}: {path}")
        for p in self.published:
            out.append(f"  published  {p.asset}: {p.sent} files sent, {p.unchanged} unchanged, to {p.target}")
        if self.failed_steps:
            out.append(f"  failed steps: {', '.join(self.failed_steps)}")
        return out


def keep_summary(out: Path, summary: RunSummary) -> None:
    atomic_write_text(out / WORK_DIR / SUMMARY_FILE, json.dumps(summary.to_dict(), indent=1) + "\n")


def read_summary(out: Path) -> RunSummary | None:
    """The last run's summary kept under `out`, or None."""
    try:
        return RunSummary.from_dict(json.loads((out / WORK_DIR / SUMMARY_FILE).read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError, KeyError):
        return None
