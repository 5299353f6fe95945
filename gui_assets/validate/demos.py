"""The rules of one /data/demo_i: attributes, datasets, the actions vector, masks and states."""

from __future__ import annotations

from collections.abc import Callable

import h5py
import numpy as np

from gui_assets.validate import descs, geometry
from gui_assets.validate.context import DemoArrays, DemoContext, DemoSummary
from gui_assets.validate.format import (
    AGENTVIEW,
    DATASETS,
    DEMO_ATTRS,
    INVALID_SUBSPLITS,
    MASK_ROWS,
    NO_PARAMS,
    OPTIONAL_DATASETS,
    PLATFORMS,
    POINTER_TYPES,
    SOURCE_ID_ATTRS,
    STR,
    TERMINAL,
)
from gui_assets.validate.values import as_int, as_json, as_text, kind_ok, short

# The rules action_rules judges (with demo.datasets, for the arrays they read).
ACTION_RULES = (
    "demo.action_type.range",
    "demo.action_mask.table",
    "demo.action_mask.masked_zero",
    "demo.action_params.range",
    "demo.actions.params",
    "demo.actions.type",
    "demo.actions.has_text",
    "demo.actions.n_masked",
)
DemoRules = Callable[[DemoContext, DemoArrays, DemoSummary], None]
TOL = 1e-6  # float32 copies of one value compare equal; this only absorbs another writer's rounding


def check_demo(ctx: DemoContext, demo: h5py.Group, pixel_steps: set[int]) -> DemoSummary:
    """Judge one demo; `pixel_steps` are the steps whose eye-in-hand pixels are compared."""
    summary = DemoSummary(steps=0)
    _attrs(ctx, demo, summary)
    a = read_arrays(ctx, demo)
    summary.steps = a.steps
    if a.steps == 0:
        return summary
    num_samples = as_int(demo.attrs.get("num_samples"))
    ctx.check("demo.num_samples")
    if num_samples is not None and num_samples != a.steps:
        ctx.find("demo.num_samples", f"num_samples is {num_samples}, the demo has {a.steps} steps")
    _optional(ctx, demo, a)
    action_rules(ctx, a, summary)
    _episode_end(ctx, a, demo)
    _states(ctx, a)
    descs.check(ctx, a, summary)
    geometry.check(ctx, a, demo, pixel_steps, summary)
    return summary


def check_demo_rules(ctx: DemoContext, demo: h5py.Group, rules: DemoRules) -> DemoSummary:
    """Judge one demo by some of check_demo's rules alone (and demo.datasets, for the arrays they
    read), exactly as check_demo does: for an asset check that asks about one part of the format
    (the actions, the crop, SCROLL descs)."""
    a = read_arrays(ctx, demo)
    summary = DemoSummary(steps=a.steps)
    if a.steps:
        rules(ctx, a, summary)
    return summary


def action_rules(ctx: DemoContext, a: DemoArrays, summary: DemoSummary) -> None:
    if a.has("action_type"):
        _types(ctx, a)
    if a.has("action_type", "action_mask", "action_params"):
        _masks(ctx, a, summary)
    _actions(ctx, a)


def _attrs(ctx: DemoContext, demo: h5py.Group, summary: DemoSummary) -> None:
    ctx.check("demo.attrs", "demo.identity", "demo.source_ref")
    for name, kind in DEMO_ATTRS.items():
        if name not in demo.attrs:
            ctx.find("demo.attrs", f"attribute {name} is missing")
        elif not kind_ok(demo.attrs[name], kind):
            ctx.find("demo.attrs", f"attribute {name} is {short(demo.attrs[name])}, not a {kind}")
    summary.episode_id = as_text(demo.attrs.get("episode_id")) or ""
    for attr, want in (("directory", ctx.directory), ("source", ctx.source)):
        got = as_text(demo.attrs.get(attr))
        if want is not None and got is not None and got != want:
            ctx.find("demo.identity", f"attribute {attr} is {got!r}, the demo is in {want!r}")
    if "source_ref" in demo.attrs:
        parsed, ref = as_json(demo.attrs["source_ref"])
        if parsed:
            problem = _source_ref_problem(ref)
            if problem:
                ctx.find("demo.source_ref", problem)
    _platform(ctx, demo)
    _subsplits(ctx, demo, summary)
    source = as_text(demo.attrs.get("source")) or ctx.source
    for key in ("task_id", "intent_template_id"):
        if key in demo.attrs:
            summary.ids[key] = as_text(demo.attrs[key]) or str(demo.attrs[key])
    if source in SOURCE_ID_ATTRS:
        ctx.check("demo.source_ids")
        for key in SOURCE_ID_ATTRS[source]:
            if key not in demo.attrs:
                ctx.find("demo.source_ids", f"a {source} demo needs attribute {key}, which is missing")


def _platform(ctx: DemoContext, demo: h5py.Group) -> None:
    """`platform` is one of PLATFORMS, and the one the directory's build records for its source."""
    ctx.check("demo.platform")
    got = as_text(demo.attrs.get("platform"))
    want = ctx.declared.get("platform")
    if got is None:
        ctx.find("demo.platform", f"attribute platform is {short(demo.attrs.get('platform'))}, not a str")
    elif got not in PLATFORMS:
        ctx.find("demo.platform", f"platform is {got!r}, not one of {', '.join(PLATFORMS)}")
    elif isinstance(want, str) and got != want:
        ctx.find("demo.platform", f"platform is {got!r}, the directory's build records {want!r}")


def _subsplits(ctx: DemoContext, demo: h5py.Group, summary: DemoSummary) -> None:
    """The named subsets the declared subsplit attr lists (judged against dataset_info.json's
    `subsplits` by the directory rules; a value that is not a list of names is reported there)."""
    attr = ctx.declared.get("subsplit_attr")
    if not isinstance(attr, str) or not attr or attr not in demo.attrs:
        return
    parsed, names = as_json(demo.attrs[attr])
    if parsed and isinstance(names, list) and all(isinstance(n, str) and n for n in names):
        summary.subsplits = tuple(sorted(set(names)))
    else:
        summary.subsplits = (INVALID_SUBSPLITS,)


def _source_ref_problem(ref: object) -> str:
    if not isinstance(ref, dict):
        return f"source_ref is {short(ref)}, not a JSON object"
    for key in ("repo_id", "file"):
        if not isinstance(ref.get(key), str) or not ref.get(key):
            return f"source_ref has no {key} (a non-empty string)"
    if ref.get("row") is None and ref.get("member") is None:
        return "source_ref has neither row nor member"
    return ""


def steps_of(demo: h5py.Group) -> int | None:
    for name in ("action_type", "actions", AGENTVIEW):
        ds = demo.get(name)
        if isinstance(ds, h5py.Dataset) and ds.ndim >= 1:
            return int(ds.shape[0])
    return None


def _fits(ds: object, steps: int, shape: tuple[int, ...], dtype: np.dtype | str) -> bool:
    if not isinstance(ds, h5py.Dataset) or ds.shape != (steps, *shape):
        return False
    if dtype == STR:
        return h5py.check_string_dtype(ds.dtype) is not None
    return ds.dtype == dtype


def _describe(ds: h5py.Dataset) -> str:
    kind = "str" if h5py.check_string_dtype(ds.dtype) is not None else str(ds.dtype)
    return f"{ds.shape} {kind}"


def read_arrays(ctx: DemoContext, demo: h5py.Group) -> DemoArrays:
    """The demo's small per-step arrays that have their format's shape and dtype (not the frames)."""
    ctx.check("demo.datasets")
    steps = steps_of(demo)
    if steps is None or steps == 0:
        ctx.find("demo.datasets", "the demo has no steps (no action_type, actions or agentview rows)")
        return DemoArrays(0, {}, None, set())
    arrays: dict[str, np.ndarray] = {}
    fitting: set[str] = set()
    for name, (shape, dtype) in DATASETS.items():
        ds = demo.get(name)
        if ds is None:
            ctx.find("demo.datasets", f"dataset {name} is missing")
        elif not _fits(ds, steps, shape, dtype):
            want = "str" if dtype == STR else str(dtype)
            got = _describe(ds) if isinstance(ds, h5py.Dataset) else "a group"
            ctx.find("demo.datasets", f"{name} is {got}, the format says {(steps, *shape)} {want}")
        else:
            fitting.add(name)
            if not name.startswith("obs/eye"):  # frames are read a step at a time, where compared
                arrays[name] = ds.asstr(errors="replace")[:] if dtype == STR else ds[:]
    frame_hw = None
    av = demo.get(AGENTVIEW)
    if av is None:
        ctx.find("demo.datasets", f"dataset {AGENTVIEW} is missing")
    elif not (
        isinstance(av, h5py.Dataset) and av.ndim == 4 and av.shape[0] == steps and av.shape[3] == 3
    ) or (av.dtype != np.uint8):
        got = _describe(av) if isinstance(av, h5py.Dataset) else "a group"
        ctx.find("demo.datasets", f"{AGENTVIEW} is {got}, the format says ({steps}, H, W, 3) uint8")
    else:
        frame_hw = (int(av.shape[1]), int(av.shape[2]))
        fitting.add(AGENTVIEW)
    return DemoArrays(steps, arrays, frame_hw, fitting)


def _optional(ctx: DemoContext, demo: h5py.Group, a: DemoArrays) -> None:
    ctx.check("demo.optional")
    for name, (shape, dtype) in OPTIONAL_DATASETS.items():
        ds = demo.get(name)
        if ds is None:
            continue
        if not _fits(ds, a.steps, shape, dtype):
            got = _describe(ds) if isinstance(ds, h5py.Dataset) else "a group"
            ctx.find("demo.optional", f"{name} is {got}, the format says ({a.steps},) {dtype}")
        elif name == "obs_stale":
            stale = ds[:]
            for t in np.flatnonzero(stale > 1):
                ctx.find("demo.optional", f"obs_stale is {int(stale[t])}, not 0 or 1", int(t))
    term = demo.get(TERMINAL)
    if term is not None and a.frame_hw is not None:
        want = (1, *a.frame_hw, 3)
        if not isinstance(term, h5py.Dataset) or term.shape != want or term.dtype != np.uint8:
            got = _describe(term) if isinstance(term, h5py.Dataset) else "a group"
            ctx.find("demo.optional", f"{TERMINAL} is {got}, the format says {want} uint8")


def _types(ctx: DemoContext, a: DemoArrays) -> None:
    ctx.check("demo.action_type.range")
    for t, name in enumerate(a.type_names()):
        if name is None:
            ctx.find("demo.action_type.range", f"action_type {int(a['action_type'][t])} indexes no type", t)


def _masks(ctx: DemoContext, a: DemoArrays, summary: DemoSummary) -> None:
    ctx.check("demo.action_mask.table", "demo.action_mask.masked_zero", "demo.action_params.range")
    mask, params = a["action_mask"], a["action_params"]
    names = a.type_names()
    direction_only = ctx.declared.get("scroll_gestures") is False
    summary.judged_counts = all(n is not None for n in names)
    for t, name in enumerate(names):
        row = tuple(float(v) for v in mask[t])
        if name is not None:
            summary.type_counts[name] += 1
            allowed = {MASK_ROWS[name], NO_PARAMS} if name in MASK_ROWS else {NO_PARAMS}
            if name == "SCROLL" and direction_only:
                allowed = {NO_PARAMS}  # the source records a direction, never a gesture
            if row not in allowed:
                want = " or ".join(str(list(m)) for m in sorted(allowed, reverse=True))
                ctx.find("demo.action_mask.table", f"{name} carries mask {list(row)}; allowed {want}", t)
            if row == NO_PARAMS and name in POINTER_TYPES:
                if name == "TYPE":
                    summary.ungrounded_type += 1
                elif name == "SCROLL":
                    summary.zero_mask_scrolls += 1
                else:
                    summary.ungrounded_pointer += 1
        invented = [float(p) for p, m in zip(params[t], mask[t], strict=True) if m == 0 and p != 0]
        if invented:
            ctx.find(
                "demo.action_mask.masked_zero", f"masked slots hold {invented} (invented coordinates)", t
            )
        unmasked = params[t][mask[t] != 0]
        if np.any(~np.isfinite(unmasked)) or np.any((unmasked < 0) | (unmasked > 1)):
            ctx.find("demo.action_params.range", f"unmasked params {unmasked.tolist()} leave [0, 1]", t)


def _actions(ctx: DemoContext, a: DemoArrays) -> None:
    if not a.has("actions"):
        return
    acts = a["actions"]
    columns = (
        ("demo.actions.params", "action_params", lambda: acts[:, 0:4], lambda: a["action_params"]),
        ("demo.actions.type", "action_type", lambda: acts[:, 4], lambda: a["action_type"]),
        ("demo.actions.has_text", "action_text", lambda: acts[:, 5], lambda: _has_text(a["action_text"])),
        ("demo.actions.n_masked", "action_mask", lambda: acts[:, 6], lambda: (a["action_mask"] == 0).sum(1)),
    )
    for rule, source, got_of, want_of in columns:
        if not a.has(source):
            continue
        ctx.check(rule)
        got, want = got_of(), np.asarray(want_of(), dtype=np.float64)
        bad = ~np.isclose(got, want, rtol=0, atol=TOL)
        for t in np.flatnonzero(bad.reshape(a.steps, -1).any(axis=1)):
            ctx.find(rule, f"actions holds {short(got[t])} where {source} says {short(want[t])}", int(t))


def _has_text(text: np.ndarray) -> np.ndarray:
    return np.array([1.0 if s else 0.0 for s in text])


def _episode_end(ctx: DemoContext, a: DemoArrays, demo: h5py.Group) -> None:
    last = a.steps - 1
    if a.has("dones"):
        ctx.check("demo.dones")
        dones = a["dones"]
        for t in np.flatnonzero(dones[:last] != 0):
            ctx.find("demo.dones", f"dones is {int(dones[t])} before the last step", int(t))
        if dones[last] != 1:
            ctx.find("demo.dones", f"dones is {int(dones[last])} on the last step, not 1", last)
    if a.has("rewards"):
        ctx.check("demo.rewards")
        rewards = a["rewards"]
        for t in np.flatnonzero(rewards[:last] != 0):
            ctx.find("demo.rewards", f"rewards is {int(rewards[t])} before the last step", int(t))
        success = demo.attrs.get("success")
        if rewards[last] not in (0, 1):
            ctx.find("demo.rewards", f"rewards is {int(rewards[last])} on the last step, not 0 or 1", last)
        elif isinstance(success, bool | int | np.integer | np.bool_) and int(rewards[last]) != int(
            bool(success)
        ):
            ctx.find(
                "demo.rewards", f"rewards ends at {int(rewards[last])} but success is {int(success)}", last
            )


def _differs(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Per step: does any value differ (beyond float32 rounding)?"""
    bad = ~np.isclose(got.astype(np.float64), want.astype(np.float64), rtol=TOL, atol=TOL)
    return np.flatnonzero(bad.reshape(len(got), -1).any(axis=1))


def _states(ctx: DemoContext, a: DemoArrays) -> None:
    if not a.has("states"):
        return
    states = a["states"]
    ctx.check("demo.progress")
    progress = np.arange(a.steps, dtype=np.float64) / a.steps
    for t in _differs(states[:, 4], progress):
        ctx.find(
            "demo.progress", f"progress is {float(states[t, 4]):.6g}, t / T is {progress[t]:.6g}", int(t)
        )
    for name in ("robot_states", "obs/cursor_states", "obs/gripper_states"):
        if a.has(name):
            ctx.check("demo.cursor.aliases")
            for t in _differs(a[name], states[:, 0:2]):
                ctx.find(
                    "demo.cursor.aliases",
                    f"{name} is {short(a[name][t])}, states[:, 0:2] is {short(states[t, 0:2])}",
                    int(t),
                )
    if a.has("obs/scroll_states"):
        ctx.check("demo.scroll_states")
        for t in _differs(a["obs/scroll_states"], states[:, 2:4]):
            ctx.find(
                "demo.scroll_states",
                f"obs/scroll_states is {short(a['obs/scroll_states'][t])}, "
                f"states[:, 2:4] is {short(states[t, 2:4])}",
                int(t),
            )
    if a.has("obs/joint_states"):
        ctx.check("demo.joint_states")
        for t in np.flatnonzero(np.any(a["obs/joint_states"] != 0, axis=1)):
            ctx.find(
                "demo.joint_states", f"joint_states is {short(a['obs/joint_states'][t])}, not zeros", int(t)
            )
