"""The dataset card's promises as pure functions over built files, each returning a Verdict.

    alignment_leakage   the crop does not paint the answer in (target_inside_eye_in_hand_rate),
                        and every frame is the IR's pre-action observation of its step
    causal_cursor       the validator's crop rules: each eye_rect sits on where the previous
                        action left the pointer and the eye pixels are the agentview pixels under it
    action_mask         the validator's action rules: masks follow the table, masked slots
                        hold 0, coordinates lie in [0, 1], the actions vector agrees
    scroll_histogram    the validator's SCROLL rule: the desc names the view direction (the
                        inverse of the gesture); the histogram itself is always reported (for a
                        direction-only source: no gesture to bucket, every SCROLL without one
                        and the directions its descs name)
    split_disjointness  no episode (by content hash) or group id on two sides of a split
    shard_integrity     (gui_assets.checks.integrity) the validator's file rules: shards open, are
                        contiguous, respect the cap, and match dataset_info.json

Each verdict carries its key figures and a few example (shard/demo, step) ids, the same names
used in dataset_info.json, check metadata and alerts.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pyarrow.parquet as pq
from PIL import Image

from gui_assets.checks.verdict import ERROR, WARN, Offenders, Verdict, judged
from gui_assets.core.cursor import inside
from gui_assets.core.episode_store import (
    EPISODES_FILE,
    OBSERVATION_COLUMNS,
    STEPS_FILE,
    ImageStore,
    observation_of,
    table_rows,
)
from gui_assets.core.images import ImageError, decode_rgb, window_pixels
from gui_assets.core.ir import POINTER_TYPES, ActionType, Observation
from gui_assets.core.shard_reader import (
    PIXEL_SAMPLES,
    StepSample,
    ThreadedCompare,
    close_pixels,
    count_steps,
    demos,
    inflate,
    read_chunk,
    text,
)
from gui_assets.core.stats import SCROLL_BUCKETS
from gui_assets.validate import descs, geometry
from gui_assets.validate.context import DemoArrays, DemoContext, DemoSummary
from gui_assets.validate.demos import DemoRules, action_rules, check_demo_rules
from gui_assets.validate.report import Target

LEAK_RATE = 0.9  # at or above: the crop is centred on the answer
HEALTHY_RATE = (0.05, 0.35)  # outside: suspicious, worth a look
MIN_STEPS_FOR_BAND = 20  # a rate over fewer grounded pointer steps is too noisy to warn on


# --- alignment leakage -------------------------------------------------------------------


def _ir_lengths(ir_dir: Path) -> dict[str, int]:
    """episode id -> steps, from the IR's episode table (one row per episode)."""
    table = pq.read_table(ir_dir / EPISODES_FILE, columns=["episode_id", "num_steps"])
    return dict(
        zip(table.column("episode_id").to_pylist(), table.column("num_steps").to_pylist(), strict=True)
    )


def _ir_windows(ir_dir: Path, wanted: set[tuple[str, int]]) -> dict[tuple[str, int], Observation]:
    """The IR observations of the wanted (episode id, step) pairs, streamed a batch at a time."""
    cols = ["episode_id", "step_index", *OBSERVATION_COLUMNS]
    found: dict[tuple[str, int], Observation] = {}
    for r in table_rows(ir_dir / STEPS_FILE, 4096, {e for e, _ in wanted}, cols):
        key = (r["episode_id"], r["step_index"])
        if key in wanted:
            found[key] = observation_of(r)
    return found


@dataclass(slots=True)
class _EyeRates:
    """Grounded pointer steps whose target lies inside eye_rect: over all of them, and over
    those whose cursor a previous action of the episode placed."""

    inside: int = 0
    pointer: int = 0
    placed_inside: int = 0
    placed: int = 0

    def add_demo(self, types: np.ndarray, prm: np.ndarray, mask: np.ndarray, rect: np.ndarray) -> None:
        placed = False  # has an action of this episode put the pointer somewhere yet?
        for t in range(len(types)):
            kind = ActionType(int(types[t]))
            if mask[t, 0] and kind in POINTER_TYPES and kind != ActionType.SCROLL:
                hit = int(inside((float(prm[t, 0]), float(prm[t, 1])), tuple(float(v) for v in rect[t])))  # type: ignore[arg-type]
                self.pointer += 1
                self.inside += hit
                if placed:
                    self.placed += 1
                    self.placed_inside += hit
            placed = placed or bool(mask[t, 0] and kind in POINTER_TYPES)

    @property
    def rate(self) -> float:
        return self.inside / self.pointer if self.pointer else 0.0

    @property
    def placed_rate(self) -> float:
        return self.placed_inside / self.placed if self.placed else 0.0

    def figures(self) -> dict[str, Any]:
        return {
            "target_inside_eye_in_hand_rate": round(self.rate, 6),
            "numerator": self.inside,
            "denominator": self.pointer,
            "demonstrated_cursor_rate": round(self.placed_rate, 6),
            "demonstrated_cursor_steps": self.placed,
        }


def _frame_mismatch(
    images: ImageStore, job: tuple[str, bytes | np.ndarray, tuple[int, ...], Observation]
) -> str | None:
    """None when a stored frame is its step's observation in the IR, else what is wrong."""
    _, chunk, shape, o = job
    try:
        page = decode_rgb(images.get(o.image_sha256, o.image_ext), o.top + o.height)
        want = window_pixels(page, o.left, o.top, o.width, o.height)
    except (ImageError, OSError):
        return "IR screenshot unreadable"
    if want.shape[:2] != shape[:2]:
        want = np.asarray(Image.fromarray(want).resize((shape[1], shape[0]), Image.Resampling.BILINEAR))
    if not close_pixels(inflate(chunk, shape), want):
        return "frame is not the pre-action observation of its step"
    return None


def alignment_leakage(
    shards: list[Path],
    ir_dir: Path | None = None,
    images: ImageStore | None = None,
    frame_samples: int = PIXEL_SAMPLES,
) -> Verdict:
    """ERROR when the target sits in the eye window at a leak's rate, or a frame is not o_t.

    The rate is over grounded pointer steps (CLICK/HOVER/SELECT/TYPE/DRAG; a SCROLL's start is
    no target). It is judged twice: over all of them (target_inside_eye_in_hand_rate, the
    dataset_info figure), and over those whose cursor a previous action placed
    (demonstrated_cursor_rate): before that the crop sits at the screen centre by convention,
    which dilutes a real leak by one step per episode. Either at 0.9 or above is a leak.
    With the IR at hand, every demo's length is compared with its IR episode, and
    `frame_samples` frames drawn over the whole partition with the recorded pre-action
    observation of their step: a frame/action pairing shifted by one step shows the next
    screen and fails. The small arrays are read for every step; pixels for the sample only.
    """
    rates = _EyeRates()
    bad = Offenders()
    lengths = _ir_lengths(ir_dir) if ir_dir is not None and images is not None else None
    sample = StepSample(count_steps(shards), frame_samples)
    drawn: list[tuple[str, str, int, str]] = []  # (shard file, demo, step, episode id)
    for where, demo in demos(shards):
        types = demo["action_type"][:]
        rates.add_demo(types, demo["action_params"][:], demo["action_mask"][:], demo["eye_rect"][:])
        picks = sample.take(len(types))
        if lengths is None:
            continue
        episode = text(demo.attrs["episode_id"])
        if lengths.get(episode) != len(types):
            bad.add("steps differ from the IR episode", where)
            continue
        shard, name = where.split("/")
        drawn += [(shard, name, t, episode) for t in picks]
    checked = 0
    if drawn and ir_dir is not None and images is not None:
        checked = _compare_frames(
            shards, drawn, _ir_windows(ir_dir, {(e, t) for *_, t, e in drawn}), images, bad
        )
    figures = {
        **rates.figures(),
        "frames_checked": checked,
        "frame_mismatches": bad.total,
        "mismatch_kinds": dict(bad.counts),
    }
    return _leakage_verdict(rates, bad, figures)


def _compare_frames(
    shards: list[Path],
    drawn: list[tuple[str, str, int, str]],
    windows: dict[tuple[str, int], Observation],
    images: ImageStore,
    bad: Offenders,
) -> int:
    """Compare the drawn frames with their IR observations; returns the frames compared."""
    checked = [0]

    def on_result(job: tuple[str, Any, Any, Any], kind: str | None) -> None:
        checked[0] += 1
        if kind is not None:
            bad.add(kind, job[0])

    paths = {p.name: p for p in shards}
    with ThreadedCompare(lambda job: _frame_mismatch(images, job), on_result) as frames:  # type: ignore[arg-type]
        for shard, group in itertools.groupby(drawn, key=lambda d: d[0]):
            with h5py.File(paths[shard], "r") as f:
                for _, name, t, episode in group:
                    where = f"{shard}/{name} step {t}"
                    window = windows.get((episode, t))
                    if window is None:
                        bad.add("step missing from the IR", where)
                        continue
                    av = f["data"][name]["obs/agentview_rgb"]
                    frames.add((where, read_chunk(av, t), av.shape[1:], window))
    return checked[0]


def _leakage_verdict(rates: _EyeRates, bad: Offenders, figures: dict[str, Any]) -> Verdict:
    if bad.total:
        summary = f"{bad.total} frames are not their step's pre-action observation"
        return Verdict(False, ERROR, summary, figures, bad.examples)
    rate, placed_rate = rates.rate, rates.placed_rate
    if (rates.pointer and rate >= LEAK_RATE) or (rates.placed and placed_rate >= LEAK_RATE):
        return Verdict(
            False,
            ERROR,
            f"leak: target_inside_eye_in_hand_rate {rate:.3f} ({rates.inside}/{rates.pointer}), "
            f"{placed_rate:.3f} where a previous action placed the cursor "
            f"({rates.placed_inside}/{rates.placed}); "
            f">= {LEAK_RATE} means the crop shows the answer",
            figures,
        )
    lo, hi = HEALTHY_RATE
    if rates.pointer >= MIN_STEPS_FOR_BAND and not lo <= rate <= hi:
        summary = f"target_inside_eye_in_hand_rate {rate:.3f} outside the healthy {lo}..{hi}"
        return Verdict(False, WARN, summary, figures)
    summary = (
        f"rate {rate:.3f} over {rates.pointer} grounded pointer steps; "
        f"{figures['frames_checked']} frames match their step's observation"
    )
    return Verdict(True, ERROR, summary, figures)


# --- the validator's rules: causal cursor, action mask, SCROLL descs -------------------


def _judge_demos(
    check: str,
    shards: list[Path],
    rules: Callable[[h5py.Group], DemoRules],
    declared: dict[str, Any] | None = None,
) -> Target:
    """Judge every demo of the shards by the validator's rules `rules(demo)` (validate.demos);
    `declared` is what the build records of its source (build.source) that the rules compare with."""
    target = Target(check, ", ".join(p.name for p in shards), "shards")
    for where, demo in demos(shards):
        file, name = where.split("/", 1)
        check_demo_rules(DemoContext(target, file, name, None, None, declared or {}), demo, rules(demo))
    return target


def causal_cursor(shards: list[Path], pixel_samples: int = PIXEL_SAMPLES) -> Verdict:
    """ERROR when a step breaks one of the validator's cursor and crop rules (validate.geometry:
    the cursor is where the previous action left the pointer, step 0 at the centre; eye_rect is the
    clamped window on it; the eye pixels are the agentview pixels under it), judged by the
    validator's own functions. Every step's geometry is judged; the pixels of `pixel_samples`
    steps drawn over the whole partition (a resized frame has no native pixels and is passed over).
    """
    sample = StepSample(count_steps(shards), pixel_samples)
    steps = [0]

    def rules(demo: h5py.Group) -> DemoRules:
        def judge(ctx: DemoContext, a: DemoArrays, summary: DemoSummary) -> None:
            steps[0] += a.steps
            geometry.check(ctx, a, demo, set(sample.take(a.steps)), summary)

        return judge

    target = _judge_demos("causal_cursor", shards, rules)
    return judged(
        target,
        {"steps": steps[0], "pixel_samples": target.figures["pixel_steps"]},
        f"{steps[0]} eye windows on the causal cursor",
        "{} findings against the causal cursor",
    )


def action_mask(shards: list[Path], scroll_gestures: bool = True) -> Verdict:
    """ERROR when a step breaks one of the validator's action rules (validate.demos.ACTION_RULES:
    type codes, the mask table, masked slots at 0, coordinates in [0, 1], the LIBERO `actions`
    vector), judged by the validator's own functions. For a source whose scrolls are a direction
    only (`scroll_gestures` False) a SCROLL's row is all-zero, and it is not ungrounded."""
    counts = Counter[str]()

    def judge(ctx: DemoContext, a: DemoArrays, summary: DemoSummary) -> None:
        action_rules(ctx, a, summary)
        scrolls = 0 if scroll_gestures else summary.zero_mask_scrolls
        counts.update(
            steps=a.steps,
            ungrounded_steps=summary.ungrounded_pointer
            + summary.ungrounded_type
            + summary.zero_mask_scrolls
            - scrolls,
            direction_only_scrolls=scrolls,
        )

    target = _judge_demos("action_mask", shards, lambda _: judge, {"scroll_gestures": scroll_gestures})
    steps, ungrounded = counts["steps"], counts["ungrounded_steps"]
    figures = {"steps": steps, "ungrounded_steps": ungrounded}
    if not scroll_gestures:
        figures["direction_only_scrolls"] = counts["direction_only_scrolls"]
    return judged(
        target,
        figures,
        f"{steps} steps follow the action rules ({ungrounded} ungrounded)",
        "{} findings against the action rules",
    )


def scroll_histogram(shards: list[Path], source_scrolls: bool, scroll_gestures: bool = True) -> Verdict:
    """WARN when a scrolling source has no SCROLL step, or a step breaks the validator's SCROLL rule
    (demo.scroll.desc: the desc names the view direction, the inverse of the gesture). The
    histogram (view direction -> gesture magnitude bucket -> grounded steps) is always reported.
    A source whose scrolls are a direction only (`scroll_gestures` False) has no gesture to bucket:
    `direction_only_scrolls` judges it instead."""
    if not scroll_gestures:
        return direction_only_scrolls(shards, source_scrolls)
    hist: dict[str, Counter[str]] = {}
    scrolls = [0]

    def judge(ctx: DemoContext, a: DemoArrays, summary: DemoSummary) -> None:
        descs.check_scrolls(ctx, a, summary)
        if not a.has("action_type", "action_mask", "action_params"):
            return
        is_scroll = np.array([n == "SCROLL" for n in a.type_names()], dtype=bool)
        scrolls[0] += int(is_scroll.sum())
        for p in a["action_params"][is_scroll & a.grounded()].astype(np.float64):
            view = descs.view_direction(p)  # None (no travel) is the validator's finding, in no bucket
            magnitude = max(abs(p[2] - p[0]), abs(p[3] - p[1]))
            if view is not None:
                hist.setdefault(view, Counter())[next(b for e, b in SCROLL_BUCKETS if magnitude <= e)] += 1

    target = _judge_demos("scroll_histogram", shards, lambda _: judge)
    figures = {
        "scroll_steps": scrolls[0],
        "histogram": {d: dict(sorted(c.items())) for d, c in sorted(hist.items())},
    }
    if source_scrolls and scrolls[0] == 0:
        return Verdict(False, WARN, "a source with scrolling produced no SCROLL step", figures)
    return judged(
        target,
        figures,
        f"{scrolls[0]} SCROLL steps, descs name the view direction",
        "{} findings against the SCROLL desc rule",
        WARN,
    )


def direction_only_scrolls(shards: list[Path], source_scrolls: bool) -> Verdict:
    """The scroll_histogram check of a source that records a scroll's direction only: WARN when
    a scrolling source has no SCROLL step, a SCROLL carries a gesture (a mask or params the source
    never recorded: made up), or its desc names no single view direction. The figures say that
    no gesture was recorded and count the directions the descs name."""
    directions: Counter[str] = Counter()

    def judge(ctx: DemoContext, a: DemoArrays, summary: DemoSummary) -> None:
        descs.check_scrolls(ctx, a, summary)  # every SCROLL names one direction (none is grounded)
        if not a.has("action_type", "action_mask", "action_params", "action_desc"):
            return
        ctx.check("demo.action_mask.table")
        for t, name in enumerate(a.type_names()):
            if name != "SCROLL":
                continue
            said = descs.DIRECTION.findall(a["action_desc"][t])
            directions[said[0] if len(set(said)) == 1 else "unnamed"] += 1
            if np.any(a["action_mask"][t] != 0) or np.any(a["action_params"][t] != 0):
                gesture = a["action_params"][t].tolist()
                ctx.find("demo.action_mask.table", f"direction-only SCROLL carries a gesture {gesture}", t)

    target = _judge_demos("scroll_histogram", shards, lambda _: judge)
    scrolls = sum(directions.values())
    figures = {
        "scroll_steps": scrolls,
        "gestures": "none recorded: direction only",
        "directions": dict(sorted(directions.items())),
        "histogram": {},
    }
    if source_scrolls and scrolls == 0:
        return Verdict(False, WARN, "a source with scrolling produced no SCROLL step", figures)
    return judged(
        target,
        figures,
        f"{scrolls} direction-only SCROLL steps, each without a gesture and naming its view direction",
        "{} findings against the direction-only SCROLL rules",
        WARN,
    )


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
    bad = Offenders()
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
