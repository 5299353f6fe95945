"""`gui-assets view PATH... --html OUT`: one self-contained HTML file of chosen demos.

The page is the served one with its CSS and script inlined, and the index, the demos' arrays
and every frame (PNG data URIs) in one JSON script element, so it works opened from file://
with the same URL and DOM contract as the server."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any

from gui_assets.core.atomic import atomic_path, sha256_file
from gui_assets.viewer.catalog import INFO_NAME, BadPath, NotServed
from gui_assets.viewer.frames import encode_png, read_frame
from gui_assets.viewer.server import STATIC_DIR, Viewer

CSS_LINK = '<link rel="stylesheet" href="/static/viewer.css">'
SCRIPT_TAG = '<script src="/static/viewer.js"></script>'
FRAME_KINDS = ("agentview", "eye")


class SelectionError(ValueError):
    """A --demos entry that names no served shard or no demo in it."""


@dataclass(frozen=True)
class ExportSummary:
    path: Path
    demos: int
    frames: int
    bytes: int


def select_demos(viewer: Viewer, demos: str | None, per_dir: int | None) -> dict[str, list[str]]:
    """{shard: [demo, ...]} from `file:demo,file:demo` (files relative to the served root), or
    the first `per_dir` demos of each directory (default 1), in file and demo order."""
    catalog = viewer.catalog
    chosen: dict[str, list[str]] = {}
    if demos:
        for item in (s.strip() for s in demos.split(",")):
            if not item:
                continue
            rel, sep, name = item.rpartition(":")
            if not sep or not rel or not name:
                raise SelectionError(f"--demos entry {item!r} is not FILE:DEMO")
            try:
                catalog.path(rel)
            except (BadPath, NotServed) as e:
                raise SelectionError(f"--demos {item!r}: {e}") from None
            names = {d["name"] for d in catalog.file_entry(rel)["demos"]}
            if name not in names:
                raise SelectionError(f"--demos {item!r}: {rel} has no demo {name!r}")
            if name not in chosen.setdefault(rel, []):
                chosen[rel].append(name)
        return chosen
    wanted = 1 if per_dir is None else per_dir
    if wanted < 1:
        raise SelectionError("--per-dir must be at least 1")
    taken: dict[str, int] = {}
    for rel in catalog.files():
        directory = PurePosixPath(rel).parent.as_posix()
        room = wanted - taken.get(directory, 0)
        names = [d["name"] for d in catalog.file_entry(rel)["demos"] if "error" not in d][: max(room, 0)]
        if names:
            chosen[rel] = names
            taken[directory] = taken.get(directory, 0) + len(names)
    return chosen


def _page_parts() -> tuple[str, str, str]:
    """The page's HTML before the stylesheet link, between it and the script tag, and after."""
    html = (STATIC_DIR / "index.html").read_text(encoding="utf-8")
    if html.count(CSS_LINK) != 1 or html.count(SCRIPT_TAG) != 1:
        raise RuntimeError("index.html no longer has exactly one stylesheet link and one script tag")
    head, rest = html.split(CSS_LINK)
    middle, tail = rest.split(SCRIPT_TAG)
    return head, middle, tail


def _inline(name: str, tag: str) -> str:
    text = (STATIC_DIR / name).read_text(encoding="utf-8")
    if f"</{tag}" in text.lower():
        raise RuntimeError(f"{name} contains </{tag}: it cannot be inlined")
    return f"<{tag}>\n{text}</{tag}>"


def _json(value: Any) -> str:
    # "<" only ever occurs inside JSON strings, where \u003c means the same: no "</script>" ends
    # the data element early.
    return json.dumps(value, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")


def _frame_uris(viewer: Viewer, rel: str, name: str, kind: str, steps: int) -> Iterator[str]:
    path = viewer.catalog.path(rel)
    for t in range(steps):
        png = encode_png(read_frame(viewer.pool, path, name, kind, t))
        yield "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def content_version(path: Path) -> str:
    """A shard's version by its content: its sha256 as its directory's dataset_info.json records
    it, else read from the file. The served page's version is the file's mtime and size, a cheap
    cache key; a written page must not change when the same bytes are rebuilt at another time."""
    try:
        info = json.loads((path.parent / INFO_NAME).read_text(encoding="utf-8"))
        entries = [*info.get("shards", []), *info.get("val_shards", [])]
        recorded = {e["file"]: e["sha256"] for e in entries if isinstance(e, dict)}
        if isinstance(recorded.get(path.name), str) and recorded[path.name]:
            return f"sha256-{recorded[path.name]}"
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        pass
    return f"sha256-{sha256_file(path)}"


def _write_data(out: IO[str], viewer: Viewer, selection: dict[str, list[str]]) -> tuple[int, int]:
    """The JSON of the data element, written a frame at a time: (demos, frames) written."""
    index = viewer.catalog.index(only={rel: set(names) for rel, names in selection.items()})
    count = sum(len(n) for n in selection.values())
    index["root"] = f"{viewer.catalog.served.root.name}/ (static export of {count} demos)"
    versions = {rel: content_version(viewer.catalog.path(rel)) for rel in selection}
    index["files"] = [{**f, "version": versions[f["path"]]} for f in index["files"]]
    demos = {f"{rel}\n{name}": viewer.demo(rel, name) for rel, names in selection.items() for name in names}
    for key, demo in demos.items():
        if isinstance(demo.get("file"), dict):
            demo["file"] = {**demo["file"], "version": versions[key.split("\n")[0]]}
    out.write(f'{{"static":true,"index":{_json(index)},"demos":{_json(demos)},"frames":{{')
    frames = 0
    for i, (key, demo) in enumerate(demos.items()):
        rel, name = key.split("\n")
        out.write(("," if i else "") + _json(key) + ":{")
        kinds = [k for k in FRAME_KINDS if demo["frames"].get(k)]
        for j, kind in enumerate(kinds):
            out.write(("," if j else "") + f'"{kind}":[')
            for n, uri in enumerate(_frame_uris(viewer, rel, name, kind, demo["frames"][kind][0])):
                out.write(("," if n else "") + f'"{uri}"')
                frames += 1
            out.write("]")
        out.write("}")
    out.write("}}")
    return len(demos), frames


def export_html(viewer: Viewer, selection: dict[str, list[str]], out: Path) -> ExportSummary:
    """Write the page for `selection` to `out` (atomically: a temp name, then a rename)."""
    if not selection:
        raise SelectionError("no demo to export")
    head, middle, tail = _page_parts()
    with atomic_path(out) as tmp, tmp.open("w", encoding="utf-8") as f:
        f.write(head + _inline("viewer.css", "style") + middle)
        f.write('<script type="application/json" id="viewer-data">')
        demos, frames = _write_data(f, viewer, selection)
        f.write("</script>\n" + _inline("viewer.js", "script") + tail)
    return ExportSummary(out, demos, frames, out.stat().st_size)
