"""The rules of dataset_info.json's stats, holdout and held-out ids against what the shards hold."""

from __future__ import annotations

from collections import Counter
from typing import Any

from gui_assets.validate.context import DemoSummary
from gui_assets.validate.format import (
    ACTION_TYPES,
    DATASET_INFO,
    HELDOUT_KEYS,
    INVALID_SUBSPLITS,
    SUBSPLIT_KEYS,
)
from gui_assets.validate.info import declared_source
from gui_assets.validate.report import Target, plural
from gui_assets.validate.shards import ShardSummary, type_counts
from gui_assets.validate.values import short

RATE_TOL = 1e-6  # the rate is written rounded to six decimals


def _demos(shards: list[ShardSummary]) -> list[DemoSummary]:
    return [d for s in shards for d in s.demos]


def check_stats(target: Target, info: dict[str, Any], shards: list[ShardSummary]) -> None:
    """Only judged when every shard opened: a shard that did not is reported on its own."""
    stats = info.get("stats")
    if not isinstance(stats, dict) or not all(s.opened for s in shards):
        return
    demos = _demos(shards)
    target.check("info.stats.counts")
    for key, actual in (("episodes_out", len(demos)), ("steps", sum(d.steps for d in demos))):
        if key in stats and stats[key] != actual:
            target.find(
                "info.stats.counts",
                f"stats.{key} is {short(stats[key])}, the shards hold {actual}",
                DATASET_INFO,
            )
    if not all(d.judged_counts for d in demos):
        return  # a step without a readable type or mask is reported by the demo rules
    _type_counts(target, stats, type_counts(shards))
    _ungrounded(target, stats, demos, direction_only=declared_source(info).get("scroll_gestures") is False)
    _scrolls(target, stats, demos)
    _target_rate(target, stats, demos)


def _type_counts(target: Target, stats: dict[str, Any], actual: Counter[str]) -> None:
    listed = stats.get("action_type_counts")
    if not isinstance(listed, dict):
        return
    target.check("info.stats.action_type_counts")
    for name in sorted(set(listed) | set(actual), key=lambda n: (n not in ACTION_TYPES, n)):
        if name not in ACTION_TYPES:
            target.find("info.stats.action_type_counts", f"{name!r} is no action type", DATASET_INFO)
        elif listed.get(name, 0) != actual[name]:
            target.find(
                "info.stats.action_type_counts",
                f"{name} is counted {short(listed.get(name, 0))}, the shards hold {actual[name]}",
                DATASET_INFO,
            )


def _ungrounded(
    target: Target, stats: dict[str, Any], demos: list[DemoSummary], direction_only: bool
) -> None:
    """A TYPE with an all-zero mask may be ungrounded or from a source that never grounds one: the
    shards cannot tell, so the count must lie between the two readings. An all-zero SCROLL is
    ungrounded, except from a source whose build records that its scrolls are direction-only."""
    value = stats.get("ungrounded_steps")
    if "ungrounded_steps" not in stats:
        return
    target.check("info.stats.ungrounded_steps")
    low = sum(d.ungrounded_pointer + (0 if direction_only else d.zero_mask_scrolls) for d in demos)
    high = low + sum(d.ungrounded_type for d in demos)
    if not isinstance(value, int) or not low <= value <= high:
        span = f"{low}" if low == high else f"between {low} and {high}"
        target.find(
            "info.stats.ungrounded_steps",
            f"stats.ungrounded_steps is {short(value)}; the shards' "
            f"all-zero-mask pointer steps make it {span}",
            DATASET_INFO,
        )


def _scrolls(target: Target, stats: dict[str, Any], demos: list[DemoSummary]) -> None:
    hist = stats.get("scroll_histogram")
    if hist is None:
        return
    target.check("info.stats.scroll_histogram")
    actual: Counter[str] = Counter()
    for d in demos:
        actual.update(d.scroll_directions)
    if not isinstance(hist, dict) or not all(
        isinstance(b, dict) and all(isinstance(n, int) for n in b.values()) for b in hist.values()
    ):
        target.find(
            "info.stats.scroll_histogram",
            f"scroll_histogram {short(hist)} is not {{view direction: {{bucket: count}}}}",
            DATASET_INFO,
        )
        return
    for direction in sorted(set(hist) | set(actual)):
        listed = sum(hist.get(direction, {}).values())
        if listed != actual[direction]:
            target.find(
                "info.stats.scroll_histogram",
                f"scroll_histogram counts {listed} SCROLL steps moving "
                f"the view {direction}, the shards hold {actual[direction]}",
                DATASET_INFO,
            )


def _target_rate(target: Target, stats: dict[str, Any], demos: list[DemoSummary]) -> None:
    rate = stats.get("target_inside_eye_in_hand_rate")
    if rate is None:
        return
    target.check("info.stats.target_rate")
    aimed = sum(d.aimed for d in demos)
    inside = sum(d.aimed_inside for d in demos)
    edge = sum(d.aimed_edge for d in demos)
    low, high = (inside / aimed, (inside + edge) / aimed) if aimed else (0.0, 0.0)
    if not isinstance(rate, int | float) or not low - RATE_TOL <= rate <= high + RATE_TOL:
        shown = f"{low:.6f}" if low == high else f"{low:.6f}..{high:.6f}"
        target.find(
            "info.stats.target_rate",
            f"target_inside_eye_in_hand_rate is {short(rate)}; the shards "
            f"give {shown} ({inside} of {aimed} aimed steps)",
            DATASET_INFO,
        )


def check_splits(
    target: Target, info: dict[str, Any], main: list[ShardSummary], val: list[ShardSummary]
) -> None:
    build = info.get("build") if isinstance(info.get("build"), dict) else {}
    source = info.get("source")
    target.check("info.holdout_rule")
    if source == "agentnet" and not isinstance(build.get("holdout_rule"), dict):
        target.find("info.holdout_rule", "an AgentNet directory must record build.holdout_rule", DATASET_INFO)
    if val and not any(isinstance(build.get(k), dict) for k in ("holdout_rule", "split_rule")):
        target.find(
            "info.holdout_rule", "`_val_` shards without a recorded holdout_rule or split_rule", DATASET_INFO
        )
    _heldout(target, info, _demos(main + val))
    _subsplits(target, info, main + val)
    target.check("split.disjoint")
    for key, label in (("episode_id", "episode"), ("task_id", "task_id")):
        if key == "task_id" and source != "agentnet":
            continue
        sides = [{_id(d, key) for d in _demos(series)} - {""} for series in (main, val)]
        both = sorted(sides[0] & sides[1])
        if both:
            target.find(
                "split.disjoint",
                f"{plural(len(both), label)} in both the main and the _val_ shards, e.g. {both[0]!r}",
                DATASET_INFO,
            )


def _subsplits(target: Target, info: dict[str, Any], shards: list[ShardSummary]) -> None:
    """`subsplits` is {name: {episodes, steps}}, required where the build records a subsplit attr
    and then counting exactly the demos whose attr names each subset; without one, no subset can
    hold more than the directory does. Counts are judged only when every shard opened."""
    target.check("info.subsplits")
    attr = declared_source(info).get("subsplit_attr")
    listed = info.get("subsplits")
    if listed is None:
        if isinstance(attr, str) and attr:
            target.find(
                "info.subsplits", f"the build records subsplit_attr {attr!r} but no subsplits", DATASET_INFO
            )
        return
    if not isinstance(listed, dict) or not all(
        isinstance(v, dict) and all(isinstance(v.get(k), int) for k in SUBSPLIT_KEYS) for v in listed.values()
    ):
        target.find(
            "info.subsplits", f"subsplits {short(listed)} is not {{name: {{episodes, steps}}}}", DATASET_INFO
        )
        return
    if not all(s.opened for s in shards):
        return
    demos = _demos(shards)
    if not (isinstance(attr, str) and attr):
        total = {"episodes": len(demos), "steps": sum(d.steps for d in demos)}
        for name, counts in sorted(listed.items()):
            for key in (k for k in SUBSPLIT_KEYS if counts[k] > total[k]):
                target.find(
                    "info.subsplits",
                    f"subsplits.{name} counts {counts[key]} {key}, the directory holds {total[key]}",
                    DATASET_INFO,
                )
        return
    actual: dict[str, dict[str, int]] = {}
    for d in demos:
        for name in d.subsplits:
            entry = actual.setdefault(name, {"episodes": 0, "steps": 0})
            entry["episodes"] += 1
            entry["steps"] += d.steps
    if INVALID_SUBSPLITS in actual:
        target.find(
            "info.subsplits",
            f"{actual[INVALID_SUBSPLITS]['episodes']} demos carry a {attr} that is not a JSON list of names",
            DATASET_INFO,
        )
        del actual[INVALID_SUBSPLITS]
    for name in sorted(set(listed) | set(actual)):
        want = actual.get(name, {"episodes": 0, "steps": 0})
        if listed.get(name) != want:
            target.find(
                "info.subsplits",
                f"subsplits.{name} is {short(listed.get(name))}, the demos' {attr} make it {want}",
                DATASET_INFO,
            )


def _id(demo: DemoSummary, key: str) -> str:
    return demo.episode_id if key == "episode_id" else demo.ids.get(key, "")


def _heldout(target: Target, info: dict[str, Any], demos: list[DemoSummary]) -> None:
    if info.get("source") != "webarena" and "heldout_ids" not in info:
        return
    target.check("info.heldout_ids")
    heldout = info.get("heldout_ids")
    if not isinstance(heldout, dict):
        target.find("info.heldout_ids", f"heldout_ids is {short(heldout)}, not an object", DATASET_INFO)
        return
    for key, attr in HELDOUT_KEYS.items():
        listed = heldout.get(key)
        if not isinstance(listed, list):
            target.find("info.heldout_ids", f"heldout_ids.{key} is {short(listed)}, not a list", DATASET_INFO)
            continue
        actual = {d.ids[attr] for d in demos if attr in d.ids}
        if {str(v) for v in listed} != actual:
            target.find(
                "info.heldout_ids",
                f"heldout_ids.{key} is {short(sorted(map(str, listed)))}, the demos "
                f"carry {short(sorted(actual))}",
                DATASET_INFO,
            )
