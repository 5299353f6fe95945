"""`ast.parse` that survives a CPython 3.11 race.

CPython 3.11 keeps the AST builder's recursion counter per interpreter rather than per thread, so
a parse that overlaps another thread's parse (AgentNet's action code parsed on writer threads, or
a library thread in the same process) can raise `SystemError: AST constructor recursion depth
mismatch` for valid input (python/cpython#106905 and its follow-ups). Parsing is deterministic,
so retrying that one error gives the true answer; every other error surfaces unchanged.
"""

from __future__ import annotations

import ast
import time

_ATTEMPTS = 5


def parse_python(text: str, filename: str = "<unknown>", mode: str = "exec") -> ast.Module:
    for attempt in range(_ATTEMPTS):
        try:
            return ast.parse(text, filename=filename, mode=mode)
        except SystemError as e:
            if "recursion depth mismatch" not in str(e) or attempt == _ATTEMPTS - 1:
                raise
            time.sleep(0.01 * (attempt + 1))
    raise AssertionError("unreachable")
