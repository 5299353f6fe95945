"""Parsing our own source in the tests that inspect it (layering, safety, docs)."""

from __future__ import annotations

import ast
from pathlib import Path

from gui_assets.core.python_source import parse_python


def parse_file(path: Path) -> ast.Module:
    return parse_python(path.read_text(encoding="utf-8"), filename=str(path))
