"""Code versions derived from the code itself: what marks an asset stale when its code changes.

An asset runs one stage (`gui_assets.stages.*`) or one writer (`gui_assets.writers.*`), plus, for
a source's chain, the parts of its declaration that stage calls (the adapter, the file patterns,
the split rule). Its code_version hashes every module that runs, found by following imports
inside the package from those roots (never a list kept by hand), each in a normalized form: the
AST dump without docstrings, so comments, docstrings and formatting move nothing while any
change to what runs does. Imports under `if TYPE_CHECKING:` are types, not code that runs.

The declaration's data a stage depends on (repo id and file patterns for the raw stage, the split
rule for the split stage, ...) is hashed with it, and so is the package version. The unit is the
module: the raw stage, which calls an adapter's `file_patterns`, counts the adapter module and
its closure, so any edit of the adapter moves it as well as the episodes stage. Each module is
walked once per process; nothing is kept between processes.
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
from typing import TYPE_CHECKING, Any

from gui_assets.python_source import parse_python
from gui_assets.version import GUI_ASSETS_VERSION

if TYPE_CHECKING:
    from gui_assets.source_spec import SourceSpec

PACKAGE = "gui_assets"
PACKAGE_DIR = Path(__file__).resolve().parent

# The module each asset's body runs. A source's chain adds its declaration's code below.
STAGE_MODULES: dict[str, tuple[str, ...]] = {
    "raw": ("gui_assets.stages.raw",),
    "episodes": ("gui_assets.stages.episodes",),
    "splits": ("gui_assets.stages.split",),
    "shards": ("gui_assets.stages.shards",),
    "dataset_info": ("gui_assets.stages.info",),
    "upload": ("gui_assets.writers.hub",),
    "preview": ("gui_assets.writers.preview",),
    "dataset_card": ("gui_assets.writers.card", "gui_assets.viewer.samples"),
    "hub_card": ("gui_assets.writers.hub",),
    "cua_lite_export": ("gui_assets.writers.cua_lite",),
    "lerobot_export": ("gui_assets.writers.lerobot_export",),
    "hub_lerobot": ("gui_assets.writers.hub", "gui_assets.writers.lerobot_export"),
}


# Files other than modules whose bytes an asset's output is made of (the card's prose).
STAGE_FILES: dict[str, tuple[str, ...]] = {
    # the card's prose, and the viewer page its sample pages inline
    "dataset_card": (
        "templates/dataset_card.md",
        "templates/dataset_card_lerobot.md",
        "viewer/static/index.html",
        "viewer/static/viewer.css",
        "viewer/static/viewer.js",
    )
}


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            first = body[0].value if body and isinstance(body[0], ast.Expr) else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


def normalized_source(tree: ast.AST) -> str:
    """A module's AST without docstrings, dumped: blind to comments and formatting."""
    return ast.dump(_strip_docstrings(tree), annotate_fields=False, include_attributes=False)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_imports(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    """Every module name an import statement names, except under `if TYPE_CHECKING:`."""
    names: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")
                anchor = parts if is_package else parts[:-1]
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names.add(base)
            names.update(f"{base}.{a.name}" for a in node.names)  # `from pkg import module`
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return names


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
    imports = frozenset(_runtime_imports(tree, name, path.name == "__init__.py"))
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


def _spec_roots_and_data(stage: str, spec: SourceSpec) -> tuple[list[str], Any]:
    """What of a source's declaration a stage of its chain runs, and the data it reads from it."""
    if stage == "raw":
        # The modules of the functions the raw stage calls (an adapter's file_patterns), whole.
        fns = [f for f in (spec.file_patterns, spec.resolve_patterns) if f is not None]
        patterns = {k: spec.file_patterns(k) for k in spec.partition_keys}
        return sorted({f.__module__ for f in fns}), [spec.repo_id, spec.not_on_hub, patterns]
    if stage == "episodes":
        # The options' defaults are declared in the registry, which no stage imports.
        return [spec.adapter.__module__], [spec.name, spec.max_image, spec.resolve_options({})]
    if stage == "splits":
        return [spec.split_rule.assign.__module__], spec.split_rule.record()
    if stage == "shards":
        return [], spec.name
    if stage == "dataset_info":
        record = {k: spec.record(k) for k in spec.partition_keys}
        return [spec.split_rule.assign.__module__], [record, spec.split_rule.record(), spec.heldout_attrs]
    return [], None


def stage_version(stage: str, spec: SourceSpec | None = None, package_dir: Path = PACKAGE_DIR) -> str:
    """The code_version of a source's `stage` asset (or of a repo-level asset, spec None)."""
    roots = list(STAGE_MODULES[stage])
    data: Any = [
        hashlib.sha256((package_dir / f).read_bytes()).hexdigest() for f in STAGE_FILES.get(stage, ())
    ]
    if spec is not None:
        extra, spec_data = _spec_roots_and_data(stage, spec)
        roots += extra
        data.append(spec_data)
    return version_of(roots, data, package_dir)
