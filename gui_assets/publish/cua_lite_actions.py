"""IR steps as cua-lite tool calls, and the plan of one episode's `use` row.

A step is one call: the platform's batch tool for GUI actions (`computer` on desktop and
browser, `mobile` on mobile), or a standalone tool declared in the row's `extra_tool_schemas`
(browser navigation: `goto`, `back`; mobile: `open_app`, `scroll_view`; finishing: `response`). A
step whose observation the recorder never captured (`obs_stale`: the later actions of an
upstream batch) joins the previous `computer` call, so no tool result shows a screen that was
not the one after the call. Coordinates are integers in [0, 1000].

Mapping: CLICK / SELECT -> click (button and clicks, at most 3, from desc; SELECT's option stays
in the action_description; a click the source recorded with no point, `no_point`, has no
coordinate, which cua-lite reads as a click where the pointer is: exactly what was recorded);
HOVER -> mouse_move; DRAG -> drag; SCROLL -> scroll in the view's direction, `amount` whole
units of 0.05 of the frame (at least 1) at the gesture's start; TYPE -> type (a grounded
TYPE is a click at its point, then type: cua-lite's type has no point); PRESS_ENTER -> key enter; PRESS_KEY ->
key / type actions (`cua_lite_keys`); WAIT -> wait for the seconds in desc (1 when desc names
none, at most cua-lite's 30); GOTO -> `goto(url)` on a browser, ctrl+l then typing the url and
Enter on a desktop; PRESS_BACK -> `back()` on a browser, alt+left on a desktop.

Mobile (the `mobile` batch: tap, long_press, swipe, drag, type, system_button, wait): CLICK /
SELECT -> tap (long_press for a `long_press(...)` desc, clicks 2 for a double one); a grounded
SCROLL -> swipe along the finger's travel, the gesture (x1, y1) -> (x2, y2); DRAG -> drag; TYPE
-> type (a grounded TYPE taps its point first); PRESS_BACK / PRESS_HOME / PRESS_ENTER ->
system_button Back / Home / Enter; PRESS_KEY naming the app switcher (KEY_APPSELECT, recent,
...) or the menu -> system_button Recent / Menu, any other key is `unmapped_keys`; WAIT -> wait.
Two recorded actions have no child in the batch and are declared standalone tools instead,
carrying exactly what was recorded: GOTO (opening an app, its name in action_text) ->
`open_app(app_name)`, and a SCROLL with no gesture (a source that records the direction only) ->
`scroll_view(direction)`, the view direction its desc names; no swipe is ever made up for it.
HOVER has no mobile equivalent (`no_equivalent`).

Finishing (cua-lite's convention for `use` rows: no terminal `terminate` is persisted): a STOP
ends the row with the content-only assistant turn "Done." (a STOP with text with the
`response(text)` call instead); a FAIL ends it at the last action. Either way
`others.terminated` is true and `others.terminate_status` says success or failure; steps after
a finish are left out (`after_finish`).

Inexpressible steps (STEP_DROPS): an ungrounded HOVER or DRAG (cua-lite requires their
coordinate and none is ever invented); an ungrounded CLICK / SELECT whose element could not be
located (a click without coordinate would say "where the pointer is", a place the demonstration
never clicked); an ungrounded SCROLL (cua-lite requires an amount, and the gesture's was lost);
PRESS_HOME (a phone's Home button: no desktop or browser equivalent), a PRESS_KEY none of whose
chords maps. Rule: the row ends before the first such step (everything before it is a faithful
prefix; a dropped step in the middle would show its effect as the previous call's result).
The row's others say `truncated: true` and `truncated_reason`; the step is counted by its
reason and the steps after it as `after_row_end`. An episode left with no assistant turn at all
is left out (`no_action`).
"""

from __future__ import annotations

import copy
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from gui_assets.core.ir import ActionType, GuiStep, fmt_coord, view_direction
from gui_assets.publish.cua_lite_keys import press_actions

COMPUTER = "computer"
MOBILE = "mobile"
BATCH_TOOLS = (COMPUTER, MOBILE)
RESPONSE, TERMINATE, GOTO, BACK = "response", "terminate", "goto", "back"
OPEN_APP, SCROLL_VIEW = "open_app", "scroll_view"
FINISH_TOOLS = (RESPONSE, TERMINATE)
SCROLL_UNIT = 0.05
DIRECTIONS = ("up", "down", "left", "right")
MAX_WAIT_SECONDS = 30
DONE = "Done."

UNGROUNDED_HOVER = "ungrounded_hover"
UNGROUNDED_DRAG = "ungrounded_drag"
UNGROUNDED_CLICK = "ungrounded_click"
UNGROUNDED_SCROLL = "ungrounded_scroll"
NO_EQUIVALENT = "no_equivalent"
UNMAPPED_KEYS = "unmapped_keys"
AFTER_ROW_END = "after_row_end"
AFTER_FINISH = "after_finish"
NO_ACTION = "no_action"
STEP_DROPS = (
    UNGROUNDED_HOVER,
    UNGROUNDED_DRAG,
    UNGROUNDED_CLICK,
    UNGROUNDED_SCROLL,
    NO_EQUIVALENT,
    UNMAPPED_KEYS,
)
CLICK_AT_POINTER = "no_point"  # the ungrounded reason of a click the source recorded with no point


def _schema(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """A tool declaration in cua-lite's nested shape, its parameters a JSON Schema object."""
    parameters = {"type": "object", "properties": properties, "required": required}
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


TOOL_SCHEMAS: dict[str, dict[str, Any]] = {
    RESPONSE: _schema(
        RESPONSE,
        "Answer the user and end the task.",
        {"text": {"type": "string", "description": "The answer."}},
        ["text"],
    ),
    TERMINATE: _schema(
        TERMINATE,
        "End the task, saying whether it succeeded.",
        {
            "status": {"type": "string", "enum": ["success", "failure"]},
            "reason": {"type": "string", "description": "Why the task ended this way."},
        },
        ["status"],
    ),
    GOTO: _schema(GOTO, "Open a URL in the current tab.", {"url": {"type": "string"}}, ["url"]),
    BACK: _schema(BACK, "Go back one page in the current tab's history.", {}, []),
    OPEN_APP: _schema(
        OPEN_APP,
        "Open an app on the device by its name.",
        {"app_name": {"type": "string", "description": "The app's name as the launcher shows it."}},
        ["app_name"],
    ),
    SCROLL_VIEW: _schema(
        SCROLL_VIEW,
        "Scroll the screen so the view moves in a direction (the content moves the other way).",
        {"direction": {"type": "string", "enum": list(DIRECTIONS)}},
        ["direction"],
    ),
}
# Every row of a platform declares the same tools, so a model sees one tool set per platform.
PLATFORM_TOOLS: dict[str, tuple[str, ...]] = {
    "desktop": (RESPONSE, TERMINATE),
    "browser": (RESPONSE, TERMINATE, GOTO, BACK),
    "mobile": (RESPONSE, TERMINATE, OPEN_APP, SCROLL_VIEW),
}
# A PRESS_KEY's text (lower case, `key_` prefix dropped) -> the mobile system button it presses.
SYSTEM_BUTTON_KEYS: dict[str, str] = {
    "appselect": "Recent",
    "app_switch": "Recent",
    "recent": "Recent",
    "recents": "Recent",
    "overview": "Recent",
    "menu": "Menu",
    "back": "Back",
    "home": "Home",
    "enter": "Enter",
}


def extra_tool_schemas(platform: str) -> list[dict[str, Any]]:
    return [copy.deepcopy(TOOL_SCHEMAS[name]) for name in PLATFORM_TOOLS[platform]]


def _k(v: float) -> int:
    return max(0, min(1000, round(v * 1000)))


def description(step: GuiStep) -> str:
    """The step's desc as an SFT target beside tool calls in integer [0, 1000] coordinates: the
    coordinates the desc renders ('click(0.71, 0.78)', from the unmasked params) in the same
    integers ('click(710, 780)'). Anything else it says (a view direction, typed text that happens
    to hold numbers, a wait's seconds) is left as it is."""
    slots = [i for i in range(4) if step.mask[i]]
    if not slots:
        return step.desc
    verb, paren, _ = step.desc.partition("(")
    rendered = ", ".join(fmt_coord(step.params[i]) for i in slots)
    prefix = f"{verb}({rendered}"
    if not paren or not step.desc.startswith(prefix):
        return step.desc
    rest = step.desc[len(prefix) :]
    if rest[:1] not in (",", ")"):  # the rendered coordinates must end there, not run on into digits
        return step.desc
    return f"{verb}({', '.join(str(_k(step.params[i])) for i in slots)}{rest}"


_CLICK_DESC = re.compile(r"(?:(left|right|middle)_)?(double_|triple_)?click(?:_x(\d+))?\(")


def _click(step: GuiStep) -> dict[str, Any]:
    """A click; button and count come from desc (`right_click(...)`, `double_click(...)`,
    `left_click_x2(...)`), a plain click for any other verb (`select(...)`, `check(...)`)."""
    action: dict[str, Any] = {"action": "click"}
    if step.grounded:
        action["coordinate"] = [_k(step.params[0]), _k(step.params[1])]
    named = _CLICK_DESC.match(step.desc)
    button, prefix, count = named.groups() if named else (None, None, None)
    if button in ("right", "middle"):
        action["button"] = button
    clicks = int(count) if count else {"double_": 2, "triple_": 3}.get(prefix or "", 1)
    if clicks > 1:
        action["clicks"] = min(clicks, 3)  # cua-lite counts 1, 2 or 3
    return action


def _scroll(step: GuiStep) -> dict[str, Any] | str:
    p = step.params
    if not step.grounded:
        return UNGROUNDED_SCROLL
    magnitude = max(abs(p[2] - p[0]), abs(p[3] - p[1]))
    return {
        "action": "scroll",
        "direction": view_direction(p),
        "amount": max(1, round(magnitude / SCROLL_UNIT)),
        "coordinate": [_k(p[0]), _k(p[1])],
    }


def _wait(step: GuiStep) -> dict[str, Any]:
    named = re.fullmatch(r"wait\(([0-9]+(?:\.[0-9]*)?)\)", step.desc)
    seconds = min(float(named.group(1)), MAX_WAIT_SECONDS) if named else 1.0
    seconds = seconds if seconds > 0 else 1.0
    return {"action": "wait", "duration": int(seconds) if seconds.is_integer() else seconds}


def computer_actions(step: GuiStep, key_drops: Counter[str]) -> list[dict[str, Any]] | str:
    """The `computer` actions of one desktop/browser step, or the STEP_DROPS reason it has none."""
    t, p = step.action_type, step.params
    if t in (ActionType.CLICK, ActionType.SELECT):
        if not step.grounded and step.ungrounded_reason != CLICK_AT_POINTER:
            return UNGROUNDED_CLICK
        return [_click(step)]
    if t == ActionType.HOVER:
        return (
            [{"action": "mouse_move", "coordinate": [_k(p[0]), _k(p[1])]}]
            if step.grounded
            else UNGROUNDED_HOVER
        )
    if t == ActionType.DRAG:
        if not step.grounded:
            return UNGROUNDED_DRAG
        return [
            {"action": "drag", "start_coordinate": [_k(p[0]), _k(p[1])], "coordinate": [_k(p[2]), _k(p[3])]}
        ]
    if t == ActionType.SCROLL:
        scroll = _scroll(step)
        return scroll if isinstance(scroll, str) else [scroll]
    if t == ActionType.TYPE:
        typing = {"action": "type", "text": step.text}
        if step.grounded:  # cua-lite's type has no point: click where the source typed, then type
            return [{"action": "click", "coordinate": [_k(p[0]), _k(p[1])]}, typing]
        return [typing]
    if t == ActionType.PRESS_ENTER:
        return [{"action": "key", "keys": ["enter"]}]
    if t == ActionType.PRESS_KEY:
        actions, dropped = press_actions(step.text)
        key_drops.update(dropped)
        return actions or UNMAPPED_KEYS
    if t == ActionType.PRESS_BACK:
        return [{"action": "key", "keys": ["alt", "left"]}]
    if t == ActionType.GOTO:
        return [{"action": "key", "keys": ["ctrl", "l"]}, {"action": "type", "text": step.text + "\n"}]
    if t == ActionType.WAIT:
        return [_wait(step)]
    if t == ActionType.PRESS_HOME:
        return NO_EQUIVALENT
    raise ValueError(f"{t.name} is a finish, not an action: plan_episode handles it")


def _point(step: GuiStep, end: bool = False) -> list[int]:
    i = 2 if end else 0
    return [_k(step.params[i]), _k(step.params[i + 1])]


def _tap(step: GuiStep) -> dict[str, Any]:
    if step.desc.startswith("long_press("):
        return {"action": "long_press", "coordinate": _point(step)}
    named = _CLICK_DESC.match(step.desc)
    double = bool(named and (named.group(2) == "double_" or named.group(3) == "2"))
    return {"action": "tap", "coordinate": _point(step), **({"clicks": 2} if double else {})}


def _system_button(name: str) -> list[dict[str, Any]] | str:
    key = name.strip().lower().removeprefix("key_")
    button = SYSTEM_BUTTON_KEYS.get(key)
    return [{"action": "system_button", "button": button}] if button else UNMAPPED_KEYS


def mobile_actions(step: GuiStep) -> list[dict[str, Any]] | str:
    """The `mobile` actions of one step (none of GOTO or a SCROLL without gesture: `express`
    makes those standalone calls), or the STEP_DROPS reason it has none."""
    t = step.action_type
    pointer = {
        ActionType.CLICK: UNGROUNDED_CLICK,
        ActionType.SELECT: UNGROUNDED_CLICK,
        ActionType.DRAG: UNGROUNDED_DRAG,
    }
    if t in pointer and not step.grounded:
        return pointer[t]  # tap and drag need their points: none is invented
    buttons = {ActionType.PRESS_BACK: "Back", ActionType.PRESS_HOME: "Home", ActionType.PRESS_ENTER: "Enter"}
    if t in (ActionType.CLICK, ActionType.SELECT):
        return [_tap(step)]
    if t == ActionType.SCROLL:  # the gesture is the finger's travel: a swipe replays it
        return [{"action": "swipe", "start_coordinate": _point(step), "coordinate": _point(step, True)}]
    if t == ActionType.DRAG:
        return [{"action": "drag", "start_coordinate": _point(step), "coordinate": _point(step, True)}]
    if t == ActionType.TYPE:
        typing = {"action": "type", "text": step.text}
        return [{"action": "tap", "coordinate": _point(step)}, typing] if step.grounded else [typing]
    if t in buttons:
        return [{"action": "system_button", "button": buttons[t]}]
    if t == ActionType.PRESS_KEY:
        return _system_button(step.text)
    if t == ActionType.WAIT:
        return [_wait(step)]
    if t == ActionType.HOVER:
        return NO_EQUIVALENT
    raise ValueError(f"{t.name} is not a mobile batch action: express or plan_episode handles it")


def _express_mobile(step: GuiStep) -> tuple[str, dict[str, Any]] | str:
    if step.action_type == ActionType.GOTO:
        return OPEN_APP, {"app_name": step.text}
    if step.action_type == ActionType.SCROLL and not step.grounded:
        said = set(re.findall(r"\b(up|down|left|right)\b", step.desc))
        return (SCROLL_VIEW, {"direction": said.pop()}) if len(said) == 1 else UNGROUNDED_SCROLL
    actions = mobile_actions(step)
    return actions if isinstance(actions, str) else (MOBILE, {"actions": actions})


def express(step: GuiStep, platform: str, key_drops: Counter[str]) -> tuple[str, dict[str, Any]] | str:
    """(tool, arguments) of one step, or the STEP_DROPS reason it cannot be a call."""
    if platform == "mobile":
        return _express_mobile(step)
    if platform == "browser" and step.action_type == ActionType.GOTO:
        return GOTO, {"url": step.text}
    if platform == "browser" and step.action_type == ActionType.PRESS_BACK:
        return BACK, {}
    actions = computer_actions(step, key_drops)
    return actions if isinstance(actions, str) else (COMPUTER, {"actions": actions})


@dataclass(slots=True)
class Call:
    """One assistant tool call and the steps it carries (several when later ones were stale)."""

    tool: str
    arguments: dict[str, Any]
    steps: list[GuiStep]


@dataclass(slots=True)
class RowPlan:
    """What one episode's row holds; `left_out` reason non-empty when it has no row at all."""

    calls: list[Call] = field(default_factory=list)
    done: GuiStep | None = None  # a STOP shown as the final "Done." turn, on its own screen
    others: dict[str, Any] = field(default_factory=dict)
    steps_left_out: Counter[str] = field(default_factory=Counter)
    keys_dropped: Counter[str] = field(default_factory=Counter)
    left_out: str = ""


def _finish(plan: RowPlan, step: GuiStep) -> None:
    ok = step.action_type == ActionType.STOP
    plan.others.update({"terminated": True, "terminate_status": "success" if ok else "failure"})
    if ok and step.text:
        plan.calls.append(Call(RESPONSE, {"text": step.text}, [step]))
    elif ok:
        plan.done = step


def plan_episode(steps: list[GuiStep], platform: str) -> RowPlan:
    """The calls of one episode's row under the finishing and inexpressible-step rules above."""
    plan = RowPlan()
    for t, step in enumerate(steps):
        rest = len(steps) - t - 1
        if step.action_type in (ActionType.STOP, ActionType.FAIL):
            _finish(plan, step)
            plan.steps_left_out[AFTER_FINISH] += rest
            break
        got = express(step, platform, plan.keys_dropped)
        if isinstance(got, str):
            plan.steps_left_out[got] += 1
            plan.steps_left_out[AFTER_ROW_END] += rest
            plan.others.update({"truncated": True, "truncated_reason": got})
            break
        tool, arguments = got
        last = plan.calls[-1] if plan.calls else None
        if step.obs_stale and last is not None and last.tool == tool and tool in BATCH_TOOLS:
            last.arguments["actions"].extend(arguments["actions"])
            last.steps.append(step)
        else:
            plan.calls.append(Call(tool, arguments, [step]))
    if not plan.calls and plan.done is None:
        plan.left_out = NO_ACTION
        plan.steps_left_out[NO_ACTION] += len(steps) - sum(plan.steps_left_out.values())
    plan.steps_left_out = +plan.steps_left_out  # no zero counts
    return plan
