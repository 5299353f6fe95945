"""Frames for the shard writer: each step's agentview and eye-in-hand pixels, made ahead on a
thread pool.

`plan_episode` settles an episode's geometry without pixels (its causal cursor, eye windows,
frame size, and the runs of consecutive steps over one stored image, such as a page and its
SCROLL views, which are decoded once). `FrameEncoder` decodes, crops, fingerprints (for the
screen-overlap audit: core.fingerprint) and deflates those runs on threads (Wuffs or libspng, and
libdeflate, release the GIL) and hands them back in order, at most a window of runs ahead, so
memory is bounded by the threads' decoded pages, whatever the shard size.
"""

from __future__ import annotations

import itertools
from collections import Counter, deque
from collections.abc import Callable, Collection, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from PIL import Image

from gui_assets.core.budget import ByteBudget
from gui_assets.core.config import BuildConfig, usable_cpus
from gui_assets.core.cursor import EYE_SIZE, SCREEN_CENTRE, eye_rect, eye_window, next_cursor
from gui_assets.core.deflate import zlib_deflater
from gui_assets.core.drops import DropReason
from gui_assets.core.episode_store import ImageStore
from gui_assets.core.fingerprint import screen_fingerprint
from gui_assets.core.images import ImageError, decode_cost, decode_rgb, image_size, window_pixels
from gui_assets.core.ir import GuiEpisode
from gui_assets.pipeline.preview_frames import StepPictures, pictures


def frame_deflater(config: BuildConfig) -> Callable[[bytes | memoryview], bytes]:
    """The zlib-stream compressor of frame chunks under `config`: libdeflate at libdeflate_level,
    whose bytes depend on the chunk's bytes and the level alone; it releases the GIL."""
    return zlib_deflater(config.libdeflate_level)


def eye_crop(frame: np.ndarray, x0: int, y0: int) -> np.ndarray:
    crop = frame[y0 : y0 + EYE_SIZE, x0 : x0 + EYE_SIZE]
    if crop.shape[:2] != (EYE_SIZE, EYE_SIZE):  # a frame smaller than the window: pad, never stretch
        out = np.zeros((EYE_SIZE, EYE_SIZE, 3), np.uint8)
        out[: crop.shape[0], : crop.shape[1]] = crop
        return out
    return crop


@dataclass(frozen=True, slots=True)
class StepPixels:
    """What a worker needs to make one step's chunks; all geometry is settled beforehand."""

    left: int
    top: int
    width: int
    height: int
    out_h: int  # the demo's frame size; a step of another size is resized to it
    out_w: int
    eye_x0: int
    eye_y0: int
    preview: bool = False  # a preview candidate: its pictures are drawn from these pixels too


@dataclass(frozen=True, slots=True)
class PixelRun:
    """Consecutive steps over one stored image (a page and its SCROLL views): decoded once."""

    sha: str
    ext: str
    steps: tuple[StepPixels, ...]


@dataclass(frozen=True, slots=True)
class EpisodePlan:
    """An episode with its causal cursor and eye windows worked out: no pixels needed."""

    episode: GuiEpisode
    frame_hw: tuple[int, int]
    cursors: tuple[tuple[float, float], ...]
    rects: tuple[tuple[float, float, float, float], ...]
    native_hw: tuple[tuple[int, int], ...]
    runs: tuple[PixelRun, ...]


def frame_size(sizes: Iterable[tuple[int, int]], fixed: tuple[int, int] | None = None) -> tuple[int, int]:
    """A demo's frame (height, width): `fixed` when the build sets one (agentview_hw), else the
    size most of its observations have (ties: the larger), so an odd early frame (a page still
    loading, a window being resized) is resized to the others, never the others to it."""
    if fixed is not None:
        return fixed
    counts = Counter(sizes)
    return max(counts, key=lambda hw: (counts[hw], hw[0] * hw[1], hw))


def plan_episode(
    ep: GuiEpisode, fixed: tuple[int, int] | None = None, preview_steps: Collection[int] = ()
) -> EpisodePlan:
    if not ep.steps:
        raise ValueError(f"{ep.episode_id}: an episode with no steps reached the writer")
    H, W = frame_size(((s.observation.height, s.observation.width) for s in ep.steps), fixed)
    cursors, rects, native, runs = [], [], [], []
    run_steps: list[StepPixels] = []
    run_key: tuple[str, str] | None = None
    cursor = SCREEN_CENTRE
    shown = set(preview_steps)
    for t, step in enumerate(ep.steps):
        o = step.observation
        x0, y0 = eye_window(cursor, o.width, o.height)
        cursors.append(cursor)
        rects.append(eye_rect(x0, y0, o.width, o.height))
        native.append((o.height, o.width))
        if run_key != (o.image_sha256, o.image_ext) and run_steps:
            runs.append(PixelRun(run_key[0], run_key[1], tuple(run_steps)))  # type: ignore[index]
            run_steps = []
        run_key = (o.image_sha256, o.image_ext)
        run_steps.append(StepPixels(o.left, o.top, o.width, o.height, H, W, x0, y0, t in shown))
        # The next cursor comes from the params as stored (float32), so a reader of the shard
        # derives exactly this eye_rect: a window edge on a half pixel must round the same way.
        stored = tuple(float(v) for v in np.asarray(step.params, dtype=np.float32))
        cursor = next_cursor(cursor, step.action_type, stored, step.grounded)
    runs.append(PixelRun(run_key[0], run_key[1], tuple(run_steps)))  # type: ignore[index]
    return EpisodePlan(ep, (H, W), tuple(cursors), tuple(rects), tuple(native), tuple(runs))


class ScreenPrint(NamedTuple):
    """What the screen-overlap audit knows of a stored frame."""

    fingerprint: bytes  # core.fingerprint.screen_fingerprint: near-duplicates differ in a few bits
    # Adler-32 of its pixels, free: the trailer of the frame's zlib chunk (RFC 1950). With the
    # fingerprint, equal means the same pixels.
    pixels_adler32: int


# Per step, (agentview, eye_in_hand, pictures, print): the deflated chunks, written with
# write_direct_chunk; the preview's pictures of a candidate step, else None; the stored frame's
# ScreenPrint.
StepChunks = tuple[bytes, bytes, StepPictures | None, ScreenPrint]


class EpisodeChunks:
    """One episode's step chunks, in order, as the encoder finishes them.

    Iterating raises ImageError at the first step whose image would not decode; `skip()`
    discards whatever the consumer did not take, so the stream stays aligned.
    """

    def __init__(self, stream: Iterator[tuple[bool, list[StepChunks] | ImageError]]) -> None:
        self._stream = stream
        self._done = False

    def __iter__(self) -> Iterator[StepChunks]:
        while not self._done:
            last, result = next(self._stream)
            self._done = last
            if isinstance(result, ImageError):
                self.skip()
                raise result
            yield from result

    def skip(self) -> None:
        while not self._done:
            self._done, _ = next(self._stream)


class FrameEncoder:
    """Decodes, crops and deflates steps on a thread pool; results come back in order.

    At most `window` runs are in flight, and every decoded page and every finished chunk held in
    the window draws from one ByteBudget (`config.decode_budget_mb`), so memory is bounded by the
    budget whatever the pages, episodes or shards. A page is decoded only down to the last row
    its views need. A page needing more than the whole budget is refused, not decoded.
    """

    def __init__(
        self,
        images: ImageStore,
        config: BuildConfig,
        threads: int | None = None,
    ) -> None:
        self.images = images
        self._compress = frame_deflater(config)
        self.threads = threads or usable_cpus()
        self.window = 2 * self.threads + 2
        self.budget = ByteBudget(config.decode_budget_bytes)
        self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="gui-assets-frames")

    def _deflate(self, a: np.ndarray) -> bytes:
        return self._compress(memoryview(np.ascontiguousarray(a)).cast("B"))

    def _encode(self, ticket: int, run: PixelRun) -> tuple[list[StepChunks] | ImageError, int]:
        """The run's chunks (or why not) and the bytes of budget they still hold."""
        try:
            data = self.images.get(run.sha, run.ext)
            width, height = image_size(data)
        except (ImageError, OSError) as e:
            self.budget.pass_turn(ticket)
            if isinstance(e, ImageError):
                return e, 0
            return ImageError(DropReason.UNDECODABLE_IMAGE, f"image missing from the store: {e}"), 0
        rows = min(height, max(s.top + s.height for s in run.steps))
        out_bytes = sum(3 * (s.out_h * s.out_w + EYE_SIZE * EYE_SIZE) for s in run.steps)
        need = decode_cost(data, width, height, rows) + out_bytes  # the decode, then the chunks
        if not self.budget.acquire(ticket, need):
            return ImageError(
                DropReason.IMAGE_TOO_LARGE, f"{width}x{height} px page: {need} B to decode is over the budget"
            ), 0
        held = 0
        try:
            out = self._crop_all(decode_rgb(data, rows), run)
            held = sum(_nbytes(c) for step in out for c in step)
            return out, held
        except ImageError as e:
            return e, 0
        finally:
            self.budget.release(need - held)

    def _crop_all(self, page: np.ndarray, run: PixelRun) -> list[StepChunks]:
        out: list[StepChunks] = []
        for s in run.steps:
            frame = window_pixels(page, s.left, s.top, s.width, s.height)
            eye = eye_crop(frame, s.eye_x0, s.eye_y0)
            if frame.shape[:2] != (s.out_h, s.out_w):  # normalized coordinates survive the resize
                frame = np.asarray(
                    Image.fromarray(frame).resize((s.out_w, s.out_h), Image.Resampling.BILINEAR)
                )
            shown = pictures(frame, eye) if s.preview else None
            chunk = self._deflate(frame)
            printed = ScreenPrint(screen_fingerprint(frame), int.from_bytes(chunk[-4:], "big"))
            out.append((chunk, self._deflate(eye), shown, printed))
        return out

    def episodes(self, plans: Iterable[EpisodePlan]) -> Iterator[tuple[EpisodePlan, EpisodeChunks]]:
        """(plan, its chunks) per plan, in order; later episodes are encoded ahead."""
        order: deque[EpisodePlan] = deque()
        flat = self._flat(plans, order)
        while True:
            try:
                first = next(flat)
            except StopIteration:
                return
            plan = order.popleft()
            chunks = EpisodeChunks(_prepend(first, flat))
            yield plan, chunks
            chunks.skip()

    def _flat(
        self, plans: Iterable[EpisodePlan], order: deque[EpisodePlan]
    ) -> Iterator[tuple[bool, list[StepChunks] | ImageError]]:
        def runs() -> Iterator[tuple[bool, PixelRun]]:
            for plan in plans:
                order.append(plan)
                for i, run in enumerate(plan.runs):
                    yield i == len(plan.runs) - 1, run

        source = runs()
        futures: deque[tuple[bool, Future[tuple[list[StepChunks] | ImageError, int]]]] = deque()
        tickets = itertools.count()

        def top_up() -> None:
            while len(futures) < self.window:
                nxt = next(source, None)
                if nxt is None:
                    return
                futures.append((nxt[0], self._pool.submit(self._encode, next(tickets), nxt[1])))

        try:
            top_up()
            while futures:
                last, fut = futures.popleft()
                result, held = fut.result()
                self.budget.release(held)  # the writer takes the chunks now
                top_up()
                yield last, result
        finally:
            for _, fut in futures:
                fut.cancel()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> FrameEncoder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _nbytes(chunk: bytes | np.ndarray | StepPictures | ScreenPrint | None) -> int:
    if chunk is None:
        return 0
    if isinstance(chunk, ScreenPrint):
        return len(chunk.fingerprint)
    if isinstance(chunk, tuple):
        return sum(len(c) for c in chunk)
    return chunk.nbytes if isinstance(chunk, np.ndarray) else len(chunk)


def _prepend(first: tuple[bool, Any], rest: Iterator[tuple[bool, Any]]) -> Iterator[tuple[bool, Any]]:
    yield first
    if first[0]:
        return
    for item in rest:
        yield item
        if item[0]:
            return
