"""Persisting the IR of one partition: Parquet tables plus a content-addressed image store.

    <work>/episodes/episodes.parquet   one row per GuiEpisode (ids, instruction, attrs)
    <work>/episodes/steps.parquet      one row per GuiStep, episodes contiguous, in step order
    <work>/episodes/stats.json         the adapter's BuildStats
    <out>/_work/images/ab/abcdef....png  the ORIGINAL screenshot bytes, named by sha256

Both tables scan with polars/pyarrow (`pl.scan_parquet`). The directory is written under a temp
name and swapped in whole, so a reader never sees half of a partition's IR.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import threading
from collections.abc import Collection, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from gui_assets.core.atomic import TMP_MARK, atomic_write_bytes, atomic_write_text, sweep_temps
from gui_assets.core.ir import ActionType, GuiEpisode, GuiStep, Observation, SourceRef
from gui_assets.core.stats import BuildStats

EPISODES_FILE = "episodes.parquet"
STEPS_FILE = "steps.parquet"
STATS_FILE = "stats.json"

_F4 = pa.list_(pa.float64(), 4)  # exact round trip; the HDF5 contract narrows to float32

EPISODE_SCHEMA = pa.schema(
    [
        ("episode_id", pa.string()),
        ("source", pa.string()),
        ("instruction", pa.string()),
        ("success", pa.bool_()),
        ("num_steps", pa.int32()),
        ("attrs", pa.string()),  # JSON object of source ids
        ("source_ref", pa.string()),  # JSON, see GuiEpisode.source_ref_json
        ("content_hash", pa.string()),
        ("record_hash", pa.string()),  # everything stored of the episode (record_hash below)
    ]
)

STEP_SCHEMA = pa.schema(
    [
        ("episode_id", pa.string()),
        ("step_index", pa.int32()),
        ("action_type", pa.string()),
        ("params", _F4),
        ("mask", _F4),
        ("text", pa.string()),
        ("desc", pa.string()),
        ("image_sha256", pa.string()),
        ("image_ext", pa.string()),
        ("obs_left", pa.int32()),
        ("obs_top", pa.int32()),
        ("obs_width", pa.int32()),
        ("obs_height", pa.int32()),
        ("scroll_x", pa.float64()),
        ("scroll_y", pa.float64()),
        ("ref_repo_id", pa.string()),
        ("ref_file", pa.string()),
        ("ref_row", pa.int64()),
        ("ref_member", pa.string()),
        ("thought", pa.string()),
        ("obs_stale", pa.bool_()),
        ("ungrounded_reason", pa.string()),
        ("annotations", pa.string()),
    ]
)

_ROW_GROUP_STEPS = 2048
_ROW_GROUP_EPISODES = 512


class ImageStore:
    """Content-addressed original screenshot bytes: <root>/<sha[:2]>/<sha>.<ext>.

    With `writers` > 0, `put` hands the (atomic, fsynced) file write to that many background
    threads, so an adapter keeps parsing while the disk works; at most `max_pending` writes
    wait at once. `flush()` waits for them and raises the first failure (a full disk, say):
    call it before publishing anything that names these images.
    """

    def __init__(self, root: Path, writers: int = 0, max_pending: int = 64) -> None:
        self.root = root
        self._root = os.fspath(root)
        self._pool = ThreadPoolExecutor(writers, thread_name_prefix="gui-assets-images") if writers else None
        self._pending: dict[str, Future[None]] = {}
        self._slots = threading.BoundedSemaphore(max_pending)

    def path(self, sha256: str, ext: str) -> Path:
        return self.root / sha256[:2] / f"{sha256}.{ext}"

    def sweep(self) -> int:
        """Remove temp files that killed writers left (other live builds share the store)."""
        if not self.root.is_dir():
            return 0
        return sum(sweep_temps(d, only_dead_writers=True) for d in self.root.iterdir() if d.is_dir())

    def put(self, data: bytes, ext: str) -> str:
        sha = hashlib.sha256(data).hexdigest()
        if sha in self._pending:
            return sha
        # A plain string for the common "already stored" case: pathlib interns every part of
        # every path it makes, churning the process-wide interned table once per step.
        if os.path.exists(os.path.join(self._root, sha[:2], f"{sha}.{ext}")):
            return sha
        p = self.path(sha, ext)
        if self._pool is None:
            atomic_write_bytes(p, data)
            return sha
        self._slots.acquire()
        fut = self._pool.submit(atomic_write_bytes, p, data)
        fut.add_done_callback(lambda _: self._slots.release())
        self._pending[sha] = fut
        if len(self._pending) > 4 * 64:
            self._reap()
        return sha

    def _reap(self) -> None:
        for sha in [s for s, f in self._pending.items() if f.done()]:
            self._pending.pop(sha).result()  # a failed write raises here, early

    def flush(self) -> None:
        """Wait for every background write; raise the first one that failed."""
        pending, self._pending = self._pending, {}
        errors = [f.exception() for f in pending.values()]
        for e in errors:
            if e is not None:
                raise e

    def close(self) -> None:
        try:
            self.flush()
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True)

    def close_quietly(self) -> None:
        """Stop after a failure elsewhere: wait for the writes, keep the original error."""
        with contextlib.suppress(Exception):
            self.close()

    def get(self, sha256: str, ext: str) -> bytes:
        if sha256 in self._pending:
            self._pending.pop(sha256).result()
        return self.path(sha256, ext).read_bytes()


def episode_content_hash(episode: GuiEpisode) -> str:
    """A hash of what a model would see and do: frames, windows, actions, instruction.

    Two episodes with the same hash are the same training example whatever their ids, which
    is what split disjointness is judged on.
    """
    h = hashlib.sha256(episode.instruction.encode("utf-8"))
    for s in episode.steps:
        o = s.observation
        row = [s.action_type.name, s.params, s.mask, s.text, o.image_sha256, o.left, o.top, o.width, o.height]
        if _desc_carries_the_action(s):
            row.append(s.desc)
        h.update(json.dumps(row, ensure_ascii=False).encode("utf-8"))
    return h.hexdigest()


def _desc_carries_the_action(step: GuiStep) -> bool:
    """Does the desc say what the type, params and mask do not? A direction-only (or ungrounded)
    SCROLL's view direction, and a click variant (`long_press(...)`, `right_click(...)`): a tap
    and a long press on one point are two examples. Other steps' hashes leave the desc out, so
    they stay what they were before these were told apart."""
    if step.action_type is ActionType.SCROLL:
        return not step.grounded
    return step.action_type is ActionType.CLICK and not step.desc.startswith("click(")


def record_hash(episode_row: dict[str, Any], step_rows: list[dict[str, Any]]) -> str:
    """A hash of every stored field of an episode and its steps: what a writer can read of it
    (its frames through their sha256). Unlike the content hash, ids, descs, references and
    reasoning count too, so it changes exactly when anything written from the episode may."""
    h = hashlib.sha256()
    for row in (episode_row, *step_rows):
        h.update(json.dumps(row, sort_keys=True, ensure_ascii=False).encode("utf-8") + b"\n")
    return h.hexdigest()


def _step_row(episode_id: str, index: int, s: GuiStep) -> dict[str, Any]:
    o = s.observation
    return {
        "episode_id": episode_id,
        "step_index": index,
        "action_type": s.action_type.name,
        "params": list(s.params),
        "mask": list(s.mask),
        "text": s.text,
        "desc": s.desc,
        "image_sha256": o.image_sha256,
        "image_ext": o.image_ext,
        "obs_left": o.left,
        "obs_top": o.top,
        "obs_width": o.width,
        "obs_height": o.height,
        "scroll_x": s.scroll[0],
        "scroll_y": s.scroll[1],
        "ref_repo_id": s.ref.repo_id,
        "ref_file": s.ref.file,
        "ref_row": s.ref.row,
        "ref_member": s.ref.member,
        "thought": s.thought,
        "obs_stale": s.obs_stale,
        "ungrounded_reason": s.ungrounded_reason,
        "annotations": s.annotations,
    }


class EpisodeWriter:
    """Streams episodes into a partition's IR directory; `close(stats)` publishes it atomically.

    Both tables are written as episodes arrive, a row group at a time, so the writer holds a
    window of rows whatever the partition's size; episodes and steps are in the same order.
    """

    def __init__(self, directory: Path) -> None:
        self.final = directory
        self.tmp = directory.with_name(f".{directory.name}{TMP_MARK}{os.getpid()}")
        if self.tmp.exists():
            shutil.rmtree(self.tmp)
        self.tmp.mkdir(parents=True)
        self._steps = pq.ParquetWriter(self.tmp / STEPS_FILE, STEP_SCHEMA, compression="zstd")
        self._episodes = pq.ParquetWriter(self.tmp / EPISODES_FILE, EPISODE_SCHEMA)
        self._step_rows: list[dict[str, Any]] = []
        self._episode_rows: list[dict[str, Any]] = []
        self._closed = False

    def add(self, episode: GuiEpisode) -> None:
        row: dict[str, Any] = {
            "episode_id": episode.episode_id,
            "source": episode.source,
            "instruction": episode.instruction,
            "success": episode.success,
            "num_steps": len(episode.steps),
            "attrs": json.dumps(episode.attrs, sort_keys=True, ensure_ascii=False),
            "source_ref": episode.source_ref_json(),
            "content_hash": episode_content_hash(episode),
        }
        steps = [_step_row(episode.episode_id, i, s) for i, s in enumerate(episode.steps)]
        row["record_hash"] = record_hash(row, steps)
        self._episode_rows.append(row)
        self._step_rows.extend(steps)
        # Both tables flush together, so the window is one row group of steps (or of episodes,
        # when episodes are short) whatever the partition.
        if len(self._step_rows) >= _ROW_GROUP_STEPS or len(self._episode_rows) >= _ROW_GROUP_EPISODES:
            self._flush()

    def _flush(self) -> None:
        if self._step_rows:
            self._steps.write_table(pa.Table.from_pylist(self._step_rows, schema=STEP_SCHEMA))
            self._step_rows = []
        if self._episode_rows:
            self._episodes.write_table(pa.Table.from_pylist(self._episode_rows, schema=EPISODE_SCHEMA))
            self._episode_rows = []

    def close(self, stats: BuildStats) -> None:
        if self._closed:
            return
        self._flush()
        self._steps.close()
        self._episodes.close()
        atomic_write_text(self.tmp / STATS_FILE, json.dumps(stats.to_dict(), indent=2, sort_keys=True))
        _swap_directory(self.tmp, self.final)
        self._closed = True

    def abort(self) -> None:
        if not self._closed:
            for w in (self._steps, self._episodes):
                with contextlib.suppress(Exception):
                    w.close()
            shutil.rmtree(self.tmp, ignore_errors=True)
            self._closed = True


def _swap_directory(new: Path, final: Path) -> None:
    """Replace `final` by `new` with renames only, so readers see the old or the new, never a mix."""
    old = final.with_name(f".{final.name}.old{TMP_MARK}{os.getpid()}")  # swept like any temp
    if final.exists():
        os.replace(final, old)
    os.replace(new, final)
    shutil.rmtree(old, ignore_errors=True)


def read_stats(directory: Path) -> BuildStats:
    return BuildStats.from_dict(json.loads((directory / STATS_FILE).read_text(encoding="utf-8")))


def read_episode_table(directory: Path) -> pa.Table:
    return pq.read_table(directory / EPISODES_FILE)


# A step row's observation, in Observation's field order.
OBSERVATION_COLUMNS = ("image_sha256", "image_ext", "obs_left", "obs_top", "obs_width", "obs_height")


def observation_of(row: dict[str, Any]) -> Observation:
    """The Observation a step row (of the step table, or any selection of its columns) stores."""
    return Observation(*(row[c] for c in OBSERVATION_COLUMNS))


def _steps_from_rows(rows: list[dict[str, Any]]) -> list[GuiStep]:
    return [
        GuiStep(
            action_type=ActionType[r["action_type"]],
            params=tuple(r["params"]),  # type: ignore[arg-type]
            mask=tuple(r["mask"]),  # type: ignore[arg-type]
            text=r["text"],
            desc=r["desc"],
            observation=observation_of(r),
            scroll=(r["scroll_x"], r["scroll_y"]),
            ref=SourceRef(r["ref_repo_id"], r["ref_file"], r["ref_row"], r["ref_member"]),
            thought=r["thought"],
            obs_stale=r["obs_stale"],
            ungrounded_reason=r["ungrounded_reason"],
            annotations=r["annotations"],
        )
        for r in rows
    ]


def table_rows(
    path: Path, batch_size: int, only: Collection[str] | None = None, columns: list[str] | None = None
) -> Iterator[dict[str, Any]]:
    """An IR table's rows (`columns` of them, or all) in stored order; with `only`, the rows of
    those episodes alone: row groups without any are never read, and the other rows are dropped
    in Arrow before Python sees them (`columns` then has to name `episode_id`)."""
    pf = pq.ParquetFile(path)
    if only is None:
        for batch in pf.iter_batches(batch_size=batch_size, columns=columns):
            yield from batch.to_pylist()
        return
    wanted = pa.array(sorted(only), pa.string())

    def holds(group: int) -> bool:
        ids = pf.read_row_group(group, columns=["episode_id"]).column(0)
        return bool(pc.any(pc.is_in(ids, value_set=wanted)).as_py())

    groups = [g for g in range(pf.num_row_groups) if holds(g)]
    if not groups:
        return
    for batch in pf.iter_batches(batch_size=batch_size, row_groups=groups, columns=columns):
        yield from batch.filter(pc.is_in(batch.column("episode_id"), value_set=wanted)).to_pylist()


def iter_episodes(directory: Path, only: Collection[str] | None = None) -> Iterator[GuiEpisode]:
    """Stream the partition's episodes in stored order; memory holds about one episode. With
    `only`, those episodes alone, at the cost of their rows: a shard unit reads its own share
    of the IR, since reading the whole partition once per unit would cost time quadratic in the
    partition's size.

    The episode table is read beside the step table, not indexed whole: EpisodeWriter writes
    both in the same episode order (an episode without steps has no step rows and is skipped).
    """
    meta = table_rows(directory / EPISODES_FILE, 256, only)
    pending: list[dict[str, Any]] = []
    current: str | None = None

    def build(eid: str, rows: list[dict[str, Any]]) -> GuiEpisode:
        m = next((m for m in meta if m["episode_id"] == eid), None)
        if m is None:
            raise ValueError(f"{directory}: the step table names {eid!r} out of the episode table's order")
        return GuiEpisode(
            episode_id=eid,
            source=m["source"],
            instruction=m["instruction"],
            steps=_steps_from_rows(rows),
            success=m["success"],
            attrs=json.loads(m["attrs"]),
        )

    for row in table_rows(directory / STEPS_FILE, 1024, only):
        if row["episode_id"] != current:
            if current is not None:
                yield build(current, pending)
            current, pending = row["episode_id"], []
        pending.append(row)
    if current is not None:
        yield build(current, pending)
