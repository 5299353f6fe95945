"""Frames of the cua-lite export: each observation once, at its content address.

A whole screenshot keeps its original bytes and is hard-linked from the image store (its bytes
are already stored under their sha256; whether it is whole is read from its header, never its
pixels); across file systems, hub.place's reflink or copy. A window of one (Mind2Web's viewport
slices) is decoded, cropped and PNG-encoded on worker threads (zlib, libspng and Pillow release
the GIL) while the caller goes on; `ref()` hands back a future of the frame's path.
"""

from __future__ import annotations

import hashlib
import io
import os
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from PIL import Image

from gui_assets.core.atomic import atomic_write_bytes
from gui_assets.core.episode_store import ImageStore
from gui_assets.core.images import ImageError, decode_rgb, image_size, window_pixels
from gui_assets.core.ir import GuiStep, Observation
from gui_assets.publish.hub import place

WINDOW_WORKERS = 2  # the decode + crop + encode of a window is ~50 ms, mostly outside the GIL
# Frames remembered so a repeated one is not looked up again (consecutive steps share a page);
# bounded, so memory does not grow with the export. A forgotten frame is found on disk.
REMEMBERED = 4096
_PNG = b"\x89PNG\r\n\x1a\n"


def _resolved(value: str) -> Future[str]:
    fut: Future[str] = Future()
    fut.set_result(value)
    return fut


def _failed(error: BaseException) -> Future[str]:
    fut: Future[str] = Future()
    fut.set_exception(error)
    return fut


def stored_size(path: Path) -> tuple[int, int]:
    """(width, height) of a stored image from its header: a PNG's first 24 bytes, never pixels."""
    with open(path, "rb") as fh:
        head = fh.read(32)
    return image_size(head if head.startswith(_PNG) else path.read_bytes())


def _link(src: Path, target: Path) -> str:
    """Give `target` the store's file: a hard link made under its final name (link(2) names a
    complete inode or fails, so no reader sees part of a file, and the bytes were made durable
    when the store wrote them: no temp name or fsync, which cost ~5 ms a frame). Across file
    systems, or where links are refused, hub.place's reflink or copy. Returns which."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, target)
        return "link"
    except FileExistsError:
        return "present"  # another export put it there since we looked: the same bytes
    except FileNotFoundError:
        raise
    except OSError:
        return place(src, target)


class Frames:
    """Observations into the export's image store: original bytes where the window is the whole image.

    A whole screenshot is placed by hard link from `source` (its bytes are already stored under
    their sha256); a window of one is decoded, cropped and PNG-encoded on `workers` threads.
    `ref()` gives a future of the frame's path (relative to `root`), `path()` waits for it. The
    source must hold every image already (a flushed ImageStore): it is only read here.
    """

    def __init__(self, source: ImageStore, root: Path, images_dir: str, workers: int | None = None) -> None:
        self.source = source
        self.root = root
        self.images_dir = images_dir  # under root: <images_dir>/<sha256[:2]>/<sha256>.<ext>
        self.workers = WINDOW_WORKERS if workers is None else workers  # 0: encode in the caller
        self.placed: Counter[str] = Counter()  # link / reflink / copy / encoded / present
        self._done: OrderedDict[tuple[str, int, int, int, int], Future[str]] = OrderedDict()
        self._pool: ThreadPoolExecutor | None = None
        # Two frames may land on one file (equal window bytes): its temp name is per process,
        # so writes of one sha256 take turns.
        self._locks = tuple(threading.Lock() for _ in range(64))
        self._count_lock = threading.Lock()

    def close(self) -> None:
        """Stop the window threads; encodes nobody will wait for (an export that failed) are
        dropped."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> Frames:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def path(self, step: GuiStep) -> str:
        return self.ref(step).result()

    def ref(self, step: GuiStep) -> Future[str]:
        """The future relative path of the step's frame; ImageError or FileNotFoundError inside
        when the store cannot give it."""
        o = step.observation
        key = (o.image_sha256, o.left, o.top, o.width, o.height)
        fut = self._done.get(key)
        if fut is None:
            fut = self._done[key] = self._start(o)
            if len(self._done) > REMEMBERED:
                self._done.popitem(last=False)
        return fut

    def _start(self, o: Observation) -> Future[str]:
        src = self.source.path(o.image_sha256, o.image_ext)
        try:
            whole = o.left == 0 and o.top == 0 and (o.width, o.height) == stored_size(src)
            if whole:
                return _resolved(self._put(o.image_sha256, o.image_ext, lambda target: _link(src, target)))
        except (FileNotFoundError, ImageError) as e:
            return _failed(e)
        if self.workers <= 0:
            try:
                return _resolved(self._window(src, o))
            except (FileNotFoundError, ImageError) as e:
                return _failed(e)
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="cua-lite-windows")
        return self._pool.submit(self._window, src, o)

    def _window(self, src: Path, o: Observation) -> str:
        window = window_pixels(
            decode_rgb(src.read_bytes(), o.top + o.height), o.left, o.top, o.width, o.height
        )
        buf = io.BytesIO()
        Image.fromarray(window).save(buf, format="PNG")
        data = buf.getvalue()

        def write(target: Path) -> str:
            atomic_write_bytes(target, data)
            return "encoded"

        return self._put(hashlib.sha256(data).hexdigest(), "png", write)

    def _put(self, sha: str, ext: str, write: Callable[[Path], str]) -> str:
        """Put a frame's file at its content address once; `write` makes it and says how."""
        rel = f"{self.images_dir}/{sha[:2]}/{sha}.{ext}"
        target = self.root / rel
        with self._locks[int(sha[:2], 16) % len(self._locks)]:
            how = "present" if target.exists() else write(target)
        with self._count_lock:
            self.placed[how] += 1
        return rel
