"""The dataset card's promises as pure functions over built files, each returning a Verdict.

    alignment_leakage   the crop does not paint the answer in (target_inside_eye_in_hand_rate),
                        and every frame is the IR's pre-action observation of its step
    causal_cursor       each eye_rect sits on where the previous action left the pointer and the
                        eye pixels are the agentview pixels under it
    action_mask         masks follow the table, masked slots hold 0, coordinates lie in [0, 1]
    scroll_histogram    SCROLL desc is the view direction (the inverse of the gesture); the
                        histogram itself is always reported
    split_disjointness  no episode (by content hash) or group id on two sides of a split
    shard_integrity     shards open, are contiguous, respect the cap, and match dataset_info.json

Each verdict carries its key figures and a few example (shard/demo, step) ids, the same names
used in dataset_info.json, check metadata and alerts.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pyarrow.parquet as pq
from PIL import Image

from gui_assets.atomic import sha256_file
from gui_assets.config import usable_cpus
from gui_assets.cursor import EYE_SIZE, SCREEN_CENTRE, eye_rect, eye_window, inside, next_cursor
from gui_assets.episode_store import STEPS_FILE, ImageStore
from gui_assets.images import ImageError, decode_rgb
from gui_assets.ir import ACTION_TYPE_NAMES, POINTER_TYPES, ActionType, allowed_masks, view_direction
from gui_assets.layout import DatasetInfo, shard_pattern
from gui_assets.stats import SCROLL_BUCKETS

try:  # ISA-L inflates a frame about 3x faster than zlib; both release the GIL
    from isal.isal_zlib import decompress as _zlib_decompress
except ImportError:  # pragma: no cover
    _zlib_decompress = zlib.decompress

ERROR = "ERROR"
WARN = "WARN"

LEAK_RATE = 0.9  # at or above: the crop is centred on the answer
HEALTHY_RATE = (0.05, 0.35)  # outside: suspicious, worth a look
MIN_STEPS_FOR_BAND = 20  # a rate over fewer grounded pointer steps is too noisy to warn on
MAX_EXAMPLES = 5


@dataclass(slots=True)
class Verdict:
    passed: bool
    severity: str
    summary: str
    figures: dict[str, Any] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)


class _Offenders:
    """Counts offending steps by kind and keeps the first few as examples."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.examples: list[str] = []

    def add(self, kind: str, where: str) -> None:
        self.counts[kind] += 1
        if len(self.examples) < MAX_EXAMPLES:
            self.examples.append(f"{where}: {kind}")

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def shard_files(directory: Path, name: str) -> list[Path]:
    """The main and val shard series of a directory, in order."""
    files = []
    for val in (False, True):
        pat = shard_pattern(name, val)
        files += sorted(p for p in directory.glob("*.hdf5") if pat.fullmatch(p.name))
    return files


def _demos(shards: list[Path]) -> Iterator[tuple[str, h5py.Group]]:
    for path in shards:
        with h5py.File(path, "r") as f:
            for name in sorted(f["data"], key=lambda k: int(k[5:])):
                yield f"{path.name}/{name}", f["data"][name]


def _text(x: Any) -> str:
    return x.decode("utf-8") if isinstance(x, bytes) else str(x)


_BATCH = 64  # sampled frames held (compressed) before they are compared


def read_chunk(dset: h5py.Dataset, t: int) -> bytes | np.ndarray:
    """Frame t of a one-frame-per-chunk gzip dataset as its stored zlib stream (no HDF5 filter
    work, so callers can inflate on threads), or the decoded frame for any other layout."""
    if (
        dset.compression == "gzip"
        and dset.chunks == (1, *dset.shape[1:])
        and not dset.shuffle
        and not dset.fletcher32
        and dset.scaleoffset is None
    ):
        mask, raw = dset.id.read_direct_chunk((t,) + (0,) * (dset.ndim - 1))
        if mask == 0:
            return raw
    return dset[t]


def inflate(chunk: bytes | np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    if isinstance(chunk, np.ndarray):
        return chunk
    return np.frombuffer(_zlib_decompress(chunk), np.uint8).reshape(shape)


def close_pixels(a: np.ndarray, b: np.ndarray, tolerance: float = 1.0) -> bool:
    """Mean absolute difference at most `tolerance` (identical frames, the usual case, exit early)."""
    if a.shape != b.shape:
        return False
    if np.array_equal(a, b):
        return True
    return bool(np.abs(a.astype(np.int16) - b.astype(np.int16)).mean() <= tolerance)


def _samples(T: int, n: int) -> list[int]:
    """Up to n step indices spread over an episode: first, last, and evenly between."""
    if n >= T:
        return list(range(T))
    return sorted({round(i * (T - 1) / (n - 1)) for i in range(n)})


# --- alignment leakage -------------------------------------------------------------------


def _ir_observations(ir_dir: Path) -> dict[str, list[tuple[str, str, int, int, int, int]]]:
    cols = [
        "episode_id",
        "step_index",
        "image_sha256",
        "image_ext",
        "obs_left",
        "obs_top",
        "obs_width",
        "obs_height",
    ]
    table = pq.read_table(ir_dir / STEPS_FILE, columns=cols).to_pylist()
    out: dict[str, list[tuple[str, str, int, int, int, int]]] = {}
    for r in table:
        out.setdefault(r["episode_id"], []).append(
            (r["image_sha256"], r["image_ext"], r["obs_left"], r["obs_top"], r["obs_width"], r["obs_height"])
        )
    return out


def alignment_leakage(
    shards: list[Path], ir_dir: Path | None = None, images: ImageStore | None = None, frame_samples: int = 2
) -> Verdict:
    """ERROR when the target sits in the eye window at a leak's rate, or a frame is not o_t.

    The rate is over grounded pointer steps (CLICK/HOVER/SELECT/TYPE/DRAG; a SCROLL's start is
    no target). It is judged twice: over all of them (target_inside_eye_in_hand_rate, the
    dataset_info figure), and over those whose cursor a previous action placed
    (demonstrated_cursor_rate): before that the crop sits at the screen centre by convention,
    which dilutes a real leak by one step per episode. Either at 0.9 or above is a leak.
    With the IR at hand, `frame_samples` frames per demo are compared with the
    recorded pre-action observation of their step: a frame/action pairing shifted by one step
    shows the next screen and fails.
    """
    inside_n = pointer_n = placed_inside = placed_n = 0
    bad = _Offenders()
    obs = _ir_observations(ir_dir) if ir_dir is not None and images is not None else None
    frames_checked = 0
    # Frames are read here (HDF5 is serial) and inflated, decoded and compared on threads.
    frame_jobs: list[
        tuple[str, bytes | np.ndarray, tuple[int, ...], tuple[str, str, int, int, int, int]]
    ] = []
    pool = ThreadPoolExecutor(usable_cpus())

    def compare(
        job: tuple[str, bytes | np.ndarray, tuple[int, ...], tuple[str, str, int, int, int, int]],
    ) -> str | None:
        _, chunk, shape, (sha, ext, left, top, w, h) = job
        try:
            want = decode_rgb(images.get(sha, ext))[top : top + h, left : left + w]  # type: ignore[union-attr]
        except (ImageError, OSError):
            return "IR screenshot unreadable"
        if want.shape[:2] != shape[:2]:
            want = np.asarray(Image.fromarray(want).resize((shape[1], shape[0]), Image.Resampling.BILINEAR))
        if not close_pixels(inflate(chunk, shape), want):
            return "frame is not the pre-action observation of its step"
        return None

    def compare_frames() -> None:
        nonlocal frames_checked
        for job, kind in zip(frame_jobs, pool.map(compare, frame_jobs), strict=True):
            if kind is None or kind.startswith("frame"):
                frames_checked += 1
            if kind is not None:
                bad.add(kind, job[0])
        frame_jobs.clear()

    for where, demo in _demos(shards):
        types, prm, mask, rect = (
            demo[k][:] for k in ("action_type", "action_params", "action_mask", "eye_rect")
        )
        placed = False  # has an action of this episode put the pointer somewhere yet?
        for t in range(len(types)):
            kind = ActionType(int(types[t]))
            if mask[t, 0] and kind in POINTER_TYPES and kind != ActionType.SCROLL:
                point = (float(prm[t, 0]), float(prm[t, 1]))
                hit = int(inside(point, tuple(float(v) for v in rect[t])))  # type: ignore[arg-type]
                pointer_n += 1
                inside_n += hit
                if placed:
                    placed_n += 1
                    placed_inside += hit
            placed = placed or bool(mask[t, 0] and kind in POINTER_TYPES)
        if obs is None or images is None:
            continue
        episode = obs.get(_text(demo.attrs["episode_id"]))
        if episode is None or len(episode) != len(types):
            bad.add("steps differ from the IR episode", where)
            continue
        av = demo["obs/agentview_rgb"]
        for t in _samples(len(types), frame_samples):
            frame_jobs.append((f"{where} step {t}", read_chunk(av, t), av.shape[1:], episode[t]))
        if len(frame_jobs) >= _BATCH:
            compare_frames()
    compare_frames()
    pool.shutdown()
    rate = inside_n / pointer_n if pointer_n else 0.0
    placed_rate = placed_inside / placed_n if placed_n else 0.0
    figures: dict[str, Any] = {
        "target_inside_eye_in_hand_rate": round(rate, 6),
        "numerator": inside_n,
        "denominator": pointer_n,
        "demonstrated_cursor_rate": round(placed_rate, 6),
        "demonstrated_cursor_steps": placed_n,
        "frames_checked": frames_checked,
        "frame_mismatches": bad.total,
        "mismatch_kinds": dict(bad.counts),
    }
    if bad.total:
        return Verdict(
            False,
            ERROR,
            f"{bad.total} frames are not their step's pre-action observation",
            figures,
            bad.examples,
        )
    if (pointer_n and rate >= LEAK_RATE) or (placed_n and placed_rate >= LEAK_RATE):
        return Verdict(
            False,
            ERROR,
            f"leak: target_inside_eye_in_hand_rate {rate:.3f} ({inside_n}/{pointer_n}), "
            f"{placed_rate:.3f} where a previous action placed the cursor ({placed_inside}/{placed_n}); "
            f">= {LEAK_RATE} means the crop shows the answer",
            figures,
        )
    lo, hi = HEALTHY_RATE
    if pointer_n >= MIN_STEPS_FOR_BAND and not lo <= rate <= hi:
        return Verdict(
            False, WARN, f"target_inside_eye_in_hand_rate {rate:.3f} outside the healthy {lo}..{hi}", figures
        )
    return Verdict(
        True,
        ERROR,
        f"rate {rate:.3f} over {pointer_n} grounded pointer steps; "
        f"{frames_checked} frames match their step's observation",
        figures,
    )


# --- causal cursor -----------------------------------------------------------------------


def causal_cursor(shards: list[Path], pixel_samples: int = 3) -> Verdict:
    """ERROR when an eye_rect is not the clamped window on the causal cursor (step 0: centre),
    the stored cursor disagrees with it, or the eye pixels are not the agentview pixels under it.
    """
    bad = _Offenders()
    steps = pixels = 0
    pixel_jobs: list[
        tuple[str, bytes | np.ndarray, tuple[int, ...], bytes | np.ndarray, tuple[int, ...], int, int]
    ] = []
    pool = ThreadPoolExecutor(usable_cpus())

    def compare(
        job: tuple[str, bytes | np.ndarray, tuple[int, ...], bytes | np.ndarray, tuple[int, ...], int, int],
    ) -> bool:
        _, av_chunk, av_shape, eye_chunk, eye_shape, ex, ey = job
        window = inflate(av_chunk, av_shape)[ey : ey + EYE_SIZE, ex : ex + EYE_SIZE]
        crop = inflate(eye_chunk, eye_shape)[: window.shape[0], : window.shape[1]]
        return close_pixels(crop, window)

    def compare_pixels() -> None:
        nonlocal pixels
        for job, ok in zip(pixel_jobs, pool.map(compare, pixel_jobs), strict=True):
            pixels += 1
            if not ok:
                bad.add("eye pixels are not the agentview pixels under eye_rect", job[0])
        pixel_jobs.clear()

    for where, demo in _demos(shards):
        types, prm, mask, rect, nhw, cur = (
            demo[k][:]
            for k in (
                "action_type",
                "action_params",
                "action_mask",
                "eye_rect",
                "native_hw",
                "obs/cursor_states",
            )
        )
        av, eye = demo["obs/agentview_rgb"], demo["obs/eye_in_hand_rgb"]
        H, W = av.shape[1:3]
        cursor = SCREEN_CENTRE
        for t in range(len(types)):
            steps += 1
            h, w = int(nhw[t, 0]), int(nhw[t, 1])
            x0, y0 = eye_window(cursor, w, h)
            if not np.allclose(rect[t], eye_rect(x0, y0, w, h), atol=1e-5):
                bad.add("eye_rect not on the causal cursor", f"{where} step {t}")
            if not np.allclose(cur[t], cursor, atol=1e-5):
                bad.add("cursor_states not the causal cursor", f"{where} step {t}")
            cursor = next_cursor(cursor, ActionType(int(types[t])), prm[t], bool(mask[t, 0]))
        for t in _samples(len(types), pixel_samples):
            if (int(nhw[t, 0]), int(nhw[t, 1])) != (H, W):
                continue  # a resized frame: its crop came from native pixels not stored here
            ex, ey = round(float(rect[t, 0]) * W), round(float(rect[t, 1]) * H)
            pixel_jobs.append(
                (
                    f"{where} step {t}",
                    read_chunk(av, t),
                    av.shape[1:],
                    read_chunk(eye, t),
                    eye.shape[1:],
                    ex,
                    ey,
                )
            )
        if len(pixel_jobs) >= _BATCH:
            compare_pixels()
    compare_pixels()
    pool.shutdown()
    figures = {
        "steps": steps,
        "pixel_samples": pixels,
        "offending_steps": bad.total,
        "by_kind": dict(bad.counts),
    }
    if bad.total:
        return Verdict(False, ERROR, f"{bad.total} steps break the causal cursor", figures, bad.examples)
    return Verdict(True, ERROR, f"{steps} eye windows on the causal cursor", figures)


# --- action mask -------------------------------------------------------------------------


def action_mask(shards: list[Path]) -> Verdict:
    """ERROR when a mask is neither its type's row nor all-zero, a masked slot is not 0, a
    coordinate is outside [0, 1] or not finite, or the LIBERO `actions` vector disagrees."""
    bad = _Offenders()
    steps = ungrounded = 0
    for where, demo in _demos(shards):
        types, prm, mask, acts = (
            demo[k][:] for k in ("action_type", "action_params", "action_mask", "actions")
        )
        texts = demo["action_text"][:]
        for t in range(len(types)):
            steps += 1
            at = f"{where} step {t}"
            if not 0 <= int(types[t]) < len(ACTION_TYPE_NAMES):
                bad.add("unknown action_type", at)
                continue
            kind = ActionType(int(types[t]))
            m = tuple(float(v) for v in mask[t])
            if m not in allowed_masks(kind):
                bad.add(f"{kind.name} mask {m}", at)
            if not np.isfinite(prm[t]).all():
                bad.add("non-finite coordinate", at)
            elif (prm[t][mask[t] == 0] != 0).any():
                bad.add("invented coordinate in a masked slot", at)
            elif ((prm[t] < 0) | (prm[t] > 1)).any():
                bad.add("coordinate outside [0, 1]", at)
            if kind in POINTER_TYPES and not any(m):
                ungrounded += 1
            want = [*prm[t], int(types[t]), 1.0 if _text(texts[t]) else 0.0, float((mask[t] == 0).sum())]
            if not np.allclose(acts[t], want, atol=1e-6):
                bad.add("actions vector disagrees with params/type/text/mask", at)
    figures = {
        "steps": steps,
        "ungrounded_steps": ungrounded,
        "offending_steps": bad.total,
        "by_kind": dict(bad.counts),
    }
    if bad.total:
        return Verdict(False, ERROR, f"{bad.total} steps break the mask table", figures, bad.examples)
    return Verdict(True, ERROR, f"{steps} steps follow the mask table ({ungrounded} ungrounded)", figures)


# --- scroll histogram --------------------------------------------------------------------


def scroll_histogram(shards: list[Path], source_scrolls: bool) -> Verdict:
    """WARN when a scrolling source has no SCROLL step, or a desc is not the view direction."""
    hist: dict[str, Counter[str]] = {}
    bad = _Offenders()
    scrolls = 0
    for where, demo in _demos(shards):
        types, prm, mask = demo["action_type"][:], demo["action_params"][:], demo["action_mask"][:]
        descs = demo["action_desc"][:]
        for t in np.flatnonzero(types == ActionType.SCROLL):
            scrolls += 1
            if not mask[t, 0]:
                continue  # ungrounded: no gesture to judge
            p = tuple(float(v) for v in prm[t])
            view = view_direction(p)  # type: ignore[arg-type]
            magnitude = max(abs(p[2] - p[0]), abs(p[3] - p[1]))
            bucket = next(lbl for edge, lbl in SCROLL_BUCKETS if magnitude <= edge)
            hist.setdefault(view, Counter())[bucket] += 1
            desc = _text(descs[t])
            said = re.search(r"\b(up|down|left|right)\b", desc)
            if said is None or said.group(1) != view:
                bad.add(f"desc {desc!r} but the gesture moves the view {view}", f"{where} step {int(t)}")
    figures = {
        "scroll_steps": scrolls,
        "histogram": {d: dict(sorted(c.items())) for d, c in sorted(hist.items())},
        "offending_steps": bad.total,
    }
    if source_scrolls and scrolls == 0:
        return Verdict(False, WARN, "a source with scrolling produced no SCROLL step", figures)
    if bad.total:
        return Verdict(
            False, WARN, f"{bad.total} SCROLL descs do not name the view direction", figures, bad.examples
        )
    return Verdict(True, WARN, f"{scrolls} SCROLL steps, descs name the view direction", figures)


# --- split disjointness ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SplitTable:
    """One partition's split assignment: rows of (episode_id, part, content_hash, group)."""

    partition: str
    rows: list[dict[str, str]]


def split_disjointness(
    this: SplitTable,
    others: list[SplitTable],
    val_fraction: tuple[float, float] | None = None,
    min_episodes_for_fraction: int = 200,
) -> Verdict:
    """ERROR when an episode (by content hash) or a group id sits on both sides of a split:
    main vs val inside the partition, or this partition vs any other built partition; or
    when a hash holdout's share falls outside `val_fraction` on a non-trivial input."""
    bad = _Offenders()
    by_part: dict[str, set[str]] = {}
    groups: dict[str, set[str]] = {}
    for r in this.rows:
        by_part.setdefault(r["part"], set()).add(r["content_hash"])
        if r.get("group"):
            groups.setdefault(r["part"], set()).add(r["group"])
    if len(by_part) > 1:
        for h in set.intersection(*by_part.values()):
            bad.add("episode content in main and val", f"{this.partition} content {h[:12]}")
        if len(groups) > 1:
            for g in set.intersection(*groups.values()):
                bad.add("group id in main and val", f"{this.partition} group {g}")
    mine = {r["content_hash"]: r["episode_id"] for r in this.rows}
    for other in others:
        for r in other.rows:
            if r["content_hash"] in mine:
                bad.add(f"episode content also in {other.partition}", f"{mine[r['content_hash']]}")
    n = len(this.rows)
    n_val = sum(r["part"] == "val" for r in this.rows)
    figures: dict[str, Any] = {
        "episodes": n,
        "val_episodes": n_val,
        "val_fraction": round(n_val / n, 6) if n else 0.0,
        "compared_partitions": sorted(o.partition for o in others),
        "overlapping_episodes": bad.total,
    }
    if bad.total:
        return Verdict(False, ERROR, f"{bad.total} episodes on two sides of a split", figures, bad.examples)
    if val_fraction is not None and n >= min_episodes_for_fraction:
        lo, hi = val_fraction
        if not lo <= n_val / n <= hi:
            return Verdict(False, ERROR, f"holdout fraction {n_val / n:.4f} outside {lo}..{hi}", figures)
    return Verdict(True, ERROR, f"{n} episodes, no overlap with {len(others)} other partitions", figures)


# --- shard integrity ---------------------------------------------------------------------


def _demo_bytes(group: h5py.Group) -> int:
    total = 0

    def visit(_: str, obj: Any) -> None:
        nonlocal total
        if isinstance(obj, h5py.Dataset):
            total += obj.id.get_storage_size()

    group.visititems(visit)
    return total


def shard_integrity(directory: Path, name: str) -> Verdict:
    """ERROR when a shard will not open, numbering has a gap, a shard passes the cap by more
    than its last episode, or dataset_info.json's counts, sizes or hashes differ from the files."""
    bad = _Offenders()
    info_path = directory / "dataset_info.json"
    try:
        info = DatasetInfo.read(info_path)
    except (OSError, ValueError, KeyError, TypeError) as e:
        return Verdict(False, ERROR, f"dataset_info.json unreadable: {e}", {})
    cap = int(info.build.get("config", {}).get("shard_cap_bytes", 0))
    listed = {s.file: s for s in info.shards + info.val_shards}
    totals = Counter[str]()
    for val in (False, True):
        pat = shard_pattern(name, val)
        found = sorted(p for p in directory.glob("*.hdf5") if pat.fullmatch(p.name))
        if [int(pat.fullmatch(p.name).group(1)) for p in found] != list(range(len(found))):  # type: ignore[union-attr]
            bad.add("shard numbering not contiguous from 0000", f"{'val ' if val else ''}series")
        for p in found:
            entry = listed.pop(p.name, None)
            try:
                with h5py.File(p, "r") as f:
                    demos = [k for k in f["data"] if k.startswith("demo_")]
                    steps = sum(int(f["data"][k].attrs["num_samples"]) for k in demos)
                    last = max(demos, key=lambda k: int(k[5:]), default=None)
                    last_bytes = _demo_bytes(f["data"][last]) if last else 0
                    attrs = (int(f["data"].attrs["num_demos"]), int(f["data"].attrs["total"]))
            except (OSError, KeyError, ValueError) as e:
                bad.add(f"h5py cannot read it ({type(e).__name__})", p.name)
                continue
            size = p.stat().st_size
            totals["demos"] += len(demos)
            totals["steps"] += steps
            if attrs != (len(demos), steps):
                bad.add(f"num_demos/total attrs {attrs} != {(len(demos), steps)}", p.name)
            if cap and size > cap + last_bytes:
                bad.add(
                    f"{size} B is over the cap {cap} by more than its last episode ({last_bytes} B)", p.name
                )
            if entry is None:
                bad.add("not listed in dataset_info.json", p.name)
            elif (entry.demos, entry.steps, entry.bytes) != (len(demos), steps, size):
                bad.add(
                    f"listed as {entry.demos}/{entry.steps}/{entry.bytes}, is {len(demos)}/{steps}/{size}",
                    p.name,
                )
            elif entry.sha256 != sha256_file(p):
                bad.add("sha256 differs from dataset_info.json", p.name)
    for missing in listed:
        bad.add("listed in dataset_info.json but missing", missing)
    for key, stat in (("steps", "steps"), ("demos", "episodes_out")):
        if info.stats.get(stat) != totals[key]:
            bad.add(f"stats.{stat} {info.stats.get(stat)} != shards' {totals[key]}", "dataset_info.json")
    figures = {
        "shards": len(info.shards),
        "val_shards": len(info.val_shards),
        "demos": totals["demos"],
        "steps": totals["steps"],
        "cap_bytes": cap,
        "problems": bad.total,
    }
    if bad.total:
        return Verdict(False, ERROR, f"{bad.total} integrity problems", figures, bad.examples)
    return Verdict(
        True, ERROR, f"{figures['shards'] + figures['val_shards']} shards match dataset_info.json", figures
    )


def histogram_table(hist: dict[str, dict[str, int]]) -> str:
    """The scroll histogram as a markdown table: direction rows x magnitude bucket columns."""
    buckets = [lbl for _, lbl in SCROLL_BUCKETS]
    lines = ["| view direction | " + " | ".join(buckets) + " | total |", "|---" * (len(buckets) + 2) + "|"]
    for d in ("down", "up", "left", "right"):
        row = hist.get(d, {})
        lines.append(
            f"| {d} | " + " | ".join(str(row.get(b, 0)) for b in buckets) + f" | {sum(row.values())} |"
        )
    return "\n".join(lines)
