"""The docs that are copies of declarations: each source's page (`docs/sources/<name>.md`, from
its SourceSpec and its adapter's docstring), `docs/drops.md` (from the closed set of reasons)
and the README's sources, variables and knobs tables (from the registry and gui_assets.pipeline.settings).
The conversion rules and the settings live in one place each, beside the code; a test keeps
these files current, and one command rewrites them all:

    gui-assets docs

An adapter docstring ends with a `Drop reasons:` section: one line per reason it can emit, the
reason first, then what it means for this source (continuation lines indented further). A
reason without text on its line shares the text above it.
"""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gui_assets.core.drops import DropReason
from gui_assets.pipeline import settings
from gui_assets.sources.spec import SourceOption, SourceSpec

_SECTION = "Drop reasons:"
COMMAND = "gui-assets docs"


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
    hub = spec.hub_mode()
    folder = spec.adapter.__module__.rsplit(".", 1)[0].replace(".", "/")
    return f"""<!-- Generated from {folder}/ (source.py and the adapter's docstring):
     edit those, then run `{COMMAND}`. -->
# {spec.name}: `{spec.repo_id}`

{spec.description}

- Partitions: {partitions}
- Platform: {", ".join(platforms)}; licence: {spec.license}; split rule: `{spec.split_rule.name}`
- Hub mode (`GUI_ASSETS_SOURCE=hub`): {hub.summary}{f"; {hub.detail}" if hub.detail else ""}
{_mobile_lines(spec)}{notes}{_options_section(spec)}
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


def _mobile_lines(spec: SourceSpec) -> str:
    """What a source declares beyond the defaults about its scrolls and its test sub-splits."""
    lines = ""
    if not spec.scroll_gestures:
        lines += (
            "- Scrolls: the view direction only, no gesture: each SCROLL has an all-zero mask and "
            "zero params, the direction in action_desc\n"
        )
    if spec.subsplit_attr:
        lines += (
            f"- Test sub-splits: each demo's `{spec.subsplit_attr}` attr lists the named evaluation "
            "subsets it belongs to (a JSON list); dataset_info.json counts them under `subsplits`\n"
        )
    return lines


def render_drops_page() -> str:
    """`docs/drops.md`: the closed set of drop reasons, by unit."""
    sections = []
    for unit in dict.fromkeys(r.unit for r in DropReason):
        rows = "\n".join(f"| `{r.value}` | {r.meaning} |" for r in DropReason if r.unit == unit)
        sections.append(f"## {unit.value}\n\n| reason | meaning |\n|---|---|\n{rows}\n")
    body = "\n".join(sections)
    return f"""<!-- Generated from gui_assets/core/drops.py:
     edit it, then run `{COMMAND}`. -->
# Drop reasons

A record that cannot be used is dropped and counted by one of these reasons, never guessed.
Each reason has one unit, the thing a count of it stands for; `dataset_info.json` reports
`stats.drops` ({{reason: count}}) and the same counts grouped as `stats.drops_by_unit`. Each
source's page lists the reasons its adapter can emit and what they mean there.

{body}"""


def _options_section(spec: SourceSpec) -> str:
    if not spec.options:
        return ""
    rows = "\n".join(
        f"| `{o.name}` | {o.meaning} | {_value(o.default)} | {o.rule or o.type.__name__} |"
        for o in spec.options
    )
    example = json.dumps(_option_config(spec, spec.options[0]))
    return f"""
## Options

Set in run config as `resources.build.config.source_options.{spec.name}.<option>` (for example
`--config-json '{example}'`) and recorded in the directory's dataset_info.json
`build.config.source_options`.

| option | meaning | default | valid |
|---|---|---|---|
{rows}
"""


def _option_config(spec: SourceSpec, option: SourceOption) -> dict[str, Any]:
    value = (not option.default) if option.type is bool else option.default
    return {"resources": {"build": {"config": {"source_options": {spec.name: {option.name: value}}}}}}


def _value(value: Any) -> str:
    """A default as a user types it in run config (JSON)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"`{json.dumps(value)}`"


def _partitions_cell(spec: SourceSpec) -> str:
    keys = ", ".join(spec.partition_keys)
    rule = spec.split_rule
    if rule.fraction is not None:
        return f"{keys} (+ a {rule.fraction:.0%} `_val_` holdout)"
    if rule.name != "shipped":
        return f"{keys} (+ `_val_`)"
    return keys


def render_sources_table(sources: Sequence[SourceSpec]) -> str:
    """The README's sources table: one row per registered source."""
    rows = []
    for spec in sources:
        upstream = (
            f"`{spec.repo_id}`" if not spec.not_on_hub else f"not on the hub (mirrored as `{spec.repo_id}/`)"
        )
        page = f"docs/sources/{spec.name}.md"
        rows.append(
            f"| {spec.display_name} (`{spec.name}`) | {upstream} | {_partitions_cell(spec)} | "
            f"{spec.hub_mode().summary} | [{page}]({page}) |"
        )
    return "| source | upstream | partitions | hub mode | rules |\n|---|---|---|---|---|\n" + "\n".join(rows)


def render_settings_table() -> str:
    """The README's environment variables table."""
    rows = "\n".join(f"| `{v.name}` | {v.meaning} | {v.default} |" for v in settings.VARIABLES)
    return "| variable | meaning | default |\n|---|---|---|\n" + rows


def render_knobs_table(sources: Sequence[SourceSpec]) -> str:
    """The README's knobs table: the build resource's run config, each source's options last."""
    rows = [
        f"| `{k.name}` | {k.meaning} | {k.default_text or _value(k.default)} | "
        f"{'yes' if k.recorded else 'no'} |"
        for k in settings.build_knobs()
    ]
    rows += [
        f"| `{settings.option_path(s, o)}` | {s.display_name}: {o.meaning} | {_value(o.default)} | yes |"
        for s in sources
        for o in s.options
    ]
    # The example sets a switch where a source has one: a value anyone can see change something.
    options = [(s, o) for s in sources for o in s.options]
    chosen = next(((s, o) for s, o in options if o.type is bool), options[0] if options else None)
    example = _option_config(*chosen) if chosen else None
    typed = (
        f"\n\nA source's options sit under `source_options.<source>`, for example "
        f"`--config-json '{json.dumps(example)}'`; each source's page lists its own."
        if example
        else ""
    )
    head = "| knob | meaning | default | in `build.config` |\n|---|---|---|---|\n"
    return head + "\n".join(rows) + typed


def replace_section(text: str, name: str, body: str) -> str:
    """`text` with what lies between `<!-- name:begin -->` and `<!-- name:end -->` replaced."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
        raise ValueError(f"README.md needs exactly one {begin} before one {end}")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{body}\n{end}{tail}"


def render_readme(text: str, sources: Sequence[SourceSpec]) -> str:
    """The README with its generated tables current (each between `<!-- NAME:begin -->` and
    `<!-- NAME:end -->`)."""
    text = replace_section(text, "sources", render_sources_table(sources))
    text = replace_section(text, "settings", render_settings_table())
    return replace_section(text, "knobs", render_knobs_table(sources))


def rendered_files(root: Path, sources: Sequence[SourceSpec]) -> dict[Path, str]:
    """Every generated file under the repository `root`, with what it must hold."""
    out = {root / "docs" / "sources" / f"{spec.name}.md": render_source_page(spec) for spec in sources}
    out[root / "docs" / "drops.md"] = render_drops_page()
    readme = root / "README.md"
    out[readme] = render_readme(readme.read_text(encoding="utf-8"), sources)
    return out


def stale_pages(root: Path, sources: Sequence[SourceSpec]) -> list[Path]:
    """Source pages under docs/sources/ for no registered source."""
    names = {s.name for s in sources}
    return sorted(p for p in (root / "docs" / "sources").glob("*.md") if p.stem not in names)


def write_docs(root: Path, sources: Sequence[SourceSpec]) -> list[Path]:
    """Rewrite every generated file that differs, remove stale pages; returns what changed."""
    changed = []
    for path, text in rendered_files(root, sources).items():
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    for path in stale_pages(root, sources):
        path.unlink()
        changed.append(path)
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    """`gui-assets docs`: rewrite the generated docs of this checkout (no arguments)."""
    if argv:
        print(
            "usage: gui-assets docs  (rewrites docs/sources/, docs/drops.md and the README's tables)",
            file=sys.stderr,
        )
        return 2
    from gui_assets.sources.registry import SOURCES

    root = Path(__file__).resolve().parents[2]
    if not (root / "README.md").is_file():
        print(
            f"{root} is not a checkout of the repository (no README.md): nothing to render", file=sys.stderr
        )
        return 2
    try:
        changed = write_docs(root, SOURCES)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    for path in changed:
        print(path.relative_to(root))
    print(f"{len(changed)} file(s) rewritten" if changed else "every generated doc is current")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
