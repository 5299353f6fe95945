"""The PyAutoGUI code parser: every call form AgentNet uses, combinations, refusals, no execution."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gui_assets.sources.agentnet.pyautogui_code import Action, CodeError, parse_action

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "agentnet"


@pytest.mark.parametrize(
    ("code", "want"),
    [
        ("pyautogui.click(x=0.1632, y=0.2711)", Action("click", point=(0.1632, 0.2711))),
        ("pyautogui.click(0.5, 0.25)", Action("click", point=(0.5, 0.25))),
        ("pyautogui.click(x=0.5, y=0.5, button='right')", Action("click", point=(0.5, 0.5), button="right")),
        ("pyautogui.click(x=0.5, y=0.5, clicks=2)", Action("click", point=(0.5, 0.5), clicks=2)),
        ("pyautogui.doubleClick(x=0.4, y=0.5)", Action("click", point=(0.4, 0.5), clicks=2)),
        ("pyautogui.tripleClick(x=0.4, y=0.5)", Action("click", point=(0.4, 0.5), clicks=3)),
        ("computer.tripleClick(x=0.4, y=0.5)", Action("click", point=(0.4, 0.5), clicks=3)),
        ("computer.triple_click(x=0.4, y=0.5)", Action("click", point=(0.4, 0.5), clicks=3)),
        ("pyautogui.rightClick(x=0.9553, y=0.5117)", Action("click", point=(0.9553, 0.5117), button="right")),
        ("pyautogui.middleClick(x=0.3, y=0.2)", Action("click", point=(0.3, 0.2), button="middle")),
        ("pyautogui.moveTo(x=0.3, y=0.2)", Action("hover", point=(0.3, 0.2))),
        (
            "pyautogui.moveTo(x=0.4546, y=0.2682)\npyautogui.dragTo(x=0.4107, y=0.2773, button='left')",
            Action("drag", point=(0.4546, 0.2682), end=(0.4107, 0.2773)),
        ),
        (
            "pyautogui.moveTo(x=0.396, y=0.7839)\npyautogui.scroll(-3)",
            Action("scroll", point=(0.396, 0.7839), amount=(0.0, -3.0)),
        ),
        ("pyautogui.scroll(-54)", Action("scroll", amount=(0.0, -54.0))),
        ("pyautogui.scroll(5, x=0.2, y=0.3)", Action("scroll", point=(0.2, 0.3), amount=(0.0, 5.0))),
        (
            "pyautogui.moveTo(x=0.5, y=0.6)\npyautogui.hscroll(2)",
            Action("scroll", point=(0.5, 0.6), amount=(2.0, 0.0)),
        ),
        ("pyautogui.write(message='it''s \"quoted\"\\nline')", Action("type", text='its "quoted"\nline')),
        ("pyautogui.write('positional')", Action("type", text="positional")),
        ("pyautogui.typewrite(message='Zürich ✓')", Action("type", text="Zürich ✓")),
        ("pyautogui.typewrite(['a', 'b'])", Action("type", text="ab")),
        ("pyautogui.press('enter')", Action("press", keys=("enter",))),
        ("pyautogui.press(keys=['enter'])", Action("press", keys=("enter",))),
        ("pyautogui.press('down', presses=3)", Action("press", keys=("down",), presses=3)),
        ("pyautogui.press(['left', 'left'])", Action("press", keys=("left", "left"))),
        ("pyautogui.hotkey(['ctrl', 'c'])", Action("hotkey", keys=("ctrl", "c"))),
        ("pyautogui.hotkey('ctrl', 'shift', 't')", Action("hotkey", keys=("ctrl", "shift", "t"))),
        ("pyautogui.hotkey(keys=['ctrl', 'F'])", Action("hotkey", keys=("ctrl", "f"))),
        ("pyautogui.hotkey(['CTRL', 'c'])", Action("hotkey", keys=("ctrl", "c"))),
        ("pyautogui.hotkey('Ctrl', 'Shift', 'T')", Action("hotkey", keys=("ctrl", "shift", "t"))),
        ("pyautogui.hotkey(['alt', 'Å'])", Action("hotkey", keys=("alt", "å"))),
        ("pyautogui.hotkey(keys='F5')", Action("hotkey", keys=("f5",))),  # one key, not its letters
        ("pyautogui.press('Enter')", Action("press", keys=("enter",))),
        (
            "pyautogui.press(['PageDown', 'A'])",
            Action("press", keys=("pagedown", "A")),
        ),  # 'A' types a capital
        ("pyautogui.click(x=0.5, y=0.5, clicks=3.0)", Action("click", point=(0.5, 0.5), clicks=3)),
        ("pyautogui.hotkey(['alt', 'å'])", Action("hotkey", keys=("alt", "å"))),
        ("computer.wait()", Action("wait", seconds=1.0)),
        ("computer.wait(2)", Action("wait", seconds=2.0)),
        ("computer.terminate(status='success')", Action("terminate", status="success")),
        ("computer.terminate(status='failure')", Action("terminate", status="failure")),
        ("computer.terminate(status='fail')", Action("terminate", status="failure")),
        (
            "pyautogui.write(message='SPOTIFY')\npyautogui.press(keys=['enter'])",
            Action("type", text="SPOTIFY\n"),
        ),
        ("pyautogui.moveTo(x=0.2, y=0.2)\npyautogui.click(x=0.3, y=0.3)", Action("click", point=(0.3, 0.3))),
        ("pyautogui.moveTo(x=0.2, y=0.2)\npyautogui.click()", Action("click", point=(0.2, 0.2))),
        ("pyautogui.click(x=1.00004, y=-0.00002)", Action("click", point=(1.0, 0.0))),  # rounding: clamped
    ],
)
def test_every_call_form(code, want):
    assert parse_action(code) == want


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        ("", "empty_code"),
        ("pyautogui.click(x=0.1, y=", "unparseable_code"),
        ("x = 1", "unparseable_code"),
        ("print('hi')", "unknown_action_verb"),
        ("pyautogui.screenshot()", "unknown_action_verb"),
        ("os.system('rm -rf /')", "unknown_action_verb"),
        ("__import__('os').system('true')", "unknown_action_verb"),
        ("pyautogui.click(x=__import__('os').getpid(), y=0.1)", "malformed_code"),
        ("pyautogui.click(x=float('nan'), y=0.1)", "malformed_code"),
        ("pyautogui.click(x=512, y=300)", "coordinate_out_of_range"),
        ("pyautogui.click(x=0.5)", "malformed_code"),
        ("pyautogui.click(x=0.1, y=0.1)\npyautogui.click(x=0.2, y=0.2)", "multiple_actions"),
        (
            "pyautogui.moveTo(x=0.3, y=0.3)\npyautogui.dragTo(x=0.4, y=0.4)\npyautogui.hotkey('ctrl', 's')",
            "multiple_actions",
        ),
        ("pyautogui.write('a')\npyautogui.press('tab')", "multiple_actions"),
        ("pyautogui.dragTo(x=0.4, y=0.4)", "drag_without_start"),
        ("pyautogui.scroll(0)", "malformed_code"),
        ("computer.terminate(status='maybe')", "malformed_code"),
        ("pyautogui.press(keys=[])", "malformed_code"),
        ("pyautogui.click(*[0.1, 0.2])", "malformed_code"),
        ("pyautogui.click(x=0.1, y=0.1)\x00", "unparseable_code"),
        ("pyautogui.click(x=" + "-" * 200_000 + "1, y=0.1)", "unparseable_code"),  # MemoryError in ast
        ("pyautogui.click(x=" + "(" * 300 + "0.1" + ")" * 300 + ", y=0.1)", "unparseable_code"),
        ("pyautogui.click(x=1" + "0" * 400 + ", y=0.1)", "coordinate_out_of_range"),  # no OverflowError
        ("pyautogui.click(x=1e999, y=0.1)", "malformed_code"),
        ("pyautogui.hotkey(keys=['ctrl', 3])", "malformed_code"),
    ],
)
def test_refusals_name_their_reason(code, reason):
    with pytest.raises(CodeError) as e:
        parse_action(code)
    assert e.value.reason == reason


def test_code_is_never_executed(tmp_path):
    marker = tmp_path / "ran"
    for code in (
        f"pyautogui.click(x=open({str(marker)!r}, 'w'), y=0.1)",
        f"__import__('pathlib').Path({str(marker)!r}).touch()",
    ):
        with pytest.raises(CodeError):
            parse_action(code)
    assert not marker.exists()


def test_every_step_of_the_real_samples_parses():
    """The OpenCUA example trajectory and both AgentNetBench samples, as published."""
    row = json.loads((SAMPLES / "cot_example" / "raw_example.jsonl").read_text().splitlines()[0])
    kinds = [parse_action(s["value"]["code"]).kind for s in row["traj"]]
    assert kinds[:6] == ["click", "click", "click", "drag", "click", "scroll"] and kinds[-1] == "terminate"
    assert parse_action(row["traj"][1]["value"]["code"]).button == "right"
    for f in sorted((SAMPLES / "agentnetbench").glob("*.json")):
        for s in json.loads(f.read_text())["steps"]:
            parse_action(s["action"])  # raises on any form we do not cover
    mac = json.loads((SAMPLES / "agentnetbench" / "s_7f27a11115e596eb.json").read_text())
    actions = {s["step_num"]: parse_action(s["action"]) for s in mac["steps"]}
    assert actions[1] == Action("type", text="SPOTIFY\n")
    assert actions[7] == Action("scroll", point=(0.4496, 0.7349), amount=(0.0, -54.0))


HOSTILE = {"nan": "float('nan')", "inf": "1e999", "-inf": "-1e999", "negative": "-2", "huge": "1" + "0" * 400}


@pytest.mark.parametrize("value", HOSTILE.values(), ids=HOSTILE.keys())
@pytest.mark.parametrize(
    "template",
    [
        "pyautogui.click(x=0.5, y=0.5, clicks={})",
        "pyautogui.press('down', presses={})",
        "computer.wait({})",
        "pyautogui.click(x={}, y=0.5)",
        "pyautogui.moveTo(x=0.5, y={})\npyautogui.dragTo(x=0.6, y=0.6)",
    ],
    ids=["clicks", "presses", "wait", "x", "drag_start_y"],
)
def test_every_guarded_number_refuses_nan_inf_negative_and_huge(template, value):
    with pytest.raises(CodeError) as e:
        parse_action(template.format(value))
    finite = value in (HOSTILE["negative"], HOSTILE["huge"])  # a real number, off the screen
    coordinate = finite and template.startswith(("pyautogui.click(x={}", "pyautogui.moveTo"))
    # float('nan') is a call, never evaluated: refused like any other argument that is no literal
    assert e.value.reason == ("coordinate_out_of_range" if coordinate else "malformed_code")


@pytest.mark.parametrize("value", ["float('nan')", "1e999", "-1e999", "1" + "0" * 400, "-1" + "0" * 400, "0"])
@pytest.mark.parametrize("verb", ["scroll", "hscroll"])
def test_scroll_amounts_must_be_finite_non_zero_and_bounded(verb, value):
    with pytest.raises(CodeError) as e:
        parse_action(f"pyautogui.{verb}({value})")
    assert e.value.reason == "malformed_code"


@pytest.mark.parametrize(
    ("code", "want"),
    [
        ("pyautogui.scroll(-10000)", Action("scroll", amount=(0.0, -10000.0))),
        ("pyautogui.press('a', presses=1000)", Action("press", keys=("a",), presses=1000)),
        ("computer.wait(0)", Action("wait", seconds=0.0)),
        ("computer.wait(3600)", Action("wait", seconds=3600.0)),
    ],
)
def test_the_bounds_themselves_are_accepted(code, want):
    assert parse_action(code) == want


@pytest.mark.parametrize(
    "code",
    [
        "pyautogui.click(x=0.5, y=0.5, clicks=2.5)",
        "pyautogui.click(x=0.5, y=0.5, clicks=4)",
        "pyautogui.click(x=0.5, y=0.5, clicks=True)",
        "pyautogui.press('a', presses=1001)",
        "pyautogui.scroll(10001)",
        "computer.wait(3601)",
    ],
)
def test_fractional_counts_and_values_past_the_bounds_are_malformed(code):
    with pytest.raises(CodeError) as e:
        parse_action(code)
    assert e.value.reason == "malformed_code"
