"""Reading attribute values the way any h5py reader meets them, without trusting their types."""

from __future__ import annotations

import json
from typing import Any

import numpy as np


def as_text(value: Any) -> str | None:
    """A string attribute as str (h5py gives str for variable-length, bytes for fixed-length)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | np.bytes_):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return None
    return None


def as_int(value: Any) -> int | None:
    if isinstance(value, bool | np.bool_):
        return None
    if isinstance(value, int | np.integer):
        return int(value)
    return None


def as_json(value: Any) -> tuple[bool, Any]:
    """(parsed, value) of a JSON string attribute."""
    text = as_text(value)
    if text is None:
        return False, None
    try:
        return True, json.loads(text)
    except ValueError:
        return False, None


def kind_ok(value: Any, kind: str) -> bool:
    """Does an attribute value have the kind the format gives it (str, int, or a JSON string)?"""
    if kind == "str":
        return as_text(value) is not None
    if kind == "int":
        return as_int(value) is not None
    return as_json(value)[0]


def short(value: Any, limit: int = 80) -> str:
    """A value as a finding shows it: arrays and numpy scalars as plain Python values, cut at `limit`."""
    text = repr(value.tolist() if isinstance(value, np.ndarray | np.generic) else value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
