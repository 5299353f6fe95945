"""Importing the package or its core changes nothing in the importing process.

Each probe runs in a fresh interpreter started with -B (so the interpreter itself writes no
bytecode) and compares the process before and after the imports: the collector's state,
the environment, pyarrow's default pool, atexit hooks, glibc loaded through ctypes, Dagster in
sys.modules, and every file under the package's folder.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "gui_assets"
SHELL = ("gui_assets.defs", "gui_assets.definitions")  # the Dagster shell; loading it is a build
OUR_HOOKS = ("gui_assets", "gc.")  # atexit hooks of this package, or the collector's (gc.freeze)

_PROBE = textwrap.dedent(
    """
    import atexit, ctypes, gc, importlib, json, os, sys
    from pathlib import Path

    modules, preload_pyarrow, package = json.loads(sys.argv[1])
    hooks, libraries = [], []
    register = atexit.register

    def recording_register(fn, *args, **kwargs):
        hooks.append(f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}")
        return register(fn, *args, **kwargs)

    class RecordingCDLL(ctypes.CDLL):
        def __init__(self, name, *args, **kwargs):
            libraries.append(str(name))
            super().__init__(name, *args, **kwargs)

    atexit.register = recording_register
    ctypes.CDLL = RecordingCDLL

    def files():
        paths = [p for p in Path(package).rglob("*") if p.is_file()]
        return {str(p): (p.stat().st_mtime_ns, p.stat().st_size) for p in paths}

    def pool():
        if "pyarrow" not in sys.modules:
            return None
        return sys.modules["pyarrow"].default_memory_pool().backend_name

    def state():
        return {
            "gc_enabled": gc.isenabled(),
            "freeze_count": gc.get_freeze_count(),
            "threshold": list(gc.get_threshold()),
            "environ": dict(os.environ),
            "pool": pool(),
        }

    if preload_pyarrow:
        import pyarrow
    tree_before = files()
    before = state()
    for name in modules:
        importlib.import_module(name)
    after = state()
    tree_after = files()
    changed = sorted(p for p in set(tree_before) | set(tree_after) if tree_before.get(p) != tree_after.get(p))
    print(json.dumps({
        "before": before,
        "after": after,
        "hooks": hooks,
        "libraries": libraries,
        "dagster": sorted(m for m in sys.modules if m == "dagster" or m.startswith("dagster.")),
        "changed_files": changed,
    }))
    """
)


def core_modules() -> list[str]:
    """Every module of the package outside the Dagster shell, by its import name; `__main__`
    modules are programs (`python -m ...`), run rather than imported."""
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        if path.name != "__main__.py" and not any(name == s or name.startswith(s + ".") for s in SHELL):
            names.append(name)
    return names


def probe(modules: list[str], preload_pyarrow: bool = False) -> dict[str, Any]:
    """What importing `modules` changed, in a fresh interpreter that writes no bytecode."""
    args = json.dumps([modules, preload_pyarrow, str(PACKAGE)])
    r = subprocess.run(
        [sys.executable, "-B", "-c", _PROBE, args], capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


def pyarrow_default_pool() -> str:
    """The backend a process that only imports pyarrow gets."""
    code = "import pyarrow as pa; print(pa.default_memory_pool().backend_name)"
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


def assert_untouched(seen: dict[str, Any]) -> None:
    before, after = seen["before"], seen["after"]
    assert after["gc_enabled"] is before["gc_enabled"] is True
    assert after["freeze_count"] == before["freeze_count"] == 0
    assert after["threshold"] == before["threshold"]
    assert after["environ"] == before["environ"]
    ours = [h for h in seen["hooks"] if h.startswith(OUR_HOOKS)]
    assert ours == [], ours  # libraries' own hooks (logging, h5py, pyarrow) are theirs
    assert not [lib for lib in seen["libraries"] if "libc" in lib], seen["libraries"]  # no mallopt
    assert seen["dagster"] == [], seen["dagster"][:5]
    assert seen["changed_files"] == [], seen["changed_files"][:5]


def test_there_is_a_core_to_import():
    names = core_modules()
    assert {
        "gui_assets",
        "gui_assets.core.ir",
        "gui_assets.pipeline.chain",
        "gui_assets.pipeline.libero_hdf5",
    } <= set(names)
    assert len(names) > 40 and not [n for n in names if n.startswith(SHELL)]


@pytest.mark.parametrize(
    "modules",
    [
        ["gui_assets"],
        ["gui_assets.core.ir"],
        [
            "gui_assets.pipeline.libero_hdf5",
            "gui_assets.sources.mind2web.adapter",
            "gui_assets.pipeline.chain",
        ],
        ["gui_assets.pipeline.episodes", "gui_assets.publish.preview"],  # these use gui_assets.core.memory
    ],
    ids=["package", "ir", "writer-adapter-pipeline", "memory-users"],
)
def test_importing_core_modules_changes_nothing(modules):
    seen = probe(modules)
    assert_untouched(seen)
    if seen["after"]["pool"] is not None:  # the imports loaded pyarrow: its own default pool stands
        assert seen["after"]["pool"] == pyarrow_default_pool()


def test_importing_every_core_module_changes_nothing():
    assert_untouched(probe(core_modules()))


def test_a_pool_chosen_before_the_import_stays():
    seen = probe(
        ["gui_assets", "gui_assets.pipeline.episodes", "gui_assets.publish.preview"], preload_pyarrow=True
    )
    assert_untouched(seen)
    assert seen["before"]["pool"] == seen["after"]["pool"] == pyarrow_default_pool()


def test_the_package_names_its_definitions_without_building_them():
    """`dir(gui_assets)` lists `code_location` (Dagster's loader for `-m gui_assets` lists members,
    then gets each), nothing is built until it is asked for, and it is the Definitions of
    gui_assets.definitions, whichever of the package's modules were loaded first."""
    code = (
        "import json, sys, gui_assets, gui_assets.defs.partitions;"
        "listed = 'code_location' in dir(gui_assets);"
        "built_early = 'gui_assets.definitions' in sys.modules;"
        "location = gui_assets.code_location;"
        "from gui_assets.definitions import defs;"
        "print(json.dumps([listed, built_early, type(location).__name__, location is defs]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == [True, False, "Definitions", True]


def test_the_package_has_no_other_attribute_on_demand():
    code = "import gui_assets; gui_assets.no_such_name"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 1 and "has no attribute 'no_such_name'" in r.stderr
