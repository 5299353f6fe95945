"""The shape of the code: who may import whom, and how big a module or a function may grow."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "gui_assets"
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80
# Data tables, not logic: a long literal reads best in one place.
# The demo mirror's recorded tasks are tables of literal actions, whatever the function around them.
TABLES = {
    ("gui_assets/demo/mind2web_mirror.py", "_tasks"),
    ("gui_assets/demo/weblinx_mirror.py", "_demo_turns"),
    ("gui_assets/demo/cuagym_mirror.py", "rows"),
}


def modules() -> dict[str, Path]:
    return {
        ".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__"): p
        for p in PACKAGE.rglob("*.py")
    }


def imports_of(path: Path) -> set[str]:
    """Every gui_assets module an import statement in `path` names (types included)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return {n for n in names if n.split(".")[0] == "gui_assets"}


def importers_of(target: str) -> set[str]:
    return {
        name
        for name, path in modules().items()
        if any(i == target or i.startswith(target + ".") for i in imports_of(path))
    }


def test_core_modules_never_import_dagster():
    """The pure core is importable and testable without Dagster (house rule 3)."""
    shell = {PACKAGE / "definitions.py", PACKAGE / "__init__.py"}
    core = [p for p in PACKAGE.rglob("*.py") if p not in shell and "defs" not in p.relative_to(PACKAGE).parts]
    assert len(core) > 10
    for p in core:
        tree = ast.parse(p.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            assert not any(n.split(".")[0] == "dagster" for n in names), p


def test_the_registry_is_imported_only_by_the_location_and_the_backfill():
    assert importers_of("gui_assets.sources") == {"gui_assets.definitions", "gui_assets.backfill"}


@pytest.mark.parametrize("layer", ["gui_assets.writers", "gui_assets.stages", "gui_assets.pipeline"])
def test_writers_stages_and_the_pipeline_know_no_source(layer):
    """Writers read DatasetInfo and files; stages are handed a SourceSpec; neither imports an
    adapter or the registry, so adding a source touches neither."""
    for name, path in modules().items():
        if name == layer or name.startswith(layer + "."):
            bad = {i for i in imports_of(path) if i.startswith(("gui_assets.adapters", "gui_assets.sources"))}
            assert not bad, (name, bad)


def test_no_module_over_500_lines_and_no_function_over_80():
    long_modules = {
        str(p.relative_to(PACKAGE.parent)): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not long_modules
    long_functions = {}
    for p in PACKAGE.rglob("*.py"):
        rel = str(p.relative_to(PACKAGE.parent))
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                and (rel, node.name) not in TABLES
            ):
                if isinstance(node, ast.ClassDef):
                    continue  # a class is judged by its methods
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    long_functions[f"{rel}:{node.name}"] = length
    assert not long_functions
