"""Key presses in cua-lite's key vocabulary: this project's own table of names and aliases.

cua-lite's publish gate accepts a key token only when it is already canonical (it does not
normalize): one visible ASCII character (lowercase; `+` only alone) or one of its 54 named keys.
Sources write keys in other dialects, all mapped here:

* DOM `code` / `key` values (Pango, Playwright in WebArena): `ControlLeft`, `KeyC`, `Digit1`,
  `ArrowUp`, `Escape`, `NumpadEnter`, `Control`, `ControlOrMeta` (ctrl; the traces are Linux);
* PyAutoGUI names (AgentNet): `ctrl`, `command`, `win`, `option`, `pgdn`, `num5`, `\\n`;
* xdotool keysyms: `Control_L`, `Return`, `Page_Down`, `Prior`, `KP_Enter`, `exclam`, `XF86AudioMute`.

A press text is a sequence of chords separated by spaces (`down down down`), each chord keys
joined by `+` (`ctrl+c`; the `+` key itself is `ctrl++` or `+`). A chord maps to a `key`
action, or to a `type` action when it is printable text outside the vocabulary (`å`, or `A`
alone: pressing an upper-case letter types it) held with no modifier but shift (`shift+å` types
`Å`). Otherwise the chord is dropped, by one of KEY_DROPS:

    unknown_key        a key name nothing maps (NumLock, Fn, AltGraph, a control character)
    text_with_modifier printable text held with ctrl, alt or meta (alt+å): no canonical chord
    malformed_chord    a `+` with no key after it, or keys with no `+` between (`a+`, `+a`)
"""

from __future__ import annotations

import re
import string
from typing import Any

MODIFIERS = ("ctrl", "alt", "shift", "meta")
FUNCTION_KEYS = tuple(f"f{n}" for n in range(1, 25))
# cua-lite's named keys: any token longer than one character must be one of these.
NAMED_KEYS: frozenset[str] = frozenset(
    (
        *MODIFIERS,
        *("enter", "tab", "space", "backspace", "delete", "esc"),
        *("up", "down", "left", "right", "home", "end", "pageup", "pagedown", "insert"),
        *("capslock", "menu", "clear", "printscreen", "kp_enter"),
        *("volumeup", "volumedown", "volumemute", "playpause", "nexttrack", "prevtrack"),
        *FUNCTION_KEYS,
    )
)

UNKNOWN_KEY = "unknown_key"
TEXT_WITH_MODIFIER = "text_with_modifier"
MALFORMED_CHORD = "malformed_chord"
KEY_DROPS = (UNKNOWN_KEY, TEXT_WITH_MODIFIER, MALFORMED_CHORD)

# canonical token -> the spellings (compared lowercased) that mean it, in every dialect above
_ALIAS_GROUPS: dict[str, tuple[str, ...]] = {
    "ctrl": (
        *("ctrl", "control", "ctl", "ctrlleft", "ctrlright", "controlleft", "controlright"),
        *("control_l", "control_r", "controlormeta"),
    ),
    "alt": ("alt", "option", "opt", "altleft", "altright", "optionleft", "optionright", "alt_l", "alt_r"),
    "shift": ("shift", "shiftleft", "shiftright", "shift_l", "shift_r"),
    "meta": (
        *("meta", "cmd", "command", "super", "win", "windows", "os", "cmdleft", "cmdright"),
        *("commandleft", "commandright", "metaleft", "metaright", "superleft", "superright"),
        *("winleft", "winright", "windowsleft", "windowsright", "osleft", "osright"),
        *("super_l", "super_r", "meta_l", "meta_r"),
    ),
    "enter": ("enter", "return", "\n", "\r"),
    "kp_enter": ("kp_enter", "numpad_enter", "numpadenter"),
    "tab": ("tab", "\t"),
    "space": ("space", "spacebar", " "),
    "backspace": ("backspace", "bksp"),
    "delete": ("delete", "del", "kp_delete"),
    "esc": ("esc", "escape"),
    "up": ("up", "arrowup", "arrow_up", "kp_up"),
    "down": ("down", "arrowdown", "arrow_down", "kp_down"),
    "left": ("left", "arrowleft", "arrow_left", "kp_left"),
    "right": ("right", "arrowright", "arrow_right", "kp_right"),
    "home": ("home", "kp_home"),
    "end": ("end", "kp_end"),
    "pageup": ("pageup", "page_up", "pgup", "prior", "kp_prior", "kp_page_up"),
    "pagedown": ("pagedown", "page_down", "pgdn", "next", "kp_next", "kp_page_down"),
    "insert": ("insert", "ins", "kp_insert"),
    "capslock": ("capslock", "caps_lock"),
    "menu": ("menu", "contextmenu", "apps"),
    "clear": ("clear",),
    "printscreen": ("printscreen", "print_screen", "print", "prtsc", "prtscr", "prntscrn"),
    "volumeup": (
        *("volumeup", "volume_up", "audiovolumeup", "audio_volume_up", "mediavolumeup"),
        *("media_volume_up", "xf86audioraisevolume"),
    ),
    "volumedown": (
        *("volumedown", "volume_down", "audiovolumedown", "audio_volume_down", "mediavolumedown"),
        *("media_volume_down", "xf86audiolowervolume"),
    ),
    "volumemute": (
        *("volumemute", "volume_mute", "audiomute", "audio_mute", "audiovolumemute"),
        *("audio_volume_mute", "mediavolumemute", "media_volume_mute", "xf86audiomute"),
    ),
    "playpause": ("playpause", "mediaplaypause", "media_play_pause", "xf86audioplay"),
    "nexttrack": ("nexttrack", "mediatracknext", "media_track_next", "xf86audionext"),
    "prevtrack": ("prevtrack", "mediatrackprevious", "media_track_previous", "xf86audioprev"),
    # glyphs by name: DOM codes, PyAutoGUI numpad names, xdotool keysyms
    "+": ("plus", "add", "numpadadd", "kp_add"),
    "-": ("minus", "subtract", "numpadsubtract", "kp_subtract"),
    "*": ("asterisk", "multiply", "numpadmultiply", "kp_multiply"),
    "/": ("slash", "forwardslash", "forward_slash", "divide", "numpaddivide", "kp_divide"),
    ".": ("period", "dot", "decimal", "numpaddecimal", "kp_decimal"),
    ",": ("comma", "numpadcomma"),
    "=": ("equal", "numpadequal", "kp_equal"),
    ";": ("semicolon",),
    "'": ("apostrophe", "singlequote", "single_quote", "quote", "quoteright"),
    "`": ("grave", "backtick", "backquote", "quoteleft"),
    "[": ("bracketleft", "leftbracket", "left_bracket"),
    "]": ("bracketright", "rightbracket", "right_bracket"),
    "\\": ("backslash", "back_slash"),
    "!": ("exclam",),
    "@": ("at",),
    "#": ("numbersign",),
    "$": ("dollar",),
    "%": ("percent",),
    "^": ("asciicircum",),
    "&": ("ampersand",),
    "(": ("parenleft",),
    ")": ("parenright",),
    "_": ("underscore",),
    "{": ("braceleft",),
    "}": ("braceright",),
    "|": ("bar",),
    ":": ("colon",),
    '"': ("quotedbl",),
    "~": ("asciitilde",),
    "<": ("less",),
    ">": ("greater",),
    "?": ("question",),
}


def _alias_table() -> dict[str, str]:
    table = {alias: token for token, aliases in _ALIAS_GROUPS.items() for alias in aliases}
    for letter in string.ascii_lowercase:
        table[f"key{letter}"] = letter  # DOM code KeyA
    for digit in string.digits:
        for name in (f"digit{digit}", f"numpad{digit}", f"num{digit}", f"kp_{digit}"):
            table[name] = digit
    return table


ALIASES: dict[str, str] = _alias_table()
_FUNCTION_KEY = re.compile(r"f([1-9]|1[0-9]|2[0-4])")


def is_canonical_key(token: object) -> bool:
    """cua-lite's membership test: no normalization, exactly what its gate accepts."""
    if not isinstance(token, str) or not token or token != token.lower():
        return False
    if len(token) == 1:
        return 33 <= ord(token) <= 126
    return "+" not in token and token in NAMED_KEYS


def key_token(name: str) -> str | None:
    """One key in any dialect above as a canonical token, or None when nothing maps it."""
    if name in ALIASES:  # whitespace names (" ", "\n", "\t") before anything strips them
        return ALIASES[name]
    bare = name.strip()
    lower = bare.lower()
    if len(bare) == 1 and 33 <= ord(bare) <= 126:
        return lower
    if lower in ALIASES:
        return ALIASES[lower]
    if _FUNCTION_KEY.fullmatch(lower) or lower in NAMED_KEYS:
        return lower
    return None


def split_chord(chord: str) -> list[str] | None:
    """`ctrl+c` -> [ctrl, c]; the `+` key is a part of its own (`ctrl++`, `+`); None if malformed."""
    parts: list[str] = []
    i = 0
    while i < len(chord):
        if chord[i] == "+":
            part, i = "+", i + 1
        else:
            end = chord.find("+", i)
            end = len(chord) if end < 0 else end
            part, i = chord[i:end], end
        parts.append(part)
        if i < len(chord):
            if chord[i] != "+" or i + 1 == len(chord):
                return None  # two keys without a `+` between them, or a trailing `+`
            i += 1
    return parts or None


def _is_text(name: str) -> bool:
    """Printable text a keyboard types, rather than a key's name: non-ASCII, or one capital."""
    if not name.isprintable() or not name.strip():
        return False
    return any(ord(c) > 127 for c in name) or (len(name) == 1 and name in string.ascii_uppercase)


def chord_action(chord: str) -> dict[str, Any] | str:
    """One chord as a cua-lite `key` or `type` action, or the KEY_DROPS reason it cannot be one."""
    parts = split_chord(chord)
    if parts is None:
        return MALFORMED_CHORD
    if len(parts) == 1 and _is_text(parts[0]):
        return {"action": "type", "text": parts[0]}
    tokens = [key_token(p) for p in parts]
    unmapped = [p for p, t in zip(parts, tokens, strict=True) if t is None]
    held = [t for t in tokens if t is not None]
    if not unmapped:
        keys = list(dict.fromkeys(held))
        if not all(is_canonical_key(k) for k in keys):  # the alias table is ours: a bug, not data
            raise ValueError(f"{chord!r} mapped to noncanonical keys {keys}")
        return {"action": "key", "keys": keys}
    if len(unmapped) > 1 or not _is_text(unmapped[0]):
        return UNKNOWN_KEY
    if set(held) - {"shift"}:
        return TEXT_WITH_MODIFIER
    return {"action": "type", "text": unmapped[0].upper()}  # held with shift: shift+å types Å


def chords_of(text: str) -> list[str]:
    """A press text's chords: space-separated; a text of spaces only is the space key pressed
    (PyAutoGUI's presses joined by spaces: n presses of " " are 2n - 1 spaces)."""
    if text and not text.strip(" "):
        return [" "] * ((len(text) + 1) // 2)
    return [c for c in text.split(" ") if c]


def press_actions(text: str) -> tuple[list[dict[str, Any]], list[str]]:
    """(actions, reasons of the chords dropped) for a PRESS_KEY text."""
    actions: list[dict[str, Any]] = []
    dropped: list[str] = []
    for chord in chords_of(text):
        got = chord_action(chord)
        if isinstance(got, str):
            dropped.append(got)
        else:
            actions.append(got)
    return actions, dropped
