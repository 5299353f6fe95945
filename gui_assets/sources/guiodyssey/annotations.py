"""GUI-Odyssey split files and annotations, from whichever layout a mirror has.

A split file `splits/<name>.json` is `{"train": [...], "test": [...]}` of annotation FILE names
(`<episode_id>.json`; the official converter joins them onto the annotations folder). An
annotation is read from, in order: `annotations/<episode_id>.json`, the member of that name in
`zips/annotations.zip`, or the episode of that id in the all-in-one file (`all_anno.json` in
OpenGVLab/GUI-Odyssey, `all_annot.json` in hflqf88888/GUIOdyssey: a JSON list of annotations).
Episode ids stay strings: an id written as a JSON number (a re-export) gets its 16 digits back.
The zip is read by the shared `archives.ZipImages`, so its members meet the same refusals as any
archive's (unsafe paths, encryption, unknown compression, bombs), each a counted drop.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gui_assets.core.drops import Drop, DropReason
from gui_assets.sources.archives import ArchiveError, ZipImages
from gui_assets.sources.mirror import RawInputError

SPLITS_DIR = "splits"
ANNOTATIONS_DIR = "annotations"
ANNOTATIONS_ZIP = "zips/annotations.zip"
ALL_IN_ONE = ("all_anno.json", "all_annot.json")
ID_DIGITS = 16


def episode_key(value: Any) -> str | None:
    """An episode id as the release writes it (a 16-digit string), or None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and 0 <= value < 10**ID_DIGITS:
        return f"{value:0{ID_DIGITS}d}"
    if isinstance(value, str) and value.isdigit() and value.isascii():
        return value
    return None


def read_split(root: Path, split_file: str, partition: str) -> list[Any]:
    """The entries `splits/<split_file>.json` lists under `partition`; RawInputError naming the
    file when it is missing, not JSON, or not a mapping of lists holding that key."""
    path = root / SPLITS_DIR / f"{split_file}.json"
    rel = f"{SPLITS_DIR}/{split_file}.json"
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RawInputError(f"split file {rel} is missing (option split_file={split_file!r})") from None
    except (OSError, ValueError, RecursionError) as e:
        raise RawInputError(f"split file {rel} cannot be read: {e}") from None
    if not isinstance(content, dict) or not isinstance(content.get(partition), list):
        raise RawInputError(f"split file {rel} has no list {partition!r}")
    return content[partition]


def annotation_name(entry: Any) -> str | None:
    """A split entry as an annotation file name `<id>.json`; None when it is not one."""
    if not isinstance(entry, str):
        return None
    name = entry.rsplit("/", 1)[-1]
    stem = name.removesuffix(".json")
    return f"{stem}.json" if episode_key(stem) == stem else None


@dataclass(frozen=True, slots=True)
class Found:
    """An annotation and where it came from (SourceRef file and member)."""

    file: str
    member: str | None
    annotation: Any


class Annotations:
    """Annotations by file name, from the folder, the zip or the all-in-one file."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.folder = root / ANNOTATIONS_DIR
        self._zip: ZipImages | None = None
        zip_path = root / ANNOTATIONS_ZIP
        if zip_path.is_file():
            try:
                self._zip = ZipImages(zip_path)  # members by file name, as split files name them
            except (ArchiveError, OSError) as e:
                raise RawInputError(f"{ANNOTATIONS_ZIP} is not a readable zip: {e}") from None
        self._all_in_one: tuple[str, dict[str, tuple[int, Any]]] | None = None
        self.all_in_one_file = next((n for n in ALL_IN_ONE if (root / n).is_file()), None)
        if not (self.folder.is_dir() or self._zip is not None or self.all_in_one_file):
            raise RawInputError(
                f"no annotations: neither {ANNOTATIONS_DIR}/, {ANNOTATIONS_ZIP} nor {' or '.join(ALL_IN_ONE)}"
            )

    def get(self, name: str) -> Found:
        """The annotation named `name`; Drop(missing_input_metadata) when no layout holds it,
        Drop(malformed_json) when its JSON does not parse."""
        path = self.folder / name
        if path.is_file():
            return Found(f"{ANNOTATIONS_DIR}/{name}", None, _parse(path.read_bytes(), name))
        if self._zip is not None and (name in self._zip.members or name in self._zip.refused):
            try:
                data = self._zip.read(name)
            except ArchiveError as e:
                raise Drop(e.reason, f"{ANNOTATIONS_ZIP}: {e}") from None
            return Found(ANNOTATIONS_ZIP, self._zip.members[name].name, _parse(data, name))
        if self.all_in_one_file is not None:
            file, by_id = self._load_all_in_one()
            row = by_id.get(name.removesuffix(".json"))
            if row is not None:
                return Found(file, f"[{row[0]}]", row[1])
        raise Drop(DropReason.MISSING_INPUT_METADATA, name)

    def _load_all_in_one(self) -> tuple[str, dict[str, tuple[int, Any]]]:
        """The all-in-one file indexed by episode id, read once (only when it is needed)."""
        if self._all_in_one is None:
            file = str(self.all_in_one_file)
            try:
                content = json.loads((self.root / file).read_text(encoding="utf-8"))
            except (OSError, ValueError, RecursionError) as e:
                raise RawInputError(f"{file} cannot be read: {e}") from None
            if not isinstance(content, list):
                raise RawInputError(f"{file} is not a list of annotations")
            by_id: dict[str, tuple[int, Any]] = {}
            for i, annotation in enumerate(content):
                key = episode_key(annotation.get("episode_id")) if isinstance(annotation, dict) else None
                if key is not None:
                    by_id.setdefault(key, (i, annotation))
            self._all_in_one = (file, by_id)
        return self._all_in_one

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()


def _parse(data: bytes, name: str) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise Drop(DropReason.MALFORMED_JSON, name) from None
