"""Code versions derived from the code itself: what marks an asset stale when its code changes.

An asset runs one stage (`gui_assets.stages.*`) or one writer (`gui_assets.writers.*`), plus, for
a source's chain, the parts of its declaration that stage calls (the adapter, the file patterns,
the split rule). Its code_version hashes every module that runs, found by following imports
inside the package from those roots (never a list kept by hand), each in a normalized form: the
AST dump without docstrings, so comments, docstrings and formatting move nothing while any
change to what runs does. Imports under `if TYPE_CHECKING:` are types, not code that runs.

The declaration's data a stage depends on (repo id and file patterns for the raw stage, the split
rule for the split stage, ...) is hashed with it, and so is the package version. Where a stage
runs only a function or two of a module (the raw stage runs an adapter's `file_patterns`), only
those functions count: their own definitions and the module-level names they reach, followed
through the module (`function_closure`), so an edit elsewhere in the adapter moves the episodes
stage and not the raw one.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gui_assets.atomic import atomic_write_text
from gui_assets.python_source import parse_python
from gui_assets.source_spec import SourceSpec
from gui_assets.version import GUI_ASSETS_VERSION

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
        imports = _imports_of(path, _stamp(path), name)
        todo.extend(i for i in imports if i.startswith(PACKAGE + "."))
    return seen


def _stamp(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_mtime_ns, st.st_size


CACHE_DIR_ENV = "GUI_ASSETS_CACHE_DIR"


def cache_dir() -> Path | None:
    """Where the package keeps what it can always recompute: $GUI_ASSETS_CACHE_DIR, else
    $XDG_CACHE_HOME/gui_assets (an absolute one, as the XDG rule has it), else
    ~/.cache/gui_assets; None when there is no home to put it in."""
    explicit = os.environ.get(CACHE_DIR_ENV)
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / PACKAGE
    try:
        return Path.home() / ".cache" / PACKAGE
    except RuntimeError:  # no HOME and no password entry
        return None


def analysis_cache_file() -> Path | None:
    """The analysis cache's file, one per interpreter version (the AST's form is the
    interpreter's), or None when there is no cache folder."""
    folder = cache_dir()
    return None if folder is None else folder / f"lineage.{sys.implementation.cache_tag}.json"


class _AnalysisCache:
    """What the AST walk found in a module (its normalized digest and its runtime imports), kept
    on disk in the user's cache folder by the module's name and the sha256 of its bytes, so any
    checkout or copy of the package shares it: about a quarter of a code location's load time
    otherwise, for the same answers. The cache is only a shortcut: a file it cannot read or write is
    ignored, and bytes it has not seen are walked."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        try:
            loaded = json.loads(path.read_text(encoding="utf-8")) if path is not None else {}
        except (OSError, ValueError):
            loaded = {}
        self.entries: dict[str, list[Any]] = loaded if isinstance(loaded, dict) else {}
        self.used: set[str] = set()
        self.dirty = False

    def analysis(self, path: Path, name: str) -> tuple[str, frozenset[str]]:
        source = path.read_bytes()
        key = f"{name}:{hashlib.sha256(source).hexdigest()}"
        self.used.add(key)
        hit = self.entries.get(key)
        if isinstance(hit, list) and len(hit) == 2 and isinstance(hit[0], str) and isinstance(hit[1], list):
            return hit[0], frozenset(hit[1])
        tree = parse_python(source.decode("utf-8"), filename=str(path))
        imports = frozenset(_runtime_imports(tree, name, path.name == "__init__.py"))
        digest = hashlib.sha256(normalized_source(tree).encode()).hexdigest()
        self.entries[key] = [digest, sorted(imports)]
        self.dirty = True
        return digest, imports

    def save(self) -> None:
        """Write the entries this process used, and those of modules it did not look at (a
        process that walks a few modules keeps the others' for the next); other bytes of a
        module it did look at drop out. Atomically, so a concurrent process reads the old file
        or the new one."""
        if not self.dirty or self.path is None:
            return
        self.dirty = False
        looked = {k.split(":", 1)[0] for k in self.used}
        keep = {k: v for k, v in self.entries.items() if k in self.used or k.split(":", 1)[0] not in looked}
        with contextlib.suppress(OSError):  # a read-only or missing home: each process walks
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(self.path, json.dumps(keep, sort_keys=True))


@functools.cache
def _cache(path: Path | None) -> _AnalysisCache:
    return _AnalysisCache(path)


@functools.cache
def _analysis(path: Path, stamp: tuple[int, int], name: str) -> tuple[str, frozenset[str]]:
    return _cache(analysis_cache_file()).analysis(path, name)


def _imports_of(path: Path, stamp: tuple[int, int], name: str) -> frozenset[str]:
    return _analysis(path, stamp, name)[1]


def _module_digest(path: Path, stamp: tuple[int, int], name: str) -> str:
    return _analysis(path, stamp, name)[0]


def _top_level_names(tree: ast.Module) -> tuple[dict[str, list[ast.stmt]], dict[str, str]]:
    """A module's definitions by the names they bind, and the names its imports bind (to the
    module each comes from, or names)."""
    defined: dict[str, list[ast.stmt]] = {}
    imported: dict[str, str] = {}
    for node in tree.body:
        targets: list[str] = []
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            targets = [node.name]
        elif isinstance(node, ast.Assign):
            targets = [n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        elif isinstance(node, ast.AnnAssign | ast.AugAssign) and isinstance(node.target, ast.Name):
            targets = [node.target.id]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                imported[a.asname or a.name] = f"{node.module}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                imported[a.asname or a.name.split(".")[0]] = a.name
        for name in targets:
            defined.setdefault(name, []).append(node)
    return defined, imported


def function_closure(
    function_name: str, module: str, package_dir: Path = PACKAGE_DIR
) -> tuple[str, list[str]]:
    """What a module-level function of this package runs: a digest of its definition and of every
    module-level definition it names, followed through the module, and the package modules those
    definitions import names from (whose whole closure then counts, as for any root)."""
    path = module_path(module, package_dir)
    if path is None:
        raise ValueError(f"{module} is not a module of {PACKAGE}")
    tree = parse_python(path.read_text(encoding="utf-8"), filename=str(path))
    defined, imported = _top_level_names(tree)
    if function_name not in defined:
        raise ValueError(f"{module} defines no {function_name}")
    seen: set[str] = set()
    modules: set[str] = set()
    todo = [function_name]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in imported:
            target = imported[name]
            if target.startswith(PACKAGE + "."):
                # `from pkg.mod import f` names a module or a name in one: the closure walk keeps
                # whichever exists
                modules.add(target if module_path(target, package_dir) else target.rsplit(".", 1)[0])
            continue
        for node in defined.get(name, []):
            todo.extend(n.id for n in ast.walk(node) if isinstance(n, ast.Name))
    h = hashlib.sha256(module.encode())
    for name in sorted(seen & defined.keys()):
        for node in defined[name]:
            h.update(name.encode() + b"\0" + normalized_source(node).encode() + b"\n")
    return h.hexdigest()[:16], sorted(modules)


def _callable_closure(fn: Any, package_dir: Path) -> tuple[str, list[str]]:
    """function_closure of a module-level function of the package; anything else (a lambda, a
    function defined elsewhere) counts with its whole module, as a root."""
    name, module = getattr(fn, "__name__", ""), getattr(fn, "__module__", "")
    if name.isidentifier() and module.startswith(PACKAGE + "."):
        try:
            return function_closure(name, module, package_dir)
        except ValueError:  # no such module file, or not bound at module level under that name
            pass
    return "", [module]


def version_of(roots: Iterable[str], data: Any = None, package_dir: Path = PACKAGE_DIR) -> str:
    """A 16-hex code version over the roots' import closure (normalized) and `data`."""
    h = hashlib.sha256(GUI_ASSETS_VERSION.encode())
    closure = _closure_paths(roots, package_dir)
    for name in sorted(closure):
        path = closure[name]
        digest = _module_digest(path, _stamp(path), name)
        h.update(name.encode() + b"\0" + digest.encode() + b"\n")
    h.update(json.dumps(data, sort_keys=True, default=str).encode())
    _cache(analysis_cache_file()).save()
    return h.hexdigest()[:16]


def _spec_roots_and_data(
    stage: str, spec: SourceSpec, package_dir: Path = PACKAGE_DIR
) -> tuple[list[str], Any]:
    """What of a source's declaration a stage of its chain runs, and the data it reads from it."""
    if stage == "raw":
        # Only the functions the raw stage calls, not the adapter module they sit in.
        fns = [f for f in (spec.file_patterns, spec.resolve_patterns) if f is not None]
        closures = [_callable_closure(f, package_dir) for f in fns]
        roots = sorted({m for _, modules in closures for m in modules})
        patterns = {k: spec.file_patterns(k) for k in spec.partition_keys}
        return roots, [spec.repo_id, spec.not_on_hub, patterns, [digest for digest, _ in closures]]
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
        extra, spec_data = _spec_roots_and_data(stage, spec, package_dir)
        roots += extra
        data.append(spec_data)
    return version_of(roots, data, package_dir)
