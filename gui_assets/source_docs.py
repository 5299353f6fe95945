"""A source's documentation page, rendered from its declaration and its adapter's docstring, so
the conversion rules live in one place (beside the code) and `docs/sources/<name>.md` is a copy
a test keeps current.

An adapter docstring ends with a `Drop reasons:` section: one line per reason it can emit, the
reason first, then what it means for this source (continuation lines indented further). A
reason without text on its line shares the text above it.
"""

from __future__ import annotations

import inspect
import re
import sys

from gui_assets.drops import DropReason
from gui_assets.source_spec import SourceSpec

_SECTION = "Drop reasons:"


def _module_doc(spec: SourceSpec) -> str:
    return inspect.cleandoc(sys.modules[spec.adapter.__module__].__doc__ or "")


def documented_drops(doc: str) -> dict[str, str]:
    """{reason: what it means here} from a docstring's `Drop reasons:` section."""
    if _SECTION not in doc:
        return {}
    lines = doc.split(_SECTION, 1)[1].splitlines()[1:]
    out: dict[str, str] = {}
    indent: int | None = None
    last = ""
    for line in lines:
        if not line.strip():
            break
        width = len(line) - len(line.lstrip())
        indent = width if indent is None else indent
        if width > indent and last:  # a continuation of the previous reason's text
            out[last] = f"{out[last]} {line.strip()}".strip()
            continue
        reason, _, meaning = line.strip().partition(" ")
        out[reason] = meaning.strip() or (out[last] if last else "")
        last = reason
    return out


def render_source_page(spec: SourceSpec) -> str:
    """`docs/sources/<name>.md`: what the source is, its partitions, its conversion rules (the
    adapter docstring) and every drop reason it can emit with its unit."""
    doc = _module_doc(spec)
    rules = doc.split(_SECTION, 1)[0].rstrip()
    drops = documented_drops(doc)
    platforms = sorted({spec.platform_of(k) for k in spec.partition_keys})
    partitions = ", ".join(f"`{k}` -> `{spec.directory(k)}/`" for k in spec.partition_keys)
    rows = "\n".join(
        f"| `{reason}` | {DropReason(reason).unit.value} | {meaning} |" for reason, meaning in drops.items()
    )
    notes = f"\n{spec.notes}\n" if spec.notes else ""
    return f"""<!-- Generated from gui_assets/sources.py and {spec.adapter.__module__.replace(".", "/")}.py:
     edit those, then run `python -m gui_assets_tests.test_source_docs`. -->
# {spec.name}: `{spec.repo_id}`

{spec.description}

- Partitions: {partitions}
- Platform: {", ".join(platforms)}; licence: {spec.license}; split rule: `{spec.split_rule.name}`
{notes}
## Conversion rules

```text
{rules}
```

## Drop reasons

Each is counted in `stats.drops` of the directory's dataset_info.json (and by unit in
`stats.drops_by_unit`); see [the reasons and their units](../drops.md).

| reason | unit | here |
|---|---|---|
{rows}
"""


def reason_names(text: str) -> set[str]:
    """Tokens of `text` that name a drop reason (for checking prose against the closed set)."""
    values = {r.value for r in DropReason}
    return {t for t in re.findall(r"[a-z_]+", text) if t in values}


def render_drops_page() -> str:
    """`docs/drops.md`: the closed set of drop reasons, by unit."""
    sections = []
    for unit in dict.fromkeys(r.unit for r in DropReason):
        rows = "\n".join(f"| `{r.value}` | {r.meaning} |" for r in DropReason if r.unit == unit)
        sections.append(f"## {unit.value}\n\n| reason | meaning |\n|---|---|\n{rows}\n")
    body = "\n".join(sections)
    return f"""<!-- Generated from gui_assets/drops.py:
     edit it, then run `python -m gui_assets_tests.test_source_docs`. -->
# Drop reasons

A record that cannot be used is dropped and counted by one of these reasons, never guessed.
Each reason has one unit, the thing a count of it stands for; `dataset_info.json` reports
`stats.drops` ({{reason: count}}) and the same counts grouped as `stats.drops_by_unit`. Each
source's page lists the reasons its adapter can emit and what they mean there.

{body}"""
