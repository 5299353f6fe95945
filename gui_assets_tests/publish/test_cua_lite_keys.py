"""Key names of every dialect the sources write, mapped into cua-lite's key vocabulary."""

from __future__ import annotations

import string

import pytest

from gui_assets.publish.cua_lite_keys import (
    ALIASES,
    NAMED_KEYS,
    chord_action,
    chords_of,
    is_canonical_key,
    key_token,
    press_actions,
    split_chord,
)


def keys(chord: str) -> list[str] | str:
    got = chord_action(chord)
    return got if isinstance(got, str) else got.get("keys", got.get("text"))


def test_the_vocabulary_is_cua_lites_54_names_and_every_alias_lands_in_it():
    assert len(NAMED_KEYS) == 54 and {"kp_enter", "printscreen", "f24", "esc"} <= NAMED_KEYS
    assert all(is_canonical_key(t) for t in ALIASES.values())
    assert all(is_canonical_key(c) for c in string.ascii_lowercase + string.digits + string.punctuation)


@pytest.mark.parametrize("token", ["A", "Ctrl", "F5", "Return", "ctrl+a", " ", "é", "", "escape", "\t", "++"])
def test_noncanonical_tokens_are_refused_as_the_gate_refuses_them(token):
    assert not is_canonical_key(token)


@pytest.mark.parametrize(
    ("dom", "token"),
    [
        ("KeyC", "c"),
        ("KeyZ", "z"),
        ("Digit1", "1"),
        ("Numpad7", "7"),
        ("ControlLeft", "ctrl"),
        ("ControlRight", "ctrl"),
        ("AltLeft", "alt"),
        ("ShiftRight", "shift"),
        ("MetaLeft", "meta"),
        ("OSRight", "meta"),
        ("ArrowUp", "up"),
        ("ArrowLeft", "left"),
        ("Enter", "enter"),
        ("NumpadEnter", "kp_enter"),
        ("Escape", "esc"),
        ("Backspace", "backspace"),
        ("PageDown", "pagedown"),
        ("ContextMenu", "menu"),
        ("Minus", "-"),
        ("Equal", "="),
        ("BracketLeft", "["),
        ("Backslash", "\\"),
        ("Quote", "'"),
        ("Backquote", "`"),
        ("NumpadAdd", "+"),
        ("NumpadDecimal", "."),
        ("AudioVolumeMute", "volumemute"),
        ("MediaTrackPrevious", "prevtrack"),
        ("F12", "f12"),
        ("Control", "ctrl"),  # DOM key values too (Playwright)
        ("ControlOrMeta", "ctrl"),
    ],
)
def test_dom_codes_and_keys(dom, token):
    assert key_token(dom) == token


@pytest.mark.parametrize(
    ("name", "token"),
    [
        ("ctrl", "ctrl"),
        ("ctrlleft", "ctrl"),
        ("command", "meta"),
        ("win", "meta"),
        ("winleft", "meta"),
        ("option", "alt"),
        ("optionright", "alt"),
        ("pgdn", "pagedown"),
        ("pgup", "pageup"),
        ("esc", "esc"),
        ("del", "delete"),
        ("return", "enter"),
        ("\n", "enter"),
        ("\t", "tab"),
        (" ", "space"),
        ("num5", "5"),
        ("add", "+"),
        ("divide", "/"),
        ("apps", "menu"),
        ("prtsc", "printscreen"),
        ("capslock", "capslock"),
        ("f24", "f24"),
    ],
)
def test_pyautogui_names(name, token):
    assert key_token(name) == token


@pytest.mark.parametrize(
    ("keysym", "token"),
    [
        ("Control_L", "ctrl"),
        ("Control_R", "ctrl"),
        ("Alt_L", "alt"),
        ("Super_L", "meta"),
        ("Shift_R", "shift"),
        ("Return", "enter"),
        ("KP_Enter", "kp_enter"),
        ("BackSpace", "backspace"),
        ("Page_Down", "pagedown"),
        ("Page_Up", "pageup"),
        ("Prior", "pageup"),
        ("Next", "pagedown"),
        ("Caps_Lock", "capslock"),
        ("Print", "printscreen"),
        ("KP_3", "3"),
        ("exclam", "!"),
        ("numbersign", "#"),
        ("parenleft", "("),
        ("quotedbl", '"'),
        ("asciitilde", "~"),
        ("XF86AudioRaiseVolume", "volumeup"),
        ("XF86AudioPlay", "playpause"),
    ],
)
def test_xdotool_keysyms(keysym, token):
    assert key_token(keysym) == token


@pytest.mark.parametrize("name", ["NumLock", "Fn", "AltGraph", "ScrollLock", "Pause", "\x01", "hangul"])
def test_names_nothing_maps(name):
    assert key_token(name) is None


@pytest.mark.parametrize(
    ("chord", "parts"),
    [
        ("ctrl+c", ["ctrl", "c"]),
        ("ctrl++", ["ctrl", "+"]),
        ("+", ["+"]),
        ("ctrl+++a", ["ctrl", "+", "a"]),
        ("Control+Shift+ArrowDown", ["Control", "Shift", "ArrowDown"]),
        ("a+", None),
        ("+a", None),
        ("++", None),
        ("", None),
    ],
)
def test_chords_split_on_plus_and_the_plus_key_is_a_part(chord, parts):
    assert split_chord(chord) == parts


@pytest.mark.parametrize(
    ("chord", "want"),
    [
        ("ControlLeft+KeyC", ["ctrl", "c"]),
        ("Control+Shift+ArrowDown", ["ctrl", "shift", "down"]),
        ("command+c", ["meta", "c"]),
        ("ctrl++", ["ctrl", "+"]),
        ("ControlLeft+ControlRight", ["ctrl"]),  # one canonical key, once
        ("ctrl+A", ["ctrl", "a"]),  # a held letter loses case, as cua-lite's normalizer does
        ("!", ["!"]),  # shifted symbols stay themselves, never shift+1
        ("shift+Digit1", ["shift", "1"]),
        ("@", ["@"]),
        ("F5", ["f5"]),
    ],
)
def test_chords_map_to_canonical_key_actions(chord, want):
    got = chord_action(chord)
    assert got == {"action": "key", "keys": want}
    assert all(is_canonical_key(k) for k in got["keys"])


@pytest.mark.parametrize(
    ("chord", "text"),
    [("å", "å"), ("ß", "ß"), ("€", "€"), ("A", "A"), ("shift+å", "Å"), ("Shift+é", "É")],
)
def test_printable_text_outside_the_vocabulary_is_typed(chord, text):
    assert chord_action(chord) == {"action": "type", "text": text}


@pytest.mark.parametrize(
    ("chord", "reason"),
    [
        ("alt+å", "text_with_modifier"),
        ("ctrl+ü", "text_with_modifier"),
        ("NumLock", "unknown_key"),
        ("ctrl+Fn", "unknown_key"),
        ("a+", "malformed_chord"),
    ],
)
def test_chords_that_cannot_be_expressed_are_dropped_by_reason(chord, reason):
    assert chord_action(chord) == reason


def test_a_press_text_is_a_sequence_of_chords():
    assert chords_of("down down down") == ["down", "down", "down"]
    assert chords_of(" ") == [" "] and chords_of("   ") == [" ", " "]  # pyautogui.press(" ", presses=2)
    actions, dropped = press_actions("Escape NumLock å Return")
    assert actions == [
        {"action": "key", "keys": ["esc"]},
        {"action": "type", "text": "å"},
        {"action": "key", "keys": ["enter"]},
    ]
    assert dropped == ["unknown_key"]
    assert press_actions("   ") == ([{"action": "key", "keys": ["space"]}] * 2, [])
    assert keys("alt+å") == "text_with_modifier"
