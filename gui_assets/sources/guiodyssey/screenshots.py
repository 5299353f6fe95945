"""GUI-Odyssey screenshots, wherever a mirror keeps them, looked up by file name.

Shapes handled: folders `screenshots/data_<k>/*.png` (OpenGVLab/GUI-Odyssey, 2024), the same
files flat in `screenshots/` (what the upstream `preprocessing.py` leaves), one zip, one zip cut
into byte ranges `zips/screenshots_01`, `zips/screenshots_02`, ... whose concatenation is the zip,
and the multi-volume `zip -s` archive the newer `hflqf88888/GUIOdyssey` ships
(`screenshots/screenshots.z01` ... then `screenshots.zip`). Every shape is read by the shared
readers of `gui_assets.sources.archives` (the byte ranges as the parts of one `ZipImages`); what
is GUI-Odyssey's own is where each shape lives and how its parts are numbered.

An annotation names its screenshot by file name only (`<episode_id>_<step>.png`), so two
different images under one name cannot be told apart: that, missing parts or volumes, or no
screenshots at all is an ImageSourceError naming the files, and an archive that cannot be opened
an ArchiveError: either fails the partition. One damaged or refused member is an ArchiveError
(a Drop with its reason) when it is read: the episode that needs it is dropped and counted.
"""

from __future__ import annotations

import re
from pathlib import Path

from gui_assets.sources.archives import IMAGE_SUFFIXES, FolderImages, ImageSourceError, ZipImages

Screenshots = ZipImages | FolderImages
_PART_NAME = re.compile(r"^(?P<stem>.+)_(?P<number>\d+)$")


def find_zip_parts(directory: Path, stem: str = "screenshots") -> list[Path]:
    """The parts `<stem>_01`, `<stem>_02`, ... in `directory`, in numeric order.

    The numbering must run from 1 without a gap; a gap is an ImageSourceError naming the missing
    part (a missing LAST part cannot be seen from names: opening the zip finds no end record)."""
    numbered: dict[int, Path] = {}
    widths: set[int] = set()
    try:
        entries = list(directory.iterdir())
    except OSError as err:
        raise ImageSourceError(f"cannot list {directory}: {err.strerror or err}") from err
    for entry in entries:
        match = _PART_NAME.match(entry.name)
        if match is None or match["stem"] != stem or not entry.is_file():
            continue
        number = int(match["number"])
        if number in numbered:
            raise ImageSourceError(f"two parts numbered {number}: {numbered[number]} and {entry}")
        numbered[number] = entry
        widths.add(len(match["number"]))
    if not numbered:
        raise ImageSourceError(f"no zip parts {stem}_NN in {directory}")
    width = max(widths)
    missing = [n for n in range(1, max(numbered) + 1) if n not in numbered]
    if missing:
        names = ", ".join(f"{stem}_{n:0{width}d}" for n in missing)
        raise ImageSourceError(f"zip parts missing in {directory}: {names} (found {len(numbered)})")
    return [numbered[n] for n in sorted(numbered)]


def _without_clashes(images: Screenshots) -> Screenshots:
    """`images`, unless two different images share a name (which one a step means is unknown)."""
    clashes = sorted((n, pair) for n, pair in images.clashes.items() if n.lower().endswith(IMAGE_SUFFIXES))
    if clashes:
        images.close()
        name, (first, second) = clashes[0]
        where = images.label if isinstance(images, ZipImages) else str(images.path)
        raise ImageSourceError(f"two different images named {name} in {where}: {first} and {second}")
    return images


def open_screenshots(repo_root: Path) -> Screenshots:
    """The screenshots of a GUI-Odyssey mirror, preferring loose files over archives:

    1. images in `screenshots/` (flat, or in `data_<k>/` sub-folders);
    2. `screenshots/screenshots.zip`, with its volumes `screenshots.z01`, ... when it has them
       (hflqf88888/GUIOdyssey), or a lone plain zip;
    3. `zips/screenshots.zip`;
    4. byte-range parts `zips/screenshots_01`, `zips/screenshots_02`, ...
    """
    folder = repo_root / "screenshots"
    if folder.is_dir():
        loose = FolderImages(folder)
        if loose.members or loose.refused:
            return _without_clashes(loose)
        if (folder / "screenshots.zip").is_file():
            return _without_clashes(ZipImages(folder / "screenshots.zip"))
        volumes = sorted(p.name for p in folder.glob("screenshots.z[0-9]*"))
        if volumes:
            raise ImageSourceError(
                f"{folder}: volumes {', '.join(volumes)} without their last one, screenshots.zip"
            )
    zips = repo_root / "zips"
    if (zips / "screenshots.zip").is_file():
        return _without_clashes(ZipImages(zips / "screenshots.zip"))
    if zips.is_dir() and any(_PART_NAME.match(p.name) for p in zips.iterdir()):
        return _without_clashes(ZipImages(zips / "screenshots", find_zip_parts(zips)))
    raise ImageSourceError(
        f"no screenshots under {repo_root}: expected images in screenshots/, screenshots/screenshots.zip "
        f"(with .z01... volumes or not), zips/screenshots.zip or zips/screenshots_NN"
    )
