"""Per-directory sample pages for publishing: `<out>/samples/<directory>.html`, the first demo of
each built directory as a self-contained viewer page (`gui-assets view --html`), which the
dataset card links to so a visitor of the repo can look at a demonstration in a browser."""

from __future__ import annotations

from pathlib import Path

from gui_assets.viewer.catalog import ServedRoot
from gui_assets.viewer.export import export_html, select_demos
from gui_assets.viewer.server import Viewer

SAMPLES_DIR = "samples"


def sample_page_name(directory: str) -> str:
    return f"{SAMPLES_DIR}/{directory}.html"


def write_sample_pages(out: Path, directories: list[str]) -> dict[str, Path]:
    """{directory: page} for every directory of `directories` that has a readable demo; pages of
    directories no longer built are removed, so the folder matches what the card lists."""
    folder = out / SAMPLES_DIR
    folder.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    for directory in directories:
        if not (out / directory).is_dir():
            continue
        viewer = Viewer(ServedRoot.from_paths([out / directory]))
        try:
            selection = select_demos(viewer, None, 1)
            if selection:
                written[directory] = export_html(viewer, selection, out / sample_page_name(directory)).path
        finally:
            viewer.close()
    for stale in folder.glob("*.html"):
        if stale.stem not in written:
            stale.unlink()
    return written
