"""What a check says: a Verdict (passed, severity, summary, key figures, a few examples), the
offenders it counts by kind, and the verdict of rules the validator judged into a Target."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from gui_assets.validate.report import Target

ERROR = "ERROR"
WARN = "WARN"
MAX_EXAMPLES = 5


@dataclass(slots=True)
class Verdict:
    passed: bool
    severity: str
    summary: str
    figures: dict[str, Any] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)


class Offenders:
    """Counts offending steps by kind and keeps the first few as examples."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.examples: list[str] = []

    def add(self, kind: str, where: str) -> None:
        self.counts[kind] += 1
        if len(self.examples) < MAX_EXAMPLES:
            self.examples.append(f"{where}: {kind}")

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def judged(
    target: Target, figures: dict[str, Any], passed: str, failed: str, severity: str = ERROR
) -> Verdict:
    """The Verdict of rules gui_assets.validate judged into `target`: each finding is an
    offence of its rule, counted by rule id; `failed` gets the number of findings."""
    figures = {**figures, "problems": target.total, "by_rule": dict(target.counts)}
    if target.total:
        examples = [f"{f.where()}: {f.rule}: {f.message}" for f in target.findings[:MAX_EXAMPLES]]
        return Verdict(False, severity, failed.format(target.total), figures, examples)
    return Verdict(True, severity, passed, figures)
