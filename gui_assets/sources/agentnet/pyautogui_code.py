"""PyAutoGUI action code (AgentNet `traj[i].value.code`) -> one action, parsed, never executed.

The code is parsed with `ast`; every statement must be a call `pyautogui.<name>(...)` or
`computer.<name>(...)` whose arguments are literals, read with `ast.literal_eval` (which
evaluates nothing but literals). Coordinates are normalized to [0, 1] against the screenshot;
values a hair outside (upstream rounding) are clamped, anything further is refused.

Statements combine into one action: `moveTo` + `dragTo` is a drag from the moveTo point,
`moveTo` + `scroll`/`hscroll` scrolls at that point, `moveTo` before a click is pointer travel,
`moveTo` alone is a hover, `write` + `press('enter')` is typing a line (text + "\\n", the
AgentNetBench ground-truth convention). Any other pair of real actions is refused: guessing
which one the demonstrator meant would invent supervision.

Key names are spelled as PyAutoGUI's own table spells them, lower case ('ctrl', 'enter',
'pagedown', 'f5'): recorders write them in any case ('CTRL', 'Enter'). In a `hotkey` every key is
lower-cased, a letter too (['ctrl', 'F'] is ctrl+f: a chord's letter names the key, and a held
shift is a member of its own); in `press` a single character stays as given (press('A') types
a capital, as PyAutoGUI does). Numbers are checked where they are read: finite, whole where a
count is meant, and within bounds no recording reaches (clicks 1-3, presses 1-1000, scroll
amounts up to 10000 units, waits up to an hour); anything else is `malformed_code`.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field
from typing import Any

from gui_assets.core.drops import Drop, DropReason
from gui_assets.core.python_source import parse_python

MODULES = ("pyautogui", "computer")
CLICKS = {
    "click": ("left", 1),
    "leftClick": ("left", 1),
    "doubleClick": ("left", 2),
    "tripleClick": ("left", 3),
    "triple_click": ("left", 3),
    "rightClick": ("right", 1),
    "middleClick": ("middle", 1),
}
KNOWN = {
    *CLICKS,
    "moveTo",
    "dragTo",
    "scroll",
    "hscroll",
    "write",
    "typewrite",
    "press",
    "hotkey",
    "wait",
    "terminate",
}
ENTER_KEYS = {"enter", "return", "\n"}
DROPS = frozenset(
    {
        DropReason.EMPTY_CODE,
        DropReason.UNPARSEABLE_CODE,
        DropReason.UNKNOWN_ACTION_VERB,
        DropReason.MALFORMED_CODE,
        DropReason.COORDINATE_OUT_OF_RANGE,
        DropReason.MULTIPLE_ACTIONS,
        DropReason.DRAG_WITHOUT_START,
    }
)
COORD_SLACK = 0.01  # upstream rounds to 4 decimals and clamps; beyond this it is not normalized
MAX_CLICKS = 3
MAX_PRESSES = 1000
MAX_SCROLL = 10_000  # pyautogui units: Windows sends 3 a notch, macOS pixel-like deltas such as -54
MAX_WAIT = 3600.0  # seconds


class CodeError(Drop):
    """Code that does not make exactly one action; `reason` is the drop reason to count."""


@dataclass(frozen=True, slots=True)
class Call:
    name: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)

    def arg(self, index: int, *names: str, default: Any = None) -> Any:
        for n in names:
            if n in self.kwargs:
                return self.kwargs[n]
        return self.args[index] if len(self.args) > index else default


@dataclass(frozen=True, slots=True)
class Action:
    """One parsed action, before it becomes a GuiStep.

    kind: click | hover | drag | scroll | type | press | hotkey | wait | terminate
    """

    kind: str
    point: tuple[float, float] | None = None
    end: tuple[float, float] | None = None
    button: str = "left"
    clicks: int = 1
    amount: tuple[float, float] = (0.0, 0.0)  # (horizontal, vertical) scroll units, pyautogui signs
    text: str = ""
    keys: tuple[str, ...] = ()
    presses: int = 1
    seconds: float = 0.0
    status: str = ""


def _literal(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as e:
        raise CodeError(DropReason.MALFORMED_CODE, f"argument is not a literal: {ast.dump(node)[:80]}") from e


def parse_calls(code: str) -> list[Call]:
    """The statements of `code` as calls; refuses anything that is not a plain literal call."""
    if not isinstance(code, str) or not code.strip():
        raise CodeError(DropReason.EMPTY_CODE, repr(code)[:80])
    try:
        tree = parse_python(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:  # NUL bytes; nesting too deep
        raise CodeError(DropReason.UNPARSEABLE_CODE, f"{type(e).__name__}: {str(e)[:120]}") from None
    calls = []
    for stmt in tree.body:
        if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
            raise CodeError(DropReason.UNPARSEABLE_CODE, f"not a call: {type(stmt).__name__}")
        func = stmt.value.func
        if not (
            isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in MODULES
        ):
            raise CodeError(DropReason.UNKNOWN_ACTION_VERB, f"call of {ast.unparse(func)[:60]}")
        if func.attr not in KNOWN:
            raise CodeError(DropReason.UNKNOWN_ACTION_VERB, f"{func.value.id}.{func.attr}")
        if any(isinstance(a, ast.Starred) for a in stmt.value.args) or any(
            k.arg is None for k in stmt.value.keywords
        ):
            raise CodeError(DropReason.MALFORMED_CODE, "starred arguments")
        args = tuple(_literal(a) for a in stmt.value.args)
        kwargs = {k.arg: _literal(k.value) for k in stmt.value.keywords if k.arg}
        calls.append(Call(func.attr, args, kwargs))
    return calls


def _is_number(v: Any) -> bool:
    """A real number: no bool, no NaN or infinity (an int of any size is one: ints compare
    exactly, never overflowing as math.isfinite(10**400) would)."""
    if isinstance(v, float):
        return math.isfinite(v)
    return isinstance(v, int) and not isinstance(v, bool)


def _coord(v: Any, what: str) -> float:
    if not _is_number(v):
        raise CodeError(DropReason.MALFORMED_CODE, f"{what} = {str(v)[:40]}")
    if v < -COORD_SLACK or v > 1 + COORD_SLACK:
        raise CodeError(DropReason.COORDINATE_OUT_OF_RANGE, f"{what} = {v} is not normalized")
    return min(max(float(v), 0.0), 1.0)


def _point(call: Call, first: int = 0) -> tuple[float, float] | None:
    """The call's (x, y): keywords, or positional arguments from index `first` on."""
    x, y = call.arg(first, "x"), call.arg(first + 1, "y")
    if isinstance(x, list | tuple) and len(x) == 2 and y is None:  # click((x, y))
        x, y = x
    if x is None and y is None:
        return None
    if x is None or y is None:
        raise CodeError(DropReason.MALFORMED_CODE, f"{call.name} with one coordinate")
    return _coord(x, "x"), _coord(y, "y")


def key_name(key: str, chord: bool) -> str:
    """The canonical spelling of a key: PyAutoGUI's lower-case names; a single character keeps
    its case only when pressed alone (in a chord it names the key)."""
    return key.lower() if chord or len(key) > 1 else key


def _keys(value: Any, call: Call, chord: bool = False) -> tuple[str, ...]:
    keys = value if isinstance(value, list | tuple) else [value]
    if not keys or not all(isinstance(k, str) and k for k in keys):
        raise CodeError(DropReason.MALFORMED_CODE, f"{call.name} keys {str(value)[:60]}")
    return tuple(key_name(k, chord) for k in keys)


def _number(v: Any, call: Call, default: float, lo: float, hi: float, whole: bool = False) -> float:
    """A numeric argument in [lo, hi] (`default` when not given); malformed_code otherwise."""
    if v is None:
        return default
    if not _is_number(v) or not lo <= v <= hi or (whole and v != int(v)):
        raise CodeError(DropReason.MALFORMED_CODE, f"{call.name} argument {str(v)[:40]}")
    return float(v)


def _single(call: Call, hover_at: tuple[float, float] | None) -> Action:
    """One real call as an action; `hover_at` is a preceding moveTo's point."""
    n = call.name
    if n in CLICKS:
        button, clicks = CLICKS[n]
        button = call.kwargs.get("button", button)
        clicks = int(_number(call.kwargs.get("clicks"), call, clicks, 1, MAX_CLICKS, whole=True))
        if button not in ("left", "right", "middle"):
            raise CodeError(DropReason.MALFORMED_CODE, f"{n} button={str(button)[:40]}")
        return Action("click", point=_point(call) or hover_at, button=button, clicks=clicks)
    if n == "dragTo":
        end = _point(call)
        if end is None:
            raise CodeError(DropReason.MALFORMED_CODE, "dragTo without a point")
        if hover_at is None:
            raise CodeError(DropReason.DRAG_WITHOUT_START, "dragTo with no moveTo before it in the step")
        return Action("drag", point=hover_at, end=end, button=call.kwargs.get("button", "left"))
    if n in ("scroll", "hscroll"):
        amount = _number(call.arg(0, "clicks", "amount"), call, 0.0, -MAX_SCROLL, MAX_SCROLL)
        if amount == 0:
            raise CodeError(DropReason.MALFORMED_CODE, f"{n} by 0")
        at = _point(call, first=1)  # scroll(clicks, x=None, y=None)
        vec = (amount, 0.0) if n == "hscroll" else (0.0, amount)
        return Action("scroll", point=at or hover_at, amount=vec)
    if n in ("write", "typewrite"):
        text = call.arg(0, "message", "text")
        if isinstance(text, list | tuple) and all(isinstance(t, str) for t in text):
            text = "".join(text)  # typewrite(['a', 'b']) types each
        if not isinstance(text, str):
            raise CodeError(DropReason.MALFORMED_CODE, f"{n} text {text!r}")
        return Action("type", text=text)
    if n == "press":
        keys = _keys(call.arg(0, "keys", "key"), call)
        presses = int(_number(call.kwargs.get("presses"), call, 1, 1, MAX_PRESSES, whole=True))
        return Action("press", keys=keys, presses=presses)
    if n == "hotkey":
        keys = call.kwargs["keys"] if "keys" in call.kwargs else list(call.args)
        if isinstance(keys, list | tuple) and len(keys) == 1 and isinstance(keys[0], list | tuple):
            keys = keys[0]  # hotkey(['ctrl', 'c'])
        return Action("hotkey", keys=_keys(keys, call, chord=True))  # hotkey(keys='f5') is one key
    if n == "wait":
        return Action("wait", seconds=_number(call.arg(0, "seconds", "duration"), call, 1.0, 0, MAX_WAIT))
    if n == "terminate":
        status = str(call.arg(0, "status", default="success")).lower()
        status = {"fail": "failure", "failed": "failure", "succeed": "success"}.get(status, status)
        if status not in ("success", "failure"):
            raise CodeError(DropReason.MALFORMED_CODE, f"terminate status {status!r}")
        return Action("terminate", status=status)
    raise CodeError(DropReason.UNKNOWN_ACTION_VERB, n)  # moveTo is handled by the caller


def parse_action(code: str) -> Action:
    """The one action a step's code performs. Raises CodeError naming the drop reason."""
    calls = parse_calls(code)
    hover_at: tuple[float, float] | None = None
    real: list[Call] = []
    for call in calls:
        if call.name == "moveTo":
            if real:
                raise CodeError(DropReason.MULTIPLE_ACTIONS, "moveTo after an action")
            hover_at = _point(call)
            if hover_at is None:
                raise CodeError(DropReason.MALFORMED_CODE, "moveTo without a point")
        else:
            real.append(call)
    if not real:
        return Action("hover", point=hover_at)
    if len(real) == 2 and real[0].name in ("write", "typewrite") and real[1].name == "press":
        typed, pressed = _single(real[0], None), _single(real[1], None)
        if pressed.presses == 1 and len(pressed.keys) == 1 and pressed.keys[0].lower() in ENTER_KEYS:
            return Action("type", text=typed.text + "\n")
    if len(real) > 1:
        raise CodeError(DropReason.MULTIPLE_ACTIONS, " + ".join(c.name for c in real))
    return _single(real[0], hover_at)
