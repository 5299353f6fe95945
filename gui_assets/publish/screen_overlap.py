"""The screen-overlap audit: which evaluation screens the training set already shows.

Every built directory's frame fingerprints (`_work/<directory>/fingerprints.parquet`, written by
the shard stage, pipeline.fingerprints) are sorted by split: a directory whose
`build.source.split_role` is "validation" or "evaluation" (Mind2Web's test splits, WebLINX
valid, AndroidControl and GUI-Odyssey test, WebArena) is evaluation, and so are the `_val_`
holdout shards of a "train" directory (AgentNet's, Lite.CUAGym's); the main shards of a "train"
directory are training. Each evaluation frame is matched against every training frame within
core.fingerprint.MATCH_THRESHOLD bits (publish.fingerprint_join: exact, nothing missed).

Written:
  <out>/screen_overlap.parquet   one row per evaluation frame with a near-duplicate in training:
                                 the frame, its nearest training frame (ties: the same source
                                 first, then the first in directory and shard order) and the
                                 distance in bits (0..MATCH_THRESHOLD)
  <out>/screen_overlap.png       matched frames side by side (publish.screen_overlap_picture)
  <out>/screen_overlap.json      the summary: per evaluation set, the share of its frames and of
                                 its episodes with a near-duplicate in training of the same
                                 source and of other sources; per directory, its exact duplicates
                                 (frames whose pixels another frame of the directory repeats)
Splits are never changed: an evaluator drops or weights the listed steps if they choose.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from gui_assets.core.atomic import atomic_path, atomic_write_text
from gui_assets.core.fingerprint import MATCH_THRESHOLD, WORDS, as_words
from gui_assets.core.layout import DatasetInfo, OutLayout, built_directories
from gui_assets.pipeline import fingerprints
from gui_assets.publish import screen_overlap_picture as picture
from gui_assets.publish.fingerprint_join import nearest_by_group

OVERLAP_FILE = "screen_overlap.parquet"
SUMMARY_FILE = "screen_overlap.json"
EVALUATION_ROLES = ("validation", "evaluation")
MAIN_PART, HOLDOUT_PART = "main", "holdout"
OVERLAP_SCHEMA = pa.schema(
    [
        ("eval_directory", pa.string()),
        ("eval_episode_id", pa.string()),
        ("eval_step", pa.int32()),
        ("train_directory", pa.string()),
        ("train_episode_id", pa.string()),
        ("train_step", pa.int32()),
        ("distance", pa.int32()),
    ]
)


@dataclass(slots=True)
class Frames:
    """Every fingerprinted frame of the build, in directory (name) then shard order."""

    directories: list[str]
    sources: list[str]
    directory: np.ndarray  # int32 index into directories
    source: np.ndarray  # int32 index into sources
    holdout: np.ndarray  # bool: from a _val_ shard
    episode: np.ndarray  # object: episode ids
    step: np.ndarray  # int32
    words: np.ndarray  # (n, WORDS) uint64 fingerprints
    adler: np.ndarray  # uint32 Adler-32 of the pixels

    def __len__(self) -> int:
        return len(self.step)


def _role(info: DatasetInfo) -> str | None:
    role = info.source_record.get("split_role")
    return role if isinstance(role, str) else None


def load_frames(out: Path) -> tuple[Frames, dict[str, str | None], list[str]]:
    """The build's frames, each directory's split role, and the directories without fingerprints
    (built before the shard stage kept them): those are left out of the audit, and named."""
    layout = OutLayout(out)
    tables, roles, missing, sources = [], {}, [], []
    for info in built_directories(out):
        try:
            table = fingerprints.read_directory_table(layout, info.directory)
        except (OSError, pa.ArrowException):
            missing.append(info.directory)
            continue
        roles[info.directory] = _role(info)
        if info.source not in sources:
            sources.append(info.source)
        d_index, s_index = len(tables), sources.index(info.source)
        tables.append((table, d_index, s_index))
    empty = fingerprints.DIRECTORY_SCHEMA.empty_table()
    cat = pa.concat_tables([t for t, _, _ in tables]) if tables else empty
    raw = b"".join(c.to_pybytes() for c in _value_buffers(cat))
    frames = Frames(
        directories=list(roles),
        sources=sources,
        directory=_repeat([(t.num_rows, d) for t, d, _ in tables]),
        source=_repeat([(t.num_rows, s) for t, _, s in tables]),
        holdout=cat.column("holdout").to_numpy(zero_copy_only=False).astype(bool),
        episode=np.asarray(cat.column("episode_id").to_pylist(), dtype=object),
        step=cat.column("step").to_numpy(zero_copy_only=False).astype(np.int32),
        words=as_words(raw) if raw else np.empty((0, WORDS), np.uint64),
        adler=cat.column("pixels_adler32").to_numpy(zero_copy_only=False).astype(np.uint32),
    )
    return frames, roles, missing


def _repeat(runs: list[tuple[int, int]]) -> np.ndarray:
    """int32 values, each repeated its count of times: [(2, 7), (1, 3)] -> [7, 7, 3]."""
    counts = np.array([n for n, _ in runs], np.int64)
    return np.repeat(np.array([v for _, v in runs], np.int32), counts)


def _value_buffers(table: pa.Table) -> list[pa.Buffer]:
    """The fixed-size fingerprint values of each chunk, sliced to the chunk's rows."""
    out = []
    for chunk in table.column("fingerprint").chunks:
        width = chunk.type.byte_width
        out.append(chunk.buffers()[1].slice(chunk.offset * width, len(chunk) * width))
    return out


def sides(frames: Frames, roles: dict[str, str | None]) -> tuple[np.ndarray, np.ndarray]:
    """(evaluation mask, training mask): evaluation directories' frames and holdout frames;
    the main frames of training directories. A directory of no known role is neither."""
    role = np.array([roles[d] for d in frames.directories] + [None], dtype=object)[frames.directory]
    evaluation = np.isin(role, EVALUATION_ROLES) | (frames.holdout & (role == "train"))
    training = (role == "train") & ~frames.holdout
    return evaluation, training


@dataclass(slots=True)
class Matches:
    """Per evaluation frame (indices into Frames): its nearest training frame and whether it has
    a near-duplicate in training of its own source and of another."""

    eval_rows: np.ndarray
    train_rows: np.ndarray  # -1: no near-duplicate
    distance: np.ndarray
    same_source: np.ndarray  # bool
    other_source: np.ndarray  # bool


def match(frames: Frames, evaluation: np.ndarray, training: np.ndarray, threshold: int) -> Matches:
    """Near-duplicates of every evaluation frame among the training frames: an exact search
    (publish.fingerprint_join) from each distinct evaluation fingerprint to each distinct
    (training fingerprint, source), then spread back to the frames that carry them."""
    eval_rows, train_rows = np.flatnonzero(evaluation), np.flatnonzero(training)
    e_unique, e_inverse = _distinct(frames.words[eval_rows])
    t_unique, t_inverse = _distinct(frames.words[train_rows])
    groups = max(1, len(frames.sources))
    # One reference row per (distinct fingerprint, source), ranked by its first frame in build order.
    keys, first = np.unique(
        t_inverse.astype(np.int64) * groups + frames.source[train_rows], return_index=True
    )
    best_d, best_rank = nearest_by_group(
        e_unique, t_unique[keys // groups], keys % groups, train_rows[first], groups, threshold
    )
    d, rank = best_d[e_inverse], best_rank[e_inverse]  # (eval frames, sources)
    own = frames.source[eval_rows]
    rows = np.arange(len(eval_rows))
    found = d <= threshold
    is_own = np.zeros_like(found)
    is_own[rows, own] = True
    same = found[rows, own]
    other = (found & ~is_own).any(axis=1)
    # Nearest first, then the same source, then build order.
    order_key = np.where(found, d.astype(np.int64) * 2 + ~is_own, np.iinfo(np.int64).max)
    pick = (
        np.lexsort((np.where(found, rank, np.iinfo(np.int64).max), order_key), axis=1)[:, 0]
        if len(rows)
        else rows
    )
    hit = found[rows, pick]
    return Matches(
        eval_rows,
        np.where(hit, rank[rows, pick], -1),
        np.where(hit, d[rows, pick], -1).astype(np.int32),
        same,
        other,
    )


def _distinct(words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of an (n, WORDS) array and, per row, its index among them."""
    if not len(words):
        return words, np.empty(0, np.int64)
    unique, inverse = np.unique(words, axis=0, return_inverse=True)
    return unique, inverse.reshape(-1)


def overlap_table(frames: Frames, m: Matches) -> pa.Table:
    found = m.train_rows >= 0
    e, t = m.eval_rows[found], m.train_rows[found]
    names = np.asarray(frames.directories, dtype=object)
    return pa.Table.from_pydict(
        {
            "eval_directory": names[frames.directory[e]].tolist(),
            "eval_episode_id": frames.episode[e].tolist(),
            "eval_step": frames.step[e],
            "train_directory": names[frames.directory[t]].tolist(),
            "train_episode_id": frames.episode[t].tolist(),
            "train_step": frames.step[t],
            "distance": m.distance[found],
        },
        schema=OVERLAP_SCHEMA,
    )


def _share(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def eval_summary(frames: Frames, m: Matches, roles: dict[str, str | None]) -> list[dict[str, Any]]:
    """One row per evaluation set (a directory's main shards, or its holdout shards)."""
    rows = []
    d_of, holdout = frames.directory[m.eval_rows], frames.holdout[m.eval_rows]
    for di, name in enumerate(frames.directories):
        for part, is_holdout in ((MAIN_PART, False), (HOLDOUT_PART, True)):
            mine = (d_of == di) & (holdout == is_holdout)
            if not mine.any():
                continue
            episodes = frames.episode[m.eval_rows[mine]]
            hit = {k: (flags[mine]) for k, flags in (("same", m.same_source), ("other", m.other_source))}
            hit["any"] = hit["same"] | hit["other"]
            row: dict[str, Any] = {
                "directory": name,
                "part": part,
                "split_role": roles[name],
                "frames": int(mine.sum()),
                "episodes": len(set(episodes.tolist())),
            }
            for k, flags in hit.items():
                row[f"frames_{k}"] = int(flags.sum())
                row[f"episodes_{k}"] = len(set(episodes[flags].tolist()))
                row[f"frame_share_{k}"] = _share(row[f"frames_{k}"], row["frames"])
                row[f"episode_share_{k}"] = _share(row[f"episodes_{k}"], row["episodes"])
            rows.append(row)
    return rows


def exact_duplicates(frames: Frames) -> dict[str, dict[str, Any]]:
    """Per directory: frames whose pixels repeat an earlier frame of the same directory (equal
    fingerprint and equal pixel Adler-32)."""
    out = {}
    for di, name in enumerate(frames.directories):
        rows = np.flatnonzero(frames.directory == di)
        if not len(rows):
            out[name] = {"frames": 0, "exact_duplicates": 0, "share": 0.0}
            continue
        key = np.concatenate([frames.words[rows], frames.adler[rows, None].astype(np.uint64)], axis=1)
        distinct = len(np.unique(key, axis=0))
        out[name] = {
            "frames": len(rows),
            "exact_duplicates": len(rows) - distinct,
            "share": _share(len(rows) - distinct, len(rows)),
        }
    return out


def _where_pairs(frames: Frames, m: Matches) -> list[tuple[picture.Where, picture.Where, int]]:
    """The matched frames as places in the shards (rows of their directories' tables)."""
    starts = np.searchsorted(frames.directory, np.arange(len(frames.directories)), "left")

    def where(i: int) -> picture.Where:
        d = int(frames.directory[i])
        return picture.Where(
            frames.directories[d], str(frames.episode[i]), int(frames.step[i]), i - int(starts[d])
        )

    found = np.flatnonzero(m.train_rows >= 0)
    return [(where(int(m.eval_rows[k])), where(int(m.train_rows[k])), int(m.distance[k])) for k in found]


def audit(out: Path, threshold: int = MATCH_THRESHOLD) -> dict[str, Any]:
    """Run the audit over the build at `out`; write the parquet, the picture and the summary;
    return the summary, with the absolute "path" and "picture" and the matched rows' "table"
    (none of them written to the JSON)."""
    frames, roles, missing = load_frames(out)
    evaluation, training = sides(frames, roles)
    m = match(frames, evaluation, training, threshold)
    table = overlap_table(frames, m)
    with atomic_path(out / OVERLAP_FILE) as tmp:
        pq.write_table(table, tmp)
    drawn = picture.draw(out, picture.choose(_where_pairs(frames, m)))
    summary: dict[str, Any] = {
        "threshold_bits": threshold,
        "evaluation_frames": int(evaluation.sum()),
        "training_frames": int(training.sum()),
        "matched_frames": table.num_rows,
        "evaluation_sets": eval_summary(frames, m, roles),
        "exact_duplicates": exact_duplicates(frames),
        "unclassified_directories": sorted(
            d for d, r in roles.items() if r not in (*EVALUATION_ROLES, "train")
        ),
        "directories_without_fingerprints": missing,
        # names beside the summary, never absolute paths: two builds must publish the same bytes
        "files": {"parquet": OVERLAP_FILE, "picture": picture.PICTURE_FILE if drawn is not None else None},
    }
    atomic_write_text(out / SUMMARY_FILE, json.dumps(summary, indent=1) + "\n")
    paths = {"path": str(out / OVERLAP_FILE), "picture": str(out / picture.PICTURE_FILE) if drawn else None}
    return {**summary, **paths, "table": table}


def read_summary(out: Path) -> dict[str, Any] | None:
    """The last audit's summary, or None when there is none (or it is unreadable)."""
    try:
        data = json.loads((out / SUMMARY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _pct(share: float) -> str:
    return f"{100 * share:.1f}%"


def markdown_table(summary: dict[str, Any]) -> str:
    """The evaluation sets as a markdown table: frames and episodes with a near-duplicate in
    training (any, the same source, other sources) and the set's exact duplicates."""
    sets = summary.get("evaluation_sets") or []
    if not sets:
        return "_no evaluation directory built_"
    dups = summary.get("exact_duplicates", {})
    lines = [
        "| evaluation set | frames | with a near-duplicate in training | same source | other sources "
        "| episodes touched | exact duplicates within the directory |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in sets:
        name = f"`{s['directory']}/`" + (" (`_val_` holdout)" if s["part"] == HOLDOUT_PART else "")
        exact = dups.get(s["directory"], {})
        lines.append(
            f"| {name} | {s['frames']:,} | {s['frames_any']:,} ({_pct(s['frame_share_any'])}) "
            f"| {_pct(s['frame_share_same'])} | {_pct(s['frame_share_other'])} "
            f"| {s['episodes_any']:,} of {s['episodes']:,} ({_pct(s['episode_share_any'])}) "
            f"| {exact.get('exact_duplicates', 0):,} ({_pct(exact.get('share', 0.0))}) |"
        )
    return "\n".join(lines)
