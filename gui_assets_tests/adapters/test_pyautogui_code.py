"""The PyAutoGUI code parser: every call form AgentNet uses, combinations, refusals, no execution."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gui_assets.adapters.pyautogui_code import Action, CodeError, parse_action

SAMPLES = Path(__file__).resolve().parents[3] / "shared" / "samples" / "agentnet"


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
        ("pyautogui.hotkey(keys=['ctrl', 'F'])", Action("hotkey", keys=("ctrl", "F"))),
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
