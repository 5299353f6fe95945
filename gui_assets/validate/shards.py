"""The rules of one shard: it opens, uses built-in filters only, its /data attrs, its demo numbering,
and every demo in it (read one at a time: the shard is never loaded whole)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from gui_assets.validate.context import DemoContext, DemoSummary
from gui_assets.validate.demos import check_demo, steps_of
from gui_assets.validate.format import ACTION_TYPES, BUILTIN_FILTERS, DATA_ATTRS, PARAM_NAMES
from gui_assets.validate.report import Target
from gui_assets.validate.values import as_int, as_json, kind_ok, short

DEMO_NAME = re.compile(r"demo_(0|[1-9]\d*)")


@dataclass(slots=True)
class ShardSummary:
    """What the directory-level rules need from one shard (opened is False when it did not open)."""

    name: str
    opened: bool = False
    demos: list[DemoSummary] = field(default_factory=list)
    frame_hws: set[tuple[int, int]] = field(default_factory=set)
    demo_bytes: dict[str, int] = field(default_factory=dict)  # each demo's dataset storage
    last_demo: str = ""

    @property
    def steps(self) -> int:
        return sum(d.steps for d in self.demos)


DEFAULT_PIXEL_SAMPLES = 8


@dataclass(frozen=True, slots=True)
class Sampling:
    """Which steps get their eye-in-hand pixels compared: `per_shard` spread over each shard, or all."""

    per_shard: int = DEFAULT_PIXEL_SAMPLES
    full: bool = False


def check_shard(
    target: Target,
    path: Path,
    directory: str | None,
    source: str | None,
    sampling: Sampling | None,
    declared: dict[str, Any] | None = None,
) -> ShardSummary:
    """Judge one shard. With `sampling` None, only what the directory-level rules need of it (it
    opens, its filters, its demo numbering and counts, each demo's steps) and no demo's contents:
    for a caller that asks about the files and their listing only (the shard_integrity check).
    `declared`: the directory's recorded build.source, which some demo rules compare with."""
    summary = ShardSummary(path.name)
    target.check("shard.open")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        target.find("shard.open", f"h5py cannot open it: {e}", path.name)
        return summary
    with f:
        data = f.get("data")
        if not isinstance(data, h5py.Group):
            target.find("shard.open", "it has no /data group", path.name)
            return summary
        summary.opened = True
        _filters(target, path.name, f, summary)
        if sampling is not None:
            _data_attrs(target, path.name, data)
        names = _demo_names(target, path.name, data)
        picked = _pixel_steps(data, names, sampling) if sampling is not None else {}
        for name in names:
            ctx = DemoContext(target, path.name, name, directory, source, declared or {})
            try:
                if sampling is None:
                    summary.demos.append(DemoSummary(steps=steps_of(data[name]) or 0))
                    continue
                demo = check_demo(ctx, data[name], picked.get(name, set()))
            except (OSError, ValueError) as e:  # a chunk that will not inflate, a damaged header
                target.find("shard.open", f"h5py cannot read the demo: {e}", path.name, name)
                summary.opened = False  # its counts are unknown: the directory's totals are not judged
                continue
            summary.demos.append(demo)
            frames = data[name].get("obs/agentview_rgb")
            if isinstance(frames, h5py.Dataset) and frames.ndim == 4:
                summary.frame_hws.add((int(frames.shape[1]), int(frames.shape[2])))
        summary.last_demo = names[-1] if names else ""
        _counts(target, path.name, data, summary)
    target.figures["demos"] += len(summary.demos)
    target.figures["steps"] += summary.steps
    return summary


def _filters(target: Target, file: str, f: h5py.File, summary: ShardSummary) -> None:
    target.check("shard.filters")

    def visit(name: str, obj: Any) -> None:
        if not isinstance(obj, h5py.Dataset):
            return
        parts = name.split("/")
        if len(parts) > 2 and parts[0] == "data":
            summary.demo_bytes[parts[1]] = summary.demo_bytes.get(parts[1], 0) + obj.id.get_storage_size()
        plist = obj.id.get_create_plist()
        for i in range(plist.get_nfilters()):
            code, _, _, label = plist.get_filter(i)
            if code not in BUILTIN_FILTERS:
                shown = label.decode(errors="replace") if isinstance(label, bytes) else str(label)
                named = f" ({shown})" if shown else ""
                message = f"/{name} uses filter {code}{named}: not gzip, shuffle, fletcher32 or lzf"
                target.find("shard.filters", message, file)

    f.visititems(visit)


def _data_attrs(target: Target, file: str, data: h5py.Group) -> None:
    target.check("data.attrs", "data.json", "data.problem_info", "data.action_types", "data.param_names")
    attrs = data.attrs
    for name, kind in DATA_ATTRS.items():
        if name not in attrs:
            target.find("data.attrs", f"/data attribute {name} is missing", file)
        elif kind != "json" and not kind_ok(attrs[name], kind):
            target.find("data.attrs", f"/data attribute {name} is {short(attrs[name])}, not a {kind}", file)
    parsed: dict[str, Any] = {}
    wanted = {"env_args": dict, "problem_info": dict, "gui_action_types": list, "gui_param_names": list}
    for name, kind in wanted.items():
        if name not in attrs:
            continue
        ok, value = as_json(attrs[name])
        if not ok or not isinstance(value, kind):
            target.find(
                "data.json",
                f"/data attribute {name} is {short(attrs[name])}, not a JSON "
                f"{'object' if kind is dict else 'list'}",
                file,
            )
        else:
            parsed[name] = value
    if "problem_info" in parsed and parsed["problem_info"].get("language_instruction") != "":
        got = parsed["problem_info"].get("language_instruction")
        target.find("data.problem_info", f'problem_info.language_instruction is {short(got)}, not ""', file)
    if "gui_action_types" in parsed and parsed["gui_action_types"] != list(ACTION_TYPES):
        target.find(
            "data.action_types",
            f"gui_action_types is {short(parsed['gui_action_types'], 200)}, "
            f"the format's order is {list(ACTION_TYPES)}",
            file,
        )
    if "gui_param_names" in parsed and parsed["gui_param_names"] != list(PARAM_NAMES):
        target.find("data.param_names", f"gui_param_names is {short(parsed['gui_param_names'])}", file)


def _demo_names(target: Target, file: str, data: h5py.Group) -> list[str]:
    """The demos in index order; a `demo_*` member that is not demo_<n> is reported, not judged."""
    target.check("data.demo_numbering", "shard.empty")
    found: dict[int, str] = {}
    for key in data:
        if not key.startswith("demo_"):
            continue  # other members (robomimic's filter-key `mask` group) are not demos
        match = DEMO_NAME.fullmatch(key)
        if match is None or not isinstance(data[key], h5py.Group):
            target.find("data.demo_numbering", f"/data/{key} is not a demo_<n> group", file)
            continue
        found[int(match.group(1))] = key
    if not found:
        target.find("shard.empty", "the shard holds no demo", file)
    elif sorted(found) != list(range(len(found))):
        missing = sorted(set(range(len(found))) - set(found))
        extra = sorted(set(found) - set(range(len(found))))
        target.find(
            "data.demo_numbering",
            f"{len(found)} demos are not demo_0..demo_{len(found) - 1}: "
            f"{[f'demo_{i}' for i in extra[:5]]} in place of {[f'demo_{i}' for i in missing[:5]]}",
            file,
        )
    return [found[i] for i in sorted(found)]


def _steps_of(demo: h5py.Group) -> int:
    ds = demo.get("action_type")
    return int(ds.shape[0]) if isinstance(ds, h5py.Dataset) and ds.ndim >= 1 else 0


def _pixel_steps(data: h5py.Group, names: list[str], sampling: Sampling) -> dict[str, set[int]]:
    """Per demo, the steps whose pixels are compared: evenly spread over the shard's steps."""
    lengths = [_steps_of(data[n]) for n in names]
    total = sum(lengths)
    if sampling.full:
        return {n: set(range(length)) for n, length in zip(names, lengths, strict=True)}
    picked = (
        set(np.linspace(0, total - 1, min(sampling.per_shard, total)).round().astype(int)) if total else set()
    )
    out: dict[str, set[int]] = {}
    start = 0
    for name, length in zip(names, lengths, strict=True):
        out[name] = {t - start for t in picked if start <= t < start + length}
        start += length
    return out


def _counts(target: Target, file: str, data: h5py.Group, summary: ShardSummary) -> None:
    target.check("data.counts")
    if not summary.opened:
        return  # a demo that would not read has no counts to compare
    for attr, actual in (("num_demos", len(summary.demos)), ("total", summary.steps)):
        value = as_int(data.attrs.get(attr))
        if value is not None and value != actual:
            target.find("data.counts", f"/data attribute {attr} is {value}, the shard holds {actual}", file)


def type_counts(shards: list[ShardSummary]) -> Counter[str]:
    total: Counter[str] = Counter()
    for s in shards:
        for d in s.demos:
            total.update(d.type_counts)
    return total
