"""The cua-lite export (seed 001's canonical local layout) of every built directory.

    <out>/cua_lite/cua-lite/GuiAgent/images/<sha256[:2]>/<sha256>.<ext>      content-addressed frames
    <out>/cua_lite/cua-lite/GuiAgent/<platform>/use/<split>/<directory>.parquet

One row per episode: `images` (paths relative to `<out>/cua_lite`), `messages` and `metadata` as
JSON strings, in the shape cua-lite's publish gate accepts. `metadata` holds exactly
metadata_kind, dims (`[platform, "use"]`, the path's), extra_tool_schemas (the platform's
standalone tools in cua-lite's nested shape), valid_actions (null) and others (ids, source,
outcome; never a split). The user turn shows the first screen and the instruction; each
assistant turn is one tool call (`call_0000`, ...), its dataset reasoning in `inline_reasoning`
and its step's desc in `action_description` parts (coordinates in [0, 1000], as in the calls);
the `tool` result after a non-finish call shows the next screen; the row ends on an assistant
turn. An observation that is a whole screenshot keeps its original bytes; a window of one
(Mind2Web's viewport slices) is cropped and stored as PNG. How steps become calls, how a row
finishes and the rule for a step cua-lite cannot express are in `cua_lite_actions`; key names
in `cua_lite_keys`.

Cost follows what changed: a directory whose inputs are unchanged since the last export is
reused from its manifest (`cua_lite_manifest`), not read again; frames are placed by
`cua_lite_frames` (hard links of whole screenshots, windows encoded on threads). A directory is
written a row group at a time, with a bounded window of rows waiting for their frames, so memory
does not grow with the directory.

Splits: cua-lite's only splits are `train` and `validation`, and its reader takes a file under
any other folder as training data, so only those two folders are written (and stale parquet
files of an earlier export are removed). By the directory's `build.source.split_role`: a
"train" directory's main shards -> train, its holdout (`_val_`) shards -> validation; a
"validation" directory (a benchmark's test or validation split) -> validation; an "evaluation"
directory (a benchmark's evaluation tasks) is left out, or exported as validation when
`evaluation_as_validation` asks for it, never as train. A directory built before split roles
were recorded has no role: it is split by its holdout only (main -> train), and reported with
`split_role: null` so it can be rebuilt.

Left out and counted (the `left_out` result, by reason): episodes of an evaluation directory
(`evaluation_split`), of a directory whose platform is not recorded (`unknown_platform`) or is
one this export has no action set for (`unsupported_platform`), and
episodes with no assistant turn (`no_action`); steps by the reasons in `cua_lite_actions`; key
chords by the reasons in `cua_lite_keys`. `truncated` counts the rows that end early, by reason.
"""

from __future__ import annotations

import functools
import json
from collections import Counter, deque
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from gui_assets.core.atomic import atomic_path, atomic_write_text, sha256_file
from gui_assets.core.episode_store import ImageStore, iter_episodes
from gui_assets.core.images import ImageError
from gui_assets.core.ir import GuiEpisode
from gui_assets.core.layout import DatasetInfo, OutLayout, built_directories
from gui_assets.core.splits import VAL
from gui_assets.publish.cua_lite_actions import (
    DONE,
    FINISH_TOOLS,
    PLATFORM_TOOLS,
    Call,
    RowPlan,
    description,
    extra_tool_schemas,
    plan_episode,
)
from gui_assets.publish.cua_lite_frames import Frames
from gui_assets.publish.cua_lite_manifest import (
    DirectoryExport,
    ExportRun,
    code_version,
    directory_key,
    manifest_path,
    reusable,
    sweep_manifests,
)
from gui_assets.sources.spec import SPLIT_ROLES

EXPORT_DIR = "cua_lite"
NAME = "cua-lite/GuiAgent"
SCHEMA = pa.schema([("images", pa.list_(pa.string())), ("messages", pa.string()), ("metadata", pa.string())])
TRAIN, VALIDATION = "train", "validation"
EVALUATION_SPLIT = "evaluation_split"
UNKNOWN_PLATFORM = "unknown_platform"
UNSUPPORTED_PLATFORM = "unsupported_platform"
# An episode one of whose shown frames is absent from the image store, or will not decode: the
# IR is damaged; the episode is left out and counted, the export goes on.
MISSING_IMAGE = "missing_image"
UNDECODABLE_IMAGE = "undecodable_image"

IMAGES_DIR = f"{NAME}/images"
ROW_GROUP = 256  # rows written at a time
WINDOW = 64  # rows waiting for their frames at most


def export_split(role: str | None, holdout: bool, evaluation_as_validation: bool = False) -> str | None:
    """The cua-lite split of an episode: by its directory's split role and whether it is in the
    holdout; None when it is left out (an evaluation directory not asked for)."""
    if role is not None and role not in SPLIT_ROLES:
        raise ValueError(f"split_role {role!r} is none of {SPLIT_ROLES}: teach the cua-lite export about it")
    if role == "evaluation":
        return VALIDATION if evaluation_as_validation else None
    return VALIDATION if holdout or role == "validation" else TRAIN


def _assistant(call: Call, call_id: str) -> dict[str, Any]:
    """One assistant turn: reasoning and description parts, then its single tool call."""
    thoughts = list(dict.fromkeys(s.thought for s in call.steps if s.thought))
    content = [{"type": "inline_reasoning", "text": t} for t in thoughts]
    content.append({"type": "action_description", "text": "; ".join(description(s) for s in call.steps)})
    function = {"name": call.tool, "arguments": call.arguments}
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }


def _messages(
    ep: GuiEpisode, plan: RowPlan, frames: Frames
) -> tuple[list[Future[str]], list[dict[str, Any]]]:
    images = [frames.ref(ep.steps[0])]
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "image", "index": 0}, {"type": "text", "text": ep.instruction}]}
    ]
    for i, call in enumerate(plan.calls):
        call_id = f"call_{i:04d}"
        messages.append(_assistant(call, call_id))
        after = plan.calls[i + 1].steps[0] if i + 1 < len(plan.calls) else plan.done
        if after is None or call.tool in FINISH_TOOLS:
            continue  # the last turn: its result is never shown
        images.append(frames.ref(after))
        messages.append(
            {
                "role": "tool",
                "tool_call_id": call_id,
                "content": [{"type": "image", "index": len(images) - 1}],
            }
        )
    if plan.done is not None:
        messages.append({"role": "assistant", "content": [{"type": "text", "text": DONE}]})
    return images, messages


@functools.cache
def _schemas(platform: str) -> list[dict[str, Any]]:
    """The platform's schemas, copied once: rows only serialize them (a copy a row was ~20% of
    an export's time)."""
    return extra_tool_schemas(platform)


def _draft(
    ep: GuiEpisode, frames: Frames, platform: str, directory: str
) -> tuple[dict[str, Any], list[Future[str]], RowPlan]:
    """The row without its images, the futures of their paths, and the plan; the row is empty
    when the plan leaves the episode out. The messages name images by index, so a row is final
    before its windows are encoded."""
    plan = plan_episode(ep.steps, platform)
    if plan.left_out:
        return {}, [], plan
    images, messages = _messages(ep, plan, frames)
    metadata = {
        "metadata_kind": "cua",
        "dims": [platform, "use"],
        "extra_tool_schemas": _schemas(platform),
        "valid_actions": None,
        "others": {
            "id": ep.episode_id,
            "task_id": ep.episode_id,
            "source": ep.source,
            "source_id": ep.episode_id,
            "directory": directory,
            "episode_return": 1.0 if ep.success else 0.0,
            "attrs": ep.attrs,
            **plan.others,
        },
    }
    row = {
        "messages": json.dumps(messages, ensure_ascii=False),
        "metadata": json.dumps(metadata, ensure_ascii=False),
    }
    return row, images, plan


def episode_row(
    ep: GuiEpisode, frames: Frames, platform: str, directory: str
) -> tuple[dict[str, Any], RowPlan]:
    """(the row, its plan) of one episode; the row is empty when the plan leaves the episode out."""
    row, images, plan = _draft(ep, frames, platform, directory)
    return ({"images": [f.result() for f in images], **row} if row else {}), plan


@dataclass(slots=True)
class _Tally:
    """What the export left out, by reason, and the rows that end early."""

    episodes: Counter[str] = field(default_factory=Counter)
    steps: Counter[str] = field(default_factory=Counter)
    keys: Counter[str] = field(default_factory=Counter)
    truncated: Counter[str] = field(default_factory=Counter)

    def leave_out(self, ep: GuiEpisode, reason: str) -> None:
        self.leave_out_steps(len(ep.steps), reason)

    def leave_out_steps(self, steps: int, reason: str) -> None:
        self.episodes[reason] += 1
        self.steps[reason] += steps

    def add(self, plan: RowPlan) -> None:
        self.steps.update(plan.steps_left_out)
        self.keys.update(plan.keys_dropped)
        if plan.left_out:
            self.episodes[plan.left_out] += 1
        elif plan.others.get("truncated"):
            self.truncated[plan.others["truncated_reason"]] += 1

    def merge(self, counts: dict[str, Any]) -> None:
        """Add another tally's to_dict() (a cached directory's): `update` keeps zero counts, as
        counting the same plans here would."""
        self.episodes.update(counts["left_out"]["episodes"])
        self.steps.update(counts["left_out"]["steps"])
        self.keys.update(counts["left_out"]["keys"])
        self.truncated.update(counts["truncated"])

    def to_dict(self) -> dict[str, Any]:
        def plain(c: Counter[str]) -> dict[str, int]:
            return dict(sorted(c.items()))

        return {
            "left_out": {
                "episodes": plain(self.episodes),
                "steps": plain(self.steps),
                "keys": plain(self.keys),
            },
            "truncated": plain(self.truncated),
        }


def _parts(layout: OutLayout, directory: str) -> dict[str, str]:
    """episode_id -> main/val from the directory's split table (all main without one)."""
    path = layout.splits(directory)
    if not path.is_file():
        return {}
    table = pq.read_table(path, columns=["episode_id", "part"]).to_pydict()
    return dict(zip(table["episode_id"], table["part"], strict=True))


def _platform_problem(platform: object) -> str:
    if platform is None:
        return UNKNOWN_PLATFORM
    return "" if platform in PLATFORM_TOOLS else UNSUPPORTED_PLATFORM


def _export_directory(
    info: DatasetInfo, layout: OutLayout, frames: Frames, evaluation_as_validation: bool, tally: _Tally
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(split, row) of one built directory in episode order; what is left out goes to `tally`.
    Up to WINDOW rows wait for their frames at once, while the pool encodes their windows."""
    platform = info.source_record.get("platform")
    role = info.source_record.get("split_role")
    problem = _platform_problem(platform)
    parts = _parts(layout, info.directory)
    waiting: deque[tuple[str, dict[str, Any], list[Future[str]], RowPlan, int]] = deque()

    def finish() -> Iterator[tuple[str, dict[str, Any]]]:
        split, row, images, plan, steps = waiting.popleft()
        try:
            paths = [f.result() for f in images]
        except (FileNotFoundError, ImageError) as e:
            reason = MISSING_IMAGE if isinstance(e, FileNotFoundError) else UNDECODABLE_IMAGE
            tally.leave_out_steps(steps, reason)
            return
        tally.add(plan)
        if row:
            yield split, {"images": paths, **row}

    for ep in iter_episodes(layout.episodes(info.directory)):
        split = export_split(role, parts.get(ep.episode_id) == VAL, evaluation_as_validation)
        if problem or split is None:
            tally.leave_out(ep, problem or EVALUATION_SPLIT)
            continue
        row, images, plan = _draft(ep, frames, str(platform), info.directory)
        waiting.append((split, row, images, plan, len(ep.steps)))
        if len(waiting) > WINDOW:
            yield from finish()
    while waiting:
        yield from finish()


def _prune(export_root: Path, keep: set[str]) -> list[str]:
    """Remove the parquet files of an earlier export this one did not write (a split folder of
    the old layout would otherwise stay readable as training data)."""
    removed = []
    for p in sorted((export_root / NAME).rglob("*.parquet")):
        rel = p.relative_to(export_root).as_posix()
        if rel not in keep:
            p.unlink()
            removed.append(rel)
    return removed


class _SplitFiles:
    """A directory's parquet file per split, each opened at its first row and written a row
    group at a time under a temp name; `stack` publishes them on success, removes them on error."""

    def __init__(self, root: Path, info: DatasetInfo, stack: ExitStack) -> None:
        self.root = root
        self.stack = stack
        self.stem = f"{NAME}/{info.source_record.get('platform')}/use/{{}}/{info.directory}.parquet"
        self.rows = {TRAIN: 0, VALIDATION: 0}
        self._pending: dict[str, list[dict[str, Any]]] = {TRAIN: [], VALIDATION: []}
        self._open: dict[str, tuple[Path, pq.ParquetWriter]] = {}

    def add(self, split: str, row: dict[str, Any]) -> None:
        self._pending[split].append(row)
        self.rows[split] += 1
        if len(self._pending[split]) >= ROW_GROUP:
            self._flush(split)

    def _flush(self, split: str) -> None:
        if split not in self._open:
            tmp = self.stack.enter_context(atomic_path(self.root / self.stem.format(split)))
            self._open[split] = (tmp, self.stack.enter_context(pq.ParquetWriter(tmp, SCHEMA)))
        self._open[split][1].write_table(pa.Table.from_pylist(self._pending[split], schema=SCHEMA))
        self._pending[split] = []

    def finish(self) -> list[dict[str, Any]]:
        """Close the files (the stack publishes them); their {path, rows, bytes, sha256}."""
        files = []
        for split in (TRAIN, VALIDATION):
            if self._pending[split]:
                self._flush(split)
            if split in self._open:
                tmp, writer = self._open[split]
                writer.close()
                files.append(
                    {
                        "path": self.stem.format(split),
                        "rows": self.rows[split],
                        "bytes": tmp.stat().st_size,
                        "sha256": sha256_file(tmp),
                    }
                )
        return files


def _compute(
    info: DatasetInfo, layout: OutLayout, frames: Frames, evaluation_as_validation: bool, key: str, root: Path
) -> DirectoryExport:
    """Export one directory from its IR: write its parquet files, return its share."""
    tally = _Tally()
    with ExitStack() as stack:
        out = _SplitFiles(root, info, stack)
        for split, row in _export_directory(info, layout, frames, evaluation_as_validation, tally):
            out.add(split, row)
        files = out.finish()
    figures = {
        "platform": info.source_record.get("platform"),
        "split_role": info.source_record.get("split_role"),
        "rows": dict(out.rows),
    }
    return DirectoryExport(key, figures, tally.to_dict(), files)


def run_export(out: Path, evaluation_as_validation: bool = False) -> tuple[dict[str, Any], ExportRun]:
    """write_export's result, and how it was reached (ExportRun)."""
    layout = OutLayout(out)
    root = out / EXPORT_DIR
    code = code_version()
    tally = _Tally()
    files: dict[str, int] = {}
    directories: dict[str, Any] = {}
    run = ExportRun()
    infos = built_directories(out)
    with Frames(ImageStore(layout.image_store), root, IMAGES_DIR) as frames:
        for info in infos:
            key = directory_key(info, layout, evaluation_as_validation, code)
            manifest = manifest_path(out, info.directory)
            share, why = reusable(manifest, key, root)
            if share is None:
                share = _compute(info, layout, frames, evaluation_as_validation, key, root)
                if manifest is not None:
                    atomic_write_text(manifest, json.dumps(share.to_dict(), ensure_ascii=False))
                run.recomputed[info.directory] = why
            else:
                run.reused.append(info.directory)
            tally.merge(share.tally)
            directories[info.directory] = share.figures
            files.update((f["path"], f["rows"]) for f in share.files)
        run.images = dict(sorted(frames.placed.items()))
    sweep_manifests(out, {info.directory for info in infos})
    removed = _prune(root, set(files))
    result = {
        "root": str(root),
        "files": files,
        "directories": directories,
        **tally.to_dict(),
        "removed": removed,
    }
    return result, run


def write_export(out: Path, evaluation_as_validation: bool = False) -> dict[str, Any]:
    """Export every built directory under `out`, recomputing only the directories whose inputs
    changed since the last export (see the module docstring).

    `evaluation_as_validation`: export "evaluation" directories (a benchmark's evaluation tasks,
    such as WebArena's) as validation instead of leaving them out; never as train.

    Returns root, files (relative path -> rows), directories (platform, split_role, rows by
    split), left_out (episodes, steps and key chords by reason), truncated (rows ending early by
    reason) and removed (stale files of an earlier export): the same whether directories were
    reused or recomputed.
    """
    return run_export(out, evaluation_as_validation)[0]
