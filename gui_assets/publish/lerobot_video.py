"""The LeRobot export's video option: the agentview stream as lerobot's `video` feature.

Frames go, in episode order, into `videos/<key>/chunk-*/file-*.mp4`, AV1 through PyAV with the
encoder settings lerobot's own writer uses (libsvtav1, yuv420p, a keyframe every 2 frames,
crf 30); a file holds many episodes and a new one starts at an episode boundary once the open
one passes VIDEO_FILE_MB. Frame i of a file is shown at i / fps seconds, so an episode's
`from_timestamp` is the count of frames before it in its file. Lossy: docs/lerobot.md gives the
measured size and PSNR.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from gui_assets.core.atomic import sha256_file
from gui_assets.publish import lerobot_meta as meta

CODEC = "libsvtav1"
OPTIONS = {"g": "2", "crf": "30", "preset": "10"}
PIX_FMT = "yuv420p"


def video_info(frame_hw: tuple[int, int]) -> dict[str, Any]:
    """The `info` block lerobot keeps beside a video feature."""
    h, w = frame_hw
    return {
        "video.height": h,
        "video.width": w,
        "video.codec": "av1",
        "video.pix_fmt": PIX_FMT,
        "video.is_depth_map": False,
        "video.fps": meta.FPS,
        "video.channels": 3,
        "has_audio": False,
    }


@contextmanager
def _caller_scheduling_kept() -> Iterator[None]:
    """Puts the calling thread's scheduling policy back after a call into the encoder.

    Run as root, SVT-AV1 switches the thread that opens it (at the first frame) to SCHED_FIFO at
    priority 99 and leaves it there. Every process that thread starts afterwards (a Dagster step,
    a browser, a CPU-bound test helper) would inherit a real-time class that never yields to the
    rest of the machine. Its own encoder threads stay real-time while it encodes: upstream's
    choice, bounded by the export."""
    if not hasattr(os, "sched_getscheduler"):  # Linux only; elsewhere nothing to keep
        yield
        return
    policy, param = os.sched_getscheduler(0), os.sched_getparam(0)
    try:
        yield
    finally:
        if os.sched_getscheduler(0) != policy or os.sched_getparam(0) != param:
            os.sched_setscheduler(0, policy, param)


class VideoError(ValueError):
    """The video option cannot encode this dataset (the message says why)."""


class VideoFiles:
    """Encodes one video feature's frames into its MP4 files."""

    def __init__(self, root: Path, key: str, frame_hw: tuple[int, int]) -> None:
        try:
            import av  # the `video` extra: only this option needs FFmpeg
        except ImportError as e:
            raise VideoError("the LeRobot video option needs PyAV: pip install 'gui_assets[video]'") from e
        h, w = frame_hw
        if h % 2 or w % 2:
            raise VideoError(f"{w}x{h} frames: yuv420p video needs even sizes (set agentview_hw)")
        self._av = av
        self.root, self.key, self.frame_hw = root, key, frame_hw
        self.index = -1
        self.frames = 0  # in the open file
        self._bytes = 0  # encoded into the open file
        self._container: Any = None
        self._stream: Any = None
        self._path: Path | None = None
        self.written: list[tuple[Path, str]] = []

    def at_episode_start(self) -> tuple[int, int, float]:
        """(chunk, file, from_timestamp) of the next episode."""
        if self._container is None or self._bytes > meta.VIDEO_FILE_MB << 20:
            self._open()
        chunk, file = divmod(self.index, meta.CHUNKS_SIZE)
        return chunk, file, self.frames / meta.FPS

    def _open(self) -> None:
        self._close_file()
        self.index += 1
        chunk, file = divmod(self.index, meta.CHUNKS_SIZE)
        self._path = self.root / meta.VIDEO_PATH.format(
            video_key=self.key, chunk_index=chunk, file_index=file
        )
        self._path.parent.mkdir(parents=True, exist_ok=True)
        self._container = self._av.open(str(self._path), mode="w")
        stream = self._container.add_stream(CODEC, rate=meta.FPS, options=dict(OPTIONS))
        stream.height, stream.width = self.frame_hw
        stream.pix_fmt = PIX_FMT
        self._stream = stream
        self.frames = self._bytes = 0

    def add(self, frame: np.ndarray) -> None:
        picture = self._av.VideoFrame.from_ndarray(np.ascontiguousarray(frame), format="rgb24")
        picture.pts = self.frames
        with _caller_scheduling_kept():
            packets = self._stream.encode(picture)
        for packet in packets:
            self._bytes += packet.size
            self._container.mux(packet)
        self.frames += 1

    def _close_file(self) -> None:
        if self._container is None or self._path is None:
            return
        with _caller_scheduling_kept():
            packets = self._stream.encode()
        for packet in packets:
            self._container.mux(packet)
        self._container.close()
        self._container = self._stream = None
        self.written.append((self._path, sha256_file(self._path)))

    def close(self) -> list[tuple[Path, str]]:
        self._close_file()
        return self.written
