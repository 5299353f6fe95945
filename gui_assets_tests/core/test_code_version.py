"""The statement walk behind every code version: each docstring stripped and each runtime import
found, wherever the statement nests (the walk never visits expressions, so this pins that
nothing it needs can hide in one); and the disk cache of each module's analysis, which must give
exactly what parsing the module gives."""

from __future__ import annotations

import ast
import hashlib
import json
import textwrap
from collections.abc import Iterator
from pathlib import Path
from unittest.mock import patch

import pytest

from gui_assets.core import code_version
from gui_assets.core.code_version import PACKAGE_DIR, normalized_source, strip_docstrings_and_find_imports

NESTED = textwrap.dedent(
    '''
    """Module docstring."""
    import os
    from typing import TYPE_CHECKING

    if TYPE_CHECKING:
        from gui_assets.core.ir import GuiEpisode

        class OnlyForTypes:
            """Stripped too."""
    else:
        import json

    class Outer:
        """Class docstring."""

        def method(self):
            """Method docstring."""
            try:
                import av
            except ImportError:
                from . import sibling
            finally:
                with open(os.devnull) as fh:
                    for _ in fh:
                        while True:
                            from ..core import images
                            break
            match self:
                case Outer():
                    async def inner():
                        """Inner docstring."""
                        import zlib
                    return inner

    def only_a_docstring():
        """Nothing else."""
    '''
)


def test_every_nested_docstring_goes_and_every_runtime_import_is_found():
    tree = ast.parse(NESTED)
    imports = strip_docstrings_and_find_imports(tree, "gui_assets.pipeline.frames", is_package=False)
    assert imports == {
        "os",
        "typing",
        "typing.TYPE_CHECKING",
        "json",
        "av",
        "gui_assets.pipeline",
        "gui_assets.pipeline.sibling",
        "gui_assets.core",
        "gui_assets.core.images",
        "zlib",
    }
    left = [
        node.body[0].value.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    ]
    assert left == []
    only = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "only_a_docstring")
    assert isinstance(only.body[0], ast.Pass)


def test_docstrings_and_comments_leave_the_normalized_source_as_it_was():
    bare = ast.parse("def f(x):\n    return x + 1\n")
    noisy = ast.parse('def f( x ):  # why\n    """Adds one."""\n    return x+1\n')
    strip_docstrings_and_find_imports(bare, "m", is_package=False)
    strip_docstrings_and_find_imports(noisy, "m", is_package=False)
    assert normalized_source(bare) == normalized_source(noisy)
    changed = ast.parse("def f(x):\n    return x + 2\n")
    assert normalized_source(changed) != normalized_source(bare)


# --- the analysis cache -------------------------------------------------------------------


def _fresh(path: Path, name: str) -> tuple[str, frozenset[str]]:
    """A module's analysis computed from its source, without the cache."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imports = frozenset(strip_docstrings_and_find_imports(tree, name, path.name == "__init__.py"))
    return hashlib.sha256(normalized_source(tree).encode()).hexdigest(), imports


def _analysed(path: Path, name: str) -> tuple[str, frozenset[str]]:
    code_version._analysis.cache_clear()  # as a new process would: only the disk cache is left
    return code_version._analysis(path, code_version._stamp(path), name)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    yield tmp_path / "cache" / "gui_assets" / "code_versions"
    code_version._analysis.cache_clear()


def test_a_kept_analysis_is_the_one_the_source_gives_for_every_module(cache: Path) -> None:
    modules = {
        ".".join(p.relative_to(PACKAGE_DIR.parent).with_suffix("").parts).removesuffix(".__init__"): p
        for p in sorted(PACKAGE_DIR.rglob("*.py"))
    }
    cold = {name: _analysed(path, name) for name, path in modules.items()}
    assert len(list(cache.glob("*.json"))) == len(modules)  # one entry per module
    with patch.object(code_version, "parse_python", side_effect=AssertionError("parsed again")):
        warm = {name: _analysed(path, name) for name, path in modules.items()}
    assert cold == warm == {name: _fresh(path, name) for name, path in modules.items()}


def test_an_edit_is_analysed_anew_and_the_old_entry_never_answers_for_it(
    cache: Path, tmp_path: Path
) -> None:
    module = tmp_path / "pkg" / "m.py"
    module.parent.mkdir()
    module.write_text("import os\nX = 1\n", encoding="utf-8")
    first = _analysed(module, "gui_assets.m")
    module.write_text("import json\nX = 2\n", encoding="utf-8")  # same size, maybe the same second
    second = _analysed(module, "gui_assets.m")
    assert second == _fresh(module, "gui_assets.m") != first
    assert second[1] == {"json"} and len(list(cache.glob("*.json"))) == 2
    # The same bytes under another name resolve relative imports differently: another entry.
    module.write_text("from . import sibling\n", encoding="utf-8")
    assert _analysed(module, "gui_assets.a.m")[1] == {"gui_assets.a", "gui_assets.a.sibling"}
    assert _analysed(module, "gui_assets.b.m")[1] == {"gui_assets.b", "gui_assets.b.sibling"}


def test_a_damaged_or_unwritable_cache_costs_a_parse_never_a_wrong_answer(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = tmp_path / "m.py"
    module.write_text('"""Doc."""\nimport zlib\n', encoding="utf-8")
    want = _fresh(module, "gui_assets.m")
    assert _analysed(module, "gui_assets.m") == want
    (entry,) = cache.glob("*.json")
    for damage in ("", '{"digest": "0"', '{"digest": "0"}', "[1, 2]"):
        entry.write_text(damage, encoding="utf-8")
        assert _analysed(module, "gui_assets.m") == want
        assert json.loads(entry.read_text(encoding="utf-8"))["digest"] == want[0]  # written again
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("x", encoding="utf-8")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    assert _analysed(module, "gui_assets.m") == want
    assert blocked.read_text(encoding="utf-8") == "x"
