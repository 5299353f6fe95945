"""Per-source facts live beside the source: each adapter's docstring lists exactly the drop
reasons it can emit, and docs/sources/<name>.md is rendered from it (run this module to
rewrite the pages: `python -m gui_assets_tests.test_source_docs`)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from gui_assets import archives, assembly, images
from gui_assets.adapters import playwright_trace, pyautogui_code
from gui_assets.drops import DropReason
from gui_assets.lineage import import_closure, module_path
from gui_assets.source_docs import documented_drops, render_drops_page, render_source_page
from gui_assets.sources import SOURCES

DOCS = Path(__file__).resolve().parents[1] / "docs"


def referenced(module: str) -> set[DropReason]:
    """The DropReason members a module's code names (`DropReason.X`)."""
    path = module_path(module)
    assert path is not None, module
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        DropReason[node.attr]
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "DropReason"
    }


def pages() -> dict[Path, str]:
    out = {DOCS / "sources" / f"{spec.name}.md": render_source_page(spec) for spec in SOURCES}
    out[DOCS / "drops.md"] = render_drops_page()
    return out


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
                    "gui_assets.stages.episodes",
                    "gui_assets.stages.shards",
                    *(s.adapter.__module__ for s in SOURCES),
                ]
            )
        )
    )
    assert used == set(DropReason), set(DropReason) - used


def test_the_docs_pages_are_rendered_from_the_code():
    for path, text in pages().items():
        assert path.is_file() and path.read_text(encoding="utf-8") == text, (
            f"{path} is stale: run python -m gui_assets_tests.test_source_docs"
        )


if __name__ == "__main__":
    for path, text in pages().items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(path)
