"""Findings and the report: what was judged (a directory, a shard, the rest of an output folder),
which rules were checked there, and each broken one with where it broke."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from gui_assets.validate.rules import RULES

# A target keeps at most this many findings of one rule (the count stays exact): a shard broken at
# every step must not fill memory with a million copies of one message.
KEPT_PER_RULE = 200
SHOWN_PER_RULE = 10  # lines of one rule in the text report of one target


@dataclass(frozen=True, slots=True)
class Finding:
    rule: str
    message: str
    file: str = ""
    demo: str = ""
    step: int | None = None

    def where(self) -> str:
        parts = [p for p in (self.file, self.demo) if p]
        if self.step is not None:
            parts.append(f"step {self.step}")
        return " ".join(parts)


@dataclass(slots=True)
class Target:
    """One thing judged: `kind` is directory, shard or output (the folder's card, preview, cua-lite)."""

    name: str
    path: str
    kind: str
    checked: set[str] = field(default_factory=set)
    findings: list[Finding] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    figures: Counter[str] = field(default_factory=Counter)  # shards, demos, steps, pixel steps, ...
    notes: list[str] = field(default_factory=list)

    def check(self, *rules: str) -> None:
        for rule in rules:
            if rule not in RULES:
                raise KeyError(f"unknown rule id {rule!r}")  # a typo here is the validator's bug
            self.checked.add(rule)

    def find(self, rule: str, message: str, file: str = "", demo: str = "", step: int | None = None) -> None:
        self.check(rule)
        self.counts[rule] += 1
        if self.counts[rule] <= KEPT_PER_RULE:
            self.findings.append(Finding(rule, message, file, demo, None if step is None else int(step)))

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "path": self.path,
            "kind": self.kind,
            "rules_checked": sorted(self.checked),
            "finding_counts": dict(sorted(self.counts.items())),
            "findings": [asdict(f) for f in self.findings],
            "figures": dict(sorted(self.figures.items())),
            "notes": self.notes,
        }


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _figures_text(t: Target) -> str:
    f = t.figures
    parts = [plural(f[k], k[:-1]) for k in ("shards", "demos", "steps") if k in f]
    if "pixel_steps" in f or "pixel_skipped" in f:
        parts.append(
            f"eye-in-hand pixels compared at {f['pixel_steps']} steps ({f['pixel_skipped']} resized)"
        )
    return ", ".join(parts)


def text_report(targets: list[Target]) -> str:
    lines: list[str] = []
    for t in targets:
        head = f"{t.name} ({t.kind}, {t.path})"
        figures = _figures_text(t)
        lines.append(
            f"{head}: {figures + '; ' if figures else ''}{plural(len(t.checked), 'rule')} checked, "
            f"{plural(t.total, 'finding')}"
        )
        shown: Counter[str] = Counter()
        for f in t.findings:
            shown[f.rule] += 1
            if shown[f.rule] <= SHOWN_PER_RULE:
                where = f.where()
                lines.append(f"  [{f.rule}] {where + ': ' if where else ''}{f.message}")
        for rule, n in sorted(t.counts.items()):
            if n > SHOWN_PER_RULE:
                lines.append(f"  [{rule}] ... {n - SHOWN_PER_RULE} more")
        lines += [f"  note: {note}" for note in t.notes]
    lines.append(summary_line(targets))
    return "\n".join(lines)


def summary_line(targets: list[Target]) -> str:
    total = sum(t.total for t in targets)
    broken = sorted({r for t in targets for r in t.counts})
    kinds = Counter(t.kind for t in targets)
    judged = ", ".join(
        f"{n} {'directories' if k == 'directory' else k + 's'}" if n != 1 else f"1 {k}"
        for k, n in sorted(kinds.items())
    )
    verdict = "every rule holds" if total == 0 else f"broken rules: {', '.join(broken)}"
    return f"summary: {judged}; {plural(total, 'finding')}; {verdict}"


def json_report(targets: list[Target]) -> str:
    total = sum(t.total for t in targets)
    return json.dumps(
        {"ok": total == 0, "findings": total, "targets": [t.to_dict() for t in targets]},
        indent=2,
        ensure_ascii=False,
    )
