"""The shape of the code: who may import whom, and how big a module or a function may grow."""

from __future__ import annotations

import ast
from pathlib import Path

from gui_assets_tests.pysource import parse_file

PACKAGE = Path(__file__).resolve().parents[1] / "gui_assets"
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80
# Data tables, not logic: a long literal reads best in one place.
# The demo mirror's recorded tasks are tables of literal actions, whatever the function around them.
TABLES = {
    ("gui_assets/sources/mind2web/demo.py", "_tasks"),
    ("gui_assets/sources/weblinx/demo.py", "_demo_turns"),
    ("gui_assets/sources/cuagym/demo.py", "rows"),
}


def modules() -> dict[str, Path]:
    return {
        ".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__"): p
        for p in PACKAGE.rglob("*.py")
    }


def imported_names(path: Path) -> set[str]:
    """Every module name an import statement in `path` (a module of the package) names, types
    included: for `from m import n`, both m and m.n (n may be a module); relative imports resolved."""
    package = path.relative_to(PACKAGE.parent).parts[:-1]  # where `from .` points, __init__ or not
    names: set[str] = set()
    for node in ast.walk(parse_file(path)):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            anchor = package[: len(package) - node.level + 1] if node.level else ()
            base = ".".join([*anchor, *([node.module] if node.module else [])])
            names.add(base)
            names.update(f"{base}.{a.name}" for a in node.names)
    return names


def imports_of(path: Path) -> set[str]:
    """Every gui_assets module an import statement in `path` names (types included)."""
    return {n for n in imported_names(path) if n.split(".")[0] == "gui_assets"}


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
        assert not any(n.split(".")[0] == "dagster" for n in imported_names(p)), p


# Each folder of the package (and the two top modules) with the folders it may import besides
# itself: the layers stand core <- sources <- pipeline <- publish <- checks <- defs <- definitions,
# with validate (imports nothing) and viewer (only core) beside them, and cli on top.
ALLOWED: dict[str, set[str]] = {
    "core": set(),
    "validate": set(),
    "viewer": {"core"},
    "sources": {"core"},
    "pipeline": {"core", "sources"},
    "publish": {"core", "sources", "pipeline"},
    "checks": {"core", "sources", "pipeline", "publish", "validate"},
    "defs": {"core", "sources", "pipeline", "publish", "checks", "validate", "viewer"},
    "cli": {"core", "sources", "pipeline", "publish", "checks", "validate", "viewer"},
    "definitions": {"core", "sources", "pipeline", "defs"},
    "__init__": {"definitions"},
}
# The shared part of `sources/`: what every source folder may use, and which uses none of them.
SOURCES_SHARED = {
    "spec",
    "assembly",
    "mirror",
    "remote",
    "archives",
    "demo_render",
    "demo_mirror",
    "registry",
}


def folder_of(module: str) -> str:
    """`gui_assets.pipeline.sharding` -> pipeline; `gui_assets` -> __init__."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def upward_imports(graph: dict[str, set[str]], allowed: dict[str, set[str]]) -> list[str]:
    """Every import from a folder to one it may not import, as `module -> module`."""
    return sorted(
        f"{a} -> {b}"
        for a, targets in graph.items()
        for b in targets
        if folder_of(b) != folder_of(a) and folder_of(b) not in allowed[folder_of(a)]
    )


def test_the_package_is_eleven_entries_and_each_folder_says_what_lives_there():
    entries = sorted(
        p.name for p in PACKAGE.iterdir() if p.name != "__pycache__" and not p.name.endswith(".egg-info")
    )
    assert len(entries) <= 12, entries
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == set(ALLOWED) - {"definitions", "__init__"}, folders
    for folder in sorted(folders):
        doc = ast.get_docstring(parse_file(PACKAGE / folder / "__init__.py")) or ""
        assert "import" in doc and len(doc.split()) >= 25, (
            f"{folder}/__init__.py must say what lives there and what it may import"
        )


def test_each_folder_imports_only_the_layers_below_it():
    assert upward_imports(module_graph(), ALLOWED) == []


def test_an_upward_import_is_found():
    graph = {
        "gui_assets.core.ir": {"gui_assets.pipeline.sharding"},
        "gui_assets.pipeline.sharding": {"gui_assets.core.ir"},
    }
    assert upward_imports(graph, ALLOWED) == ["gui_assets.core.ir -> gui_assets.pipeline.sharding"]


def test_a_source_folder_imports_no_other_source_and_the_shared_part_no_source():
    """A source is its folder: it may use the shared reading helpers and the core, never another
    source's folder; the shared part (and every layer above) never names a source's folder, so
    adding or removing one edits nothing else."""
    found = []
    for name, targets in module_graph().items():
        parts = name.split(".")
        own = parts[2] if folder_of(name) == "sources" and len(parts) > 3 else None
        for t in targets:
            tp = t.split(".")
            if folder_of(t) != "sources" or len(tp) < 3 or tp[2] in SOURCES_SHARED:
                continue
            if tp[2] != own:
                found.append(f"{name} -> {t}")
    assert found == []


def test_the_registry_is_imported_only_by_the_location_the_resources_and_the_commands():
    assert importers_of("gui_assets.sources.registry") == {
        "gui_assets.definitions",
        "gui_assets.cli.backfill",
        "gui_assets.cli.demo",  # every partition of every source, for `gui-assets demo`
        "gui_assets.defs.resources",  # the demo mirror's generators and each source's options config
        "gui_assets.cli.docs",  # renders every source's page and the README tables
    }


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
        for node in ast.walk(parse_file(p)):
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


# Process state a module must not touch while it is imported (outside functions): the command
# line, the environment, exit hooks and the collector.
IMPORT_TIME_STATE = {
    ("sys", "argv"),
    ("os", "environ"),
    ("os", "getenv"),
    ("os", "putenv"),
    ("atexit", "register"),
    ("gc", "freeze"),
    ("gc", "disable"),
    ("gc", "set_threshold"),
}


def _is_main_guard(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.If)
        and isinstance(node.test, ast.Compare)
        and isinstance(node.test.left, ast.Name)
        and node.test.left.id == "__name__"
    )


def import_time_nodes(tree: ast.Module) -> list[ast.AST]:
    """The nodes that run when the module is imported: everything but function bodies and the
    `if __name__ == "__main__":` block (class bodies and decorators do run)."""
    found: list[ast.AST] = []
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if _is_main_guard(node):
            continue
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            todo.extend(node.decorator_list)
            todo.extend(d for d in node.args.defaults + node.args.kw_defaults if d is not None)
            continue
        if isinstance(node, ast.Lambda):
            continue
        found.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return found


def test_no_module_touches_process_state_while_it_is_imported():
    """A static twin of test_import_effects: argv, the environment, exit hooks and the collector
    are read or set inside functions only, in every module (the shell's included: it runs them
    when the definitions load)."""
    touched = {}
    for name, path in modules().items():
        for node in import_time_nodes(parse_file(path)):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and (node.value.id, node.attr) in IMPORT_TIME_STATE
            ):
                touched.setdefault(name, []).append(f"{node.value.id}.{node.attr}:{node.lineno}")
    assert not touched


SHELL = ("gui_assets", "gui_assets.definitions", "gui_assets.defs")


def _in_shell(name: str) -> bool:
    return name in SHELL or name.startswith("gui_assets.defs.")


def test_the_shell_reads_no_command_line_swaps_no_module_class_and_tunes_no_allocator():
    """Loading the code location is plain: what a run does is decided by Dagster's own command
    line and the environment, never by the location reading argv; no module object is replaced
    or retyped; the allocator settings are environment variables (gui_assets.core.memory)."""
    found = []
    for name, path in modules().items():
        tree = parse_file(path)
        for node in ast.walk(tree):
            if _in_shell(name) and isinstance(node, ast.Attribute) and node.attr == "argv":
                found.append(f"{name}:{node.lineno} reads argv")
            if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Attribute) and t.attr == "__class__" for t in targets):
                    found.append(f"{name}:{node.lineno} assigns __class__")
        if _in_shell(name) or name == "gui_assets.core.memory":
            low_level = {n for n in imported_names(path) if n.split(".")[0] in ("ctypes", "mmap")}
            found += [f"{name} imports {n}" for n in sorted(low_level)]
    assert not found


def module_graph() -> dict[str, set[str]]:
    """Each package module and the package modules it imports (types and function-level imports
    included): `from p import n` counts as an import of p.n when that is a module, else of p."""
    known = modules()
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        package = path.relative_to(PACKAGE.parent).parts[:-1]
        edges: set[str] = set()
        for node in ast.walk(parse_file(path)):
            if isinstance(node, ast.Import):
                edges.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                anchor = package[: len(package) - node.level + 1] if node.level else ()
                base = ".".join([*anchor, *([node.module] if node.module else [])])
                subs = {f"{base}.{a.name}" for a in node.names} & known.keys()
                edges.update(subs if len(subs) == len(node.names) else {base, *subs})
        graph[name] = {e for e in edges if e in known and e != name}
    return graph


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The graph's strongly connected components of two modules or more (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return circles


def test_the_package_imports_form_no_circle():
    """The modules stand in floors, each above everything it imports (a module's package
    counts as a module), so no import runs back up and no change has to go round a loop."""
    assert import_circles(module_graph()) == []


def test_the_circle_finder_finds_a_circle():
    assert import_circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_package_init_imports_nothing_of_the_package():
    """`import gui_assets` loads no module of its own; `code_location` is built on first access."""
    tree = parse_file(PACKAGE / "__init__.py")
    names = {
        n.module or "" for n in import_time_nodes(tree) if isinstance(n, ast.ImportFrom) and not n.level
    } | {a.name for n in import_time_nodes(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not {n for n in names if n.split(".")[0] == "gui_assets"}, names
    assert imports_of(PACKAGE / "__init__.py") == {"gui_assets.definitions", "gui_assets.definitions.defs"}
