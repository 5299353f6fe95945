"""`gui-assets view PATH...`: a local web page to look at demonstrations in LIBERO-layout shards.

    gui-assets view PATH... [--port N] [--host 127.0.0.1] [--verbose]
    gui-assets view PATH... --html OUT [--demos FILE:DEMO,... | --per-dir N]

PATH is a shard, a directory of shards or a whole build, local or downloaded from the hub (a
lone shard with no dataset_info.json beside it is enough); several may be given. The served
root is the single directory given, or the common parent of the paths; folders named `_*` or
`.*` (a build's `_work` area) are not searched. The first line printed is the page's address,
`http://127.0.0.1:<port>/`; `--port 0` picks a free port. Nothing here touches Dagster, the
network or the writers: shards are read as any user reads them, with h5py.

The page
    /?file=<shard relative to the served root>&demo=<demo name>&step=<t>   opens that step
    (no query: the demo list). Steps count from 0, as t does, everywhere on the page ("step 3
    (0-7)"); a t the demo does not have shows `#step-error`, naming the valid range, in place
    of any step. DOM contract: `#frame` is the displayed agentview frame;
    `#action-point` (with `data-x`, `data-y`, the normalized point) is centred on
    (x1 * width, y1 * height) of `#frame`'s box for a step whose mask is [1, 1, 0, 0], and
    absent otherwise; `#eye-rect`'s box is the step's eye_rect window (border drawn inside);
    `#action-arrow` (`data-x1`..`data-y2`) draws a SCROLL or DRAG gesture, `#scroll-label`
    names a SCROLL's view direction (the inverse of the gesture); `#frame[data-step]` is set
    once that step's frame and overlays are shown. ArrowRight / ArrowLeft step, Home / End
    jump to the first / last step, 0 / 1 / 2 zoom to fit / 100% / 200%, Esc returns to the list.

The JSON API (GET; the client's paths are relative to the served root and must be served
shards: an absolute path or ".." is 400, anything else not served is 404)
    /api/index
        {"root", "files": [{"path", "directory", "bytes", "version", "attrs", "action_types",
         "demos": [{"name", "language_instruction", "source", "directory", "episode_id",
         "steps", "type_counts", "ungrounded", "success"}], "error"?}],
         "directories": {dir: summary of its dataset_info.json}}
        Attributes and small datasets only: no frame is read. "error" names a shard h5py
        cannot open.
    /api/demo?file=F&demo=D
        {"name", "steps", "type_names", "types", "params", "masks", "texts", "descs",
         "eye_rect", "states", "native_hw", "cursor", "scroll", "thoughts", "obs_stale",
         "dones", "rewards", "frames": {"agentview": [T, H, W], "eye": [...], "terminal": ...},
         "attrs", "source_ref", "problems", "file": {"path", "directory", "version", "bytes",
         "attrs"}}; a per-step array is null where the demo lacks it, and "problems" names
         any dataset whose shape departs from the output format. 422 for an unreadable demo.
    /api/frame?file=F&demo=D&step=T&kind=agentview|eye|terminal[&v=VERSION]
        image/png of that frame: one HDF5 chunk read and inflated, encoded as PNG, kept in
        an LRU cache; the next step's frame and crop are encoded ahead. With `v` equal to the
        file's current version the answer is cacheable for good. 404 past the last step,
        422 for a frame that cannot be shown.
    /, /static/<name>: the page (gui_assets/viewer/static/).

Modules here import only the core (the shard reader and the PNG encoder): the viewer reads what
any user downloads, never the pipeline that wrote it.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from gui_assets.viewer.catalog import ServedRoot, ViewerInputError

__all__ = ["main", "viewer_command"]


def viewer_command(directory: Path) -> str:
    """The shell command that opens a built directory (or a shard, or a whole build) in the viewer."""
    return f"gui-assets view {shlex.quote(str(directory))}"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="gui-assets view",
        description="Serve a local page to look at the demonstrations in LIBERO-layout HDF5 shards.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="a shard, a directory of shards or a whole build")
    p.add_argument("--port", type=int, default=8765, help="port to listen on; 0 picks a free one")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--verbose", action="store_true", help="log every request to stderr")
    p.add_argument("--html", type=Path, metavar="OUT", help="write one self-contained HTML file, not serve")
    p.add_argument("--demos", metavar="FILE:DEMO,...", help="with --html: the demos to export")
    p.add_argument("--per-dir", type=int, metavar="N", help="with --html: the first N demos per directory")
    return p


def _export(served: ServedRoot, args: argparse.Namespace) -> int:
    from gui_assets.viewer.export import SelectionError, export_html, select_demos
    from gui_assets.viewer.server import Viewer

    viewer = Viewer(served)
    try:
        selection = select_demos(viewer, args.demos, args.per_dir)
        summary = export_html(viewer, selection, args.html)
    except SelectionError as e:
        print(f"gui-assets view: {e}", file=sys.stderr)
        return 2
    finally:
        viewer.close()
    print(f"{summary.path}: {summary.demos} demos, {summary.frames} frames, {summary.bytes} B", flush=True)
    return 0


def _serve(served: ServedRoot, args: argparse.Namespace) -> int:
    from gui_assets.viewer.server import Viewer, ViewerServer

    viewer = Viewer(served)
    try:
        server = ViewerServer((args.host, args.port), viewer, verbose=args.verbose)
    except (OSError, OverflowError) as e:  # in use, not permitted, or not a port number
        print(f"gui-assets view: cannot listen on {args.host}:{args.port}: {e}", file=sys.stderr)
        viewer.close()
        return 2
    shown_host = "127.0.0.1" if args.host in ("", "0.0.0.0", "127.0.0.1", "localhost") else args.host
    print(f"http://{shown_host}:{server.server_address[1]}/", flush=True)
    print(f"serving {len(served.shard_files())} shards under {served.root} (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        viewer.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    if args.html is None and (args.demos or args.per_dir is not None):
        print("gui-assets view: --demos and --per-dir choose what --html exports", file=sys.stderr)
        return 2
    try:
        served = ServedRoot.from_paths(args.paths)
    except ViewerInputError as e:
        print(f"gui-assets view: {e}", file=sys.stderr)
        return 2
    if not served.shard_files():
        print(f"gui-assets view: no HDF5 shard under {', '.join(map(str, served.inputs))}", file=sys.stderr)
        return 2
    return _export(served, args) if args.html is not None else _serve(served, args)
