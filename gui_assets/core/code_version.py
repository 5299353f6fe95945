"""Code versions derived from the code itself: a hash of modules and everything they import.

`version_of(roots)` follows imports inside the package from the root modules (never a list kept
by hand) and hashes each module in a normalized form: the AST dump without docstrings, so
comments, docstrings and formatting move nothing while any change to what runs does. Imports
under `if TYPE_CHECKING:` are types, not code that runs. A subpackage's `__init__` runs before its
modules, so it is part of their closure. Each module is walked once per process for each state of
its file; nothing is kept between processes.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gui_assets.core.python_source import parse_python
from gui_assets.core.version import GUI_ASSETS_VERSION

PACKAGE = "gui_assets"
PACKAGE_DIR = Path(__file__).resolve().parents[1]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


# Docstrings and imports are statements, so one walk over statement blocks finds them all without
# visiting the expressions (nine nodes in ten): this walk runs for every module on every load.
_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")
_DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def strip_docstrings_and_find_imports(tree: ast.Module, module: str, is_package: bool) -> set[str]:
    """Removes every docstring from `tree` (in place) and returns each module name an import
    statement names, except under `if TYPE_CHECKING:` (types, not code that runs)."""
    imports: set[str] = set()

    def visit(node: ast.AST, runtime: bool) -> None:
        if isinstance(node, ast.Import):
            if runtime:
                imports.update(a.name for a in node.names)
            return
        if isinstance(node, ast.ImportFrom):
            if runtime:
                base = node.module or ""
                if node.level:
                    parts = module.split(".")
                    anchor = parts if is_package else parts[:-1]
                    anchor = anchor[: len(anchor) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                imports.add(base)
                imports.update(f"{base}.{a.name}" for a in node.names)  # `from pkg import module`
            return
        if isinstance(node, _DOCUMENTED):
            body = node.body
            first = body[0].value if body and isinstance(body[0], ast.Expr) else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                node.body = body[1:] or [ast.Pass()]
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, False)
            for child in node.orelse:
                visit(child, runtime)
            return
        for field in _BLOCKS:
            for child in getattr(node, field, ()):
                visit(child, runtime)

    visit(tree, True)
    return imports


def normalized_source(tree: ast.AST) -> str:
    """A module's AST once its docstrings are stripped, dumped: blind to comments and formatting."""
    return ast.dump(tree, annotate_fields=False, include_attributes=False)


def module_path(name: str, package_dir: Path = PACKAGE_DIR) -> Path | None:
    """The source file of a module of this package (or of an imported one outside it)."""
    if name == PACKAGE:
        return None  # the package __init__ assembles the code location; no stage runs it
    if name.startswith(PACKAGE + "."):
        rel = os.path.join(str(package_dir), *name.split(".")[1:])
        for candidate in (rel + ".py", os.path.join(rel, "__init__.py")):
            if os.path.isfile(candidate):  # os.path, not pathlib: called thousands of times per load
                return Path(candidate)
        return None
    file = getattr(sys.modules.get(name), "__file__", None)
    return Path(file) if file and file.endswith(".py") else None


def import_closure(roots: Iterable[str], package_dir: Path = PACKAGE_DIR) -> list[str]:
    """The roots and every package module they import, directly or through others, sorted."""
    return sorted(_closure_paths(roots, package_dir))


def _closure_paths(roots: Iterable[str], package_dir: Path) -> dict[str, Path]:
    seen: dict[str, Path] = {}
    looked: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in looked:
            continue
        looked.add(name)
        path = module_path(name, package_dir)
        if path is None:
            continue
        seen[name] = path
        parents = name.split(".")
        for i in range(2, len(parents)):  # a subpackage's __init__ runs before its modules
            todo.append(".".join(parents[:i]))
        _, imports = _analysis(path, _stamp(path), name)
        todo.extend(i for i in imports if i.startswith(PACKAGE + "."))
    return seen


def _stamp(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_mtime_ns, st.st_size


@functools.cache
def _analysis(path: Path, stamp: tuple[int, int], name: str) -> tuple[str, frozenset[str]]:
    """A module's normalized digest and its runtime imports, once per process for each state of
    its file (`stamp`: an edited file is walked anew)."""
    tree = parse_python(path.read_text(encoding="utf-8"), filename=str(path))
    imports = frozenset(strip_docstrings_and_find_imports(tree, name, path.name == "__init__.py"))
    return hashlib.sha256(normalized_source(tree).encode()).hexdigest(), imports


def version_of(roots: Iterable[str], data: Any = None, package_dir: Path = PACKAGE_DIR) -> str:
    """A 16-hex code version over the roots' import closure (normalized) and `data`."""
    h = hashlib.sha256(GUI_ASSETS_VERSION.encode())
    closure = _closure_paths(roots, package_dir)
    for name in sorted(closure):
        path = closure[name]
        digest, _ = _analysis(path, _stamp(path), name)
        h.update(name.encode() + b"\0" + digest.encode() + b"\n")
    h.update(json.dumps(data, sort_keys=True, default=str).encode())
    return h.hexdigest()[:16]
