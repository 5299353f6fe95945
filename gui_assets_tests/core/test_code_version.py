"""The statement walk behind every code version: each docstring stripped and each runtime import
found, wherever the statement nests (the walk never visits expressions, so this pins that
nothing it needs can hide in one)."""

from __future__ import annotations

import ast
import textwrap

from gui_assets.core.code_version import normalized_source, strip_docstrings_and_find_imports

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
