"""Per-source facts live beside the source: each adapter's docstring lists exactly the drop
reasons it can emit, docs/sources/<name>.md is rendered from it and from the declaration, and
the README's sources, variables and knobs tables from the registry and gui_assets.pipeline.settings
(`gui-assets docs` rewrites them all)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from gui_assets.cli.docs import (
    COMMAND,
    documented_drops,
    render_knobs_table,
    render_readme,
    render_source_page,
    render_sources_table,
    rendered_files,
    replace_section,
    stale_pages,
)
from gui_assets.core import images
from gui_assets.core.code_version import import_closure, module_path
from gui_assets.core.drops import DropReason
from gui_assets.sources import archives, assembly
from gui_assets.sources.agentnet import pyautogui_code
from gui_assets.sources.agentnet.source import SPEC as AGENTNET
from gui_assets.sources.pango.source import SPEC as PANGO
from gui_assets.sources.registry import SOURCES
from gui_assets.sources.webarena import playwright_trace
from gui_assets.sources.webarena.source import SPEC as WEBARENA
from gui_assets_tests.mobile_toy import MOBILE
from gui_assets_tests.pysource import parse_file

ROOT = Path(__file__).resolve().parents[2]


def referenced(module: str) -> set[DropReason]:
    """The DropReason members a module's code names (`DropReason.X`)."""
    path = module_path(module)
    assert path is not None, module
    tree = parse_file(path)
    return {
        DropReason[node.attr]
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "DropReason"
    }


@pytest.mark.parametrize("spec", SOURCES, ids=lambda s: s.name)
def test_each_adapter_docstring_lists_exactly_the_reasons_it_can_emit(spec):
    module = sys.modules[spec.adapter.__module__]
    declared = {r.value for r in module.DROPS}
    assert set(documented_drops(module.__doc__ or "")) == declared
    own = referenced(module.__name__)
    assert own <= module.DROPS, own - module.DROPS  # nothing it emits goes undocumented
    reachable = set().union(*(referenced(m) for m in import_closure([module.__name__])))
    assert reachable >= module.DROPS, module.DROPS - reachable  # nothing documented it cannot emit


@pytest.mark.parametrize(
    ("module", "declared"),
    [
        (images, images.DROPS),
        (archives, archives.OPEN_DROPS | archives.MEMBER_DROPS),
        (pyautogui_code, pyautogui_code.DROPS),
        (playwright_trace, playwright_trace.DROPS),
        (assembly, assembly.DROPS - images.DROPS),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_each_helper_declares_the_reasons_its_code_raises(module, declared):
    assert referenced(module.__name__) == set(declared)


def test_every_reason_is_used_somewhere_and_documented_with_its_unit():
    used = set().union(
        *(
            referenced(m)
            for m in import_closure(
                [
                    "gui_assets.pipeline.episodes",
                    "gui_assets.pipeline.shards",
                    *(s.adapter.__module__ for s in SOURCES),
                ]
            )
        )
    )
    assert used == set(DropReason), set(DropReason) - used


def test_the_docs_pages_and_readme_tables_are_rendered_from_the_code():
    stale = [
        str(path.relative_to(ROOT))
        for path, text in rendered_files(ROOT, SOURCES).items()
        if not path.is_file() or path.read_text(encoding="utf-8") != text
    ]
    stale += [f"{p.relative_to(ROOT)} (no such source)" for p in stale_pages(ROOT, SOURCES)]
    assert not stale, f"stale generated docs {stale}: run `{COMMAND}` and commit the result"


def test_the_sources_table_says_which_sources_hub_mode_builds():
    rows = {line.split(" | ")[0]: line for line in render_sources_table(SOURCES).splitlines()[2:]}
    assert len(rows) == len(SOURCES)
    assert "| no: not on the hub |" in rows["| WebArena (`webarena`)"]
    assert "| no: no file host allowed |" in rows["| Pango (`pango`)"]
    assert "| yes |" in rows["| Mind2Web (`mind2web`)"]
    assert not WEBARENA.hub_mode().works and not PANGO.hub_mode().works


def test_every_source_option_is_in_the_knobs_table_where_run_config_sets_it():
    table = render_knobs_table(SOURCES)
    for spec in SOURCES:
        for option in spec.options:
            assert f"| `source_options.{spec.name}.{option.name}` |" in table
    assert '"source_options": {"pango": {"hover": true}}' in table  # the example a user copies


def test_a_readme_without_its_markers_is_refused_by_name():
    with pytest.raises(ValueError, match="<!-- knobs:begin -->"):
        replace_section("no markers here", "knobs", "| table |")
    text = "a\n<!-- knobs:begin -->\nold\n<!-- knobs:end -->\nb"
    assert replace_section(text, "knobs", "new") == "a\n<!-- knobs:begin -->\nnew\n<!-- knobs:end -->\nb"
    with pytest.raises(ValueError, match="sources:begin"):
        render_readme(text, SOURCES)


def test_a_source_page_says_what_a_mobile_source_declares_and_others_stay_as_they_were():
    page = render_source_page(MOBILE)
    assert "- Platform: mobile;" in page
    assert "- Scrolls: the view direction only, no gesture" in page
    assert "each demo's `test_subsplits` attr lists the named evaluation subsets" in page
    assert "Scrolls:" not in render_source_page(AGENTNET) and "sub-splits" not in render_source_page(AGENTNET)
