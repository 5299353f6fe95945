"""Lite.CUAGym: every computer action name, batches and stale frames, finish and shell tools."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import h5py
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gui_assets.checks import invariants
from gui_assets.core import shard_reader
from gui_assets.core.drops import Drop
from gui_assets.core.ir import NO_MASK, POINT_MASK, SPAN_MASK, ActionType
from gui_assets.core.layout import OutLayout
from gui_assets.core.splits import shipped_validation
from gui_assets.pipeline.chain import RawSettings, build_directory, read_split_rows
from gui_assets.sources.cuagym import adapter as cuagym
from gui_assets.sources.cuagym import demo as cuagym_mirror
from gui_assets.sources.cuagym.source import SPEC as CUAGYM
from gui_assets_tests.conftest import page_bytes, run_adapter


def run(mirror, tmp, partition="desktop_use"):
    return run_adapter(CUAGYM, mirror, partition, tmp)


def test_every_action_name_maps_and_batched_actions_are_stale(demo_mirror, tmp_path):
    eps, stats = run(demo_mirror, tmp_path)
    ep = eps[1]  # after the eval row: the benchmark split is read first
    assert ep.instruction == "Rename the file to notes.txt" and ep.success
    got = [(s.action_type.name, tuple(round(p, 3) for p in s.params), s.text, s.obs_stale) for s in ep.steps]
    assert got == [
        ("CLICK", (0.32, 0.225, 0, 0), "", False),
        ("CLICK", (0.32, 0.225, 0, 0), "", False),
        ("TYPE", (0, 0, 0, 0), "notes.txt\n", True),  # second action of one call: its own screen unseen
        ("PRESS_KEY", (0, 0, 0, 0), "ctrl+s", False),
        ("SCROLL", (0.5, 0.6, 0.5, 0.35), "", False),  # view down 5 units: the content travels up 0.25
        ("DRAG", (0.1, 0.1, 0.4, 0.3), "", False),
        ("HOVER", (0.67, 0.52, 0, 0), "", False),
        ("CLICK", (0.67, 0.52, 0, 0), "", False),
        ("WAIT", (0, 0, 0, 0), "", False),  # the screenshot before it in the batch observes, it does not act
        ("PRESS_KEY", (0, 0, 0, 0), "shift", False),
        ("PRESS_ENTER", (0, 0, 0, 0), "enter", False),
        ("STOP", (0, 0, 0, 0), "", False),
    ]
    assert [s.desc for s in ep.steps][1:3] == ["double_click(0.32, 0.23)", 'type("notes.txt\\n")']
    assert ep.steps[7].desc.startswith("right_click(") and ep.steps[9].desc == 'hold_key("shift")'
    assert ep.steps[1].thought == ep.steps[2].thought == "Step 1: I will computer next."
    assert json.loads(ep.steps[0].annotations) == {"action_description": "do 0"}
    assert ep.attrs["stale_steps"] == "1"
    assert stats.drops["no_action_equivalent"] == 1 and stats.drops["non_gui_tool"] == 1


def test_finish_tools_inline_reasoning_and_scroll_at_the_pointer(demo_mirror, tmp_path):
    eps, _ = run(demo_mirror, tmp_path)
    t2 = eps[2]
    assert t2.steps[1].action_type == ActionType.SCROLL and t2.steps[1].params[:2] == pytest.approx(
        (0.12, 0.08)
    )
    assert t2.steps[1].desc == "scroll(up)" and t2.steps[0].thought == "Step 0: I will computer next."
    assert (t2.steps[2].action_type, t2.steps[2].text) == (ActionType.STOP, "The settings are open.")
    v1 = eps[3]  # validation, images given as paths relative to the mirror root
    assert v1.attrs["upstream_split"] == "validation" and v1.steps[-1].action_type == ActionType.FAIL
    assert not v1.success


def test_drops_by_reason(demo_mirror, tmp_path):
    _, stats = run(demo_mirror, tmp_path)
    assert stats.drops == {
        "benchmark_overlap": 1,
        "duplicate_across_splits": 1,
        "incomplete": 1,
        "missing_screenshot": 2,
        "empty_episode": 1,
        "no_action_equivalent": 1,
        "non_gui_tool": 1,
    }


@pytest.mark.parametrize(
    ("action", "outcome"),
    [
        ({"action": "click", "coordinate": [1001, 5]}, "coordinate_out_of_range"),
        ({"action": "click", "coordinate": [5]}, "malformed_step"),
        ({"action": "scroll", "direction": "sideways", "amount": 3}, "malformed_step"),
        ({"action": "teleport"}, "unknown_action_verb"),
        ({"action": "key_up", "keys": ["a"]}, "no_action_equivalent"),
    ],
)
def test_bad_actions_are_dropped_by_reason(action, outcome):
    with pytest.raises(Drop) as e:
        cuagym._step(action, None, (0.5, 0.5), None, ("", ""), False)  # type: ignore[arg-type]
    assert e.value.reason == outcome


def test_grounded_steps_and_the_shipped_split(demo_mirror, tmp_path):
    info = build_directory(CUAGYM, "desktop_use", tmp_path, RawSettings(mode="mirror", mirror=demo_mirror))
    assert [s.file for s in info.val_shards] == ["cuagym_desktop_use_val_0000.hdf5"]
    rows = read_split_rows(OutLayout(tmp_path), "cuagym_desktop_use")
    assert invariants.split_disjointness(invariants.SplitTable("desktop_use", rows), []).passed
    shards = shard_reader.shard_files(tmp_path / "cuagym_desktop_use", "cuagym_desktop_use")
    for check in (invariants.action_mask, invariants.causal_cursor):
        assert check(shards).passed
    with h5py.File(shards[0]) as f:
        stale = f["data/demo_0/obs_stale"][:]
        assert stale.tolist().count(1) == 1
        masks = {tuple(m) for m in f["data/demo_0/action_mask"][:]}
    assert masks == {POINT_MASK, SPAN_MASK, NO_MASK}


def test_the_demo_rows_use_the_hub_layout(tmp_path):
    cuagym_mirror.write_mirror(tmp_path)
    got = sorted(p.relative_to(tmp_path / cuagym.REPO_ID).as_posix() for p in tmp_path.rglob("*.parquet"))
    assert got[0] == "browser/use/eval/browser.use.demo/shard-00000-of-00001.parquet" and len(got) == 6


def test_the_demo_eval_row_has_the_older_sibling_shape_and_goes_to_val(demo_mirror, tmp_path):
    eps, _ = run(demo_mirror, tmp_path, "browser_use")
    e1 = eps[0]
    assert (e1.attrs["task_id"], e1.attrs["upstream_split"], e1.attrs["upstream_dims"]) == (
        "browser-e1",
        "eval",
        '["browser", "use"]',
    )
    assert [s.action_type.name for s in e1.steps] == ["CLICK", "TYPE", "STOP"] and e1.success
    assert shipped_validation.assign(e1.episode_id, e1.attrs) == "val"
    assert [e.attrs["task_id"] for e in eps].count("browser-e1") == 1


# --- variants seen in sibling cua-lite datasets, and hostile values -----------------------


def shot(seed: int) -> bytes:
    return page_bytes(640, 400, seed=seed)


def conversation(calls: list[dict[str, Any]], instruction: str = "Do it") -> tuple[list[bytes], list[dict]]:
    """(images, messages): the first screen, then each call followed by a tool message with the next."""
    images = [shot(0)]
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "image", "index": 0}, {"type": "text", "text": instruction}]}
    ]
    for i, call in enumerate(calls):
        messages.append({"role": "assistant", "content": [], "tool_calls": [call]})
        images.append(shot(i + 1))
        messages.append({"role": "tool", "content": [{"type": "image", "index": i + 1}]})
    return images, messages


def batch(*actions: dict[str, Any], call_id: str | None = "call_0") -> dict[str, Any]:
    call: dict[str, Any] = {
        "type": "function",
        "function": {"name": "computer", "arguments": {"actions": list(actions)}},
    }
    if call_id:
        call["id"] = call_id
    return call


def bare(name: str, **arguments: Any) -> dict[str, Any]:
    """A tool call without the `computer` batch and without an id: the tool is the action."""
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


def meta(task: str, ret: Any = 1.0, older: bool = False) -> dict[str, Any]:
    others = {"task_id": task, "episode_return": ret, "os": "ubuntu"}
    if older:
        return {
            "metadata_kind": "cua",
            "platform": "desktop",
            "task_type": "use",
            "extra_tools": ["bash"],
            "others": others,
        }
    return {"metadata_kind": "cua", "dims": ["desktop", "use"], "extra_tool_schemas": [], "others": others}


def row(calls: list[dict[str, Any]], metadata: dict[str, Any], instruction: str = "Do it") -> dict[str, Any]:
    images, messages = conversation(calls, instruction)
    return {
        "images": [{"bytes": b, "path": None} for b in images],
        "messages": messages,
        "metadata": metadata,
    }


def write_cuagym(root: Path, splits: dict[str, list[dict[str, Any]]], struct: bool = False) -> Path:
    """A desktop/use mirror: one shard per split; messages and metadata as JSON strings, or as the
    parquet list / struct columns pyarrow infers from the values (missing keys become null)."""
    for split, rows in splits.items():
        folder = root / cuagym.REPO_ID / "desktop" / "use" / split / "desktop.use.test"
        folder.mkdir(parents=True, exist_ok=True)
        if struct:
            table = pa.Table.from_pylist(rows)
        else:
            encoded = [
                {**r, "messages": json.dumps(r["messages"]), "metadata": json.dumps(r["metadata"])}
                for r in rows
            ]
            table = pa.Table.from_pylist(encoded, schema=cuagym_mirror.SCHEMA)
        pq.write_table(table, folder / "shard-00000-of-00001.parquet")
    return root


CALLS_BATCHED = [
    batch({"action": "click", "coordinate": [250, 500], "clicks": 2}),
    batch({"action": "type", "text": "hello"}),
    batch({"action": "scroll", "direction": "down", "amount": 2, "coordinate": [500, 500]}),
    batch({"action": "key", "keys": ["ctrl", "s"]}),
    {"type": "function", "function": {"name": "terminate", "arguments": {"status": "success"}}},
]
CALLS_BARE = [
    bare("click", coordinate=[250, 500], clicks=2),
    bare("type", text="hello"),
    bare("scroll", direction="down", amount=2, coordinate=[500, 500]),
    bare("key", keys=["ctrl", "s"]),
    bare("terminate", status="success"),
]
WANT = [
    ("CLICK", (0.25, 0.5, 0.0, 0.0), "", "double_click(0.25, 0.50)"),
    ("TYPE", (0.0, 0.0, 0.0, 0.0), "hello", 'type("hello")'),
    ("SCROLL", (0.5, 0.5, 0.5, 0.4), "", "scroll(down)"),
    ("PRESS_KEY", (0.0, 0.0, 0.0, 0.0), "ctrl+s", 'press_key("ctrl+s")'),
    ("STOP", (0.0, 0.0, 0.0, 0.0), "", "stop()"),
]


def summary(ep) -> list[tuple[str, tuple[float, ...], str, str]]:
    return [(s.action_type.name, tuple(round(p, 4) for p in s.params), s.text, s.desc) for s in ep.steps]


def test_bare_tool_calls_without_ids_read_like_computer_batches(tmp_path):
    root = write_cuagym(
        tmp_path / "m", {"train": [row(CALLS_BATCHED, meta("a")), row(CALLS_BARE, meta("b"))]}
    )
    (batched, bare_ep), stats = run(root, tmp_path)
    assert summary(batched) == summary(bare_ep) == WANT
    assert not stats.drops and bare_ep.success


def test_older_metadata_keys_give_the_same_episode(tmp_path):
    calls = [*CALLS_BARE[:-1], bare("bash", command="ls"), CALLS_BARE[-1]]
    root = write_cuagym(tmp_path / "m", {"train": [row(calls, meta("old", older=True))]})
    (ep,), stats = run(root, tmp_path)
    assert summary(ep) == WANT and ep.attrs["upstream_dims"] == '["desktop", "use"]'
    assert stats.drops == {"non_gui_tool": 1}  # declared in extra_tools or not, a shell is no GUI action


def test_messages_and_metadata_as_parquet_struct_columns(tmp_path):
    """The same rows with list / struct columns: a key one row or action lacks is null in every other."""
    rows = [row(CALLS_BARE, meta("s")), row(CALLS_BATCHED, meta("t", ret=0.0), instruction="Other")]
    root = write_cuagym(tmp_path / "m", {"train": rows}, struct=True)
    schema = pq.read_schema(next(root.rglob("*.parquet")))
    assert pa.types.is_list(schema.field("messages").type) and pa.types.is_struct(
        schema.field("metadata").type
    )
    (s_ep, t_ep), stats = run(root, tmp_path)
    assert summary(s_ep) == summary(t_ep) == WANT and not stats.drops
    assert (s_ep.success, t_ep.success, t_ep.instruction) == (True, False, "Other")
    assert s_ep.attrs["task_id"] == "s" and s_ep.attrs["exclude_reason"] == ""


def test_eval_rows_go_to_the_val_shards_and_their_copies_leave_training(tmp_path):
    bench = row(CALLS_BARE, meta("bench"))
    splits = {
        "eval": [bench],
        "train": [row(CALLS_BATCHED, meta("train")), bench],  # the benchmark row again: contamination
        "validation": [row(CALLS_BARE[1:], meta("val")), bench],
    }
    root = write_cuagym(tmp_path / "m", splits)
    eps, stats = run(root, tmp_path)
    assert [(e.attrs["task_id"], e.attrs["upstream_split"]) for e in eps] == [
        ("bench", "eval"),
        ("train", "train"),
        ("val", "validation"),
    ]
    assert stats.drops == {"benchmark_overlap": 2}
    assert [shipped_validation.assign(e.episode_id, e.attrs) for e in eps] == ["val", "main", "val"]
    assert CUAGYM.split_rule is shipped_validation
    info = build_directory(CUAGYM, "desktop_use", tmp_path / "build", RawSettings(mode="mirror", mirror=root))
    rows_ = {
        r["episode_id"].split("/")[1]: r["part"]
        for r in read_split_rows(OutLayout(tmp_path / "build"), "cuagym_desktop_use")
    }
    assert rows_ == {"eval": "val", "train": "main", "validation": "val"}
    assert len(info.shards) == len(info.val_shards) == 1


def test_a_validation_copy_of_a_train_row_is_still_duplicate_across_splits(tmp_path):
    same = row(CALLS_BARE, meta("x"))
    root = write_cuagym(tmp_path / "m", {"train": [same, same], "validation": [same]})
    eps, stats = run(root, tmp_path)
    assert len(eps) == 1 and stats.drops == {"duplicate_row": 1, "duplicate_across_splits": 1}


def test_the_statistics_count_the_stale_steps_of_the_shards(demo_mirror, tmp_path):
    info = build_directory(CUAGYM, "desktop_use", tmp_path, RawSettings(mode="mirror", mirror=demo_mirror))
    shards = shard_reader.shard_files(tmp_path / "cuagym_desktop_use", "cuagym_desktop_use")
    stale = sum(int(group["obs_stale"][:].sum()) for _, group in shard_reader.demos(shards))
    assert stale >= 1 and info.stats["stale_steps"] == stale


@pytest.mark.parametrize(
    ("message", "drop"),
    [
        ({"role": "narrator", "content": [{"type": "text", "text": "hm"}]}, "unknown_message_type"),
        ({"content": [{"type": "text", "text": "no role"}]}, "unknown_message_type"),
        (
            {"role": "user", "content": [{"type": "image_url", "image_url": "https://x/y.png"}]},
            "unknown_message_type",
        ),
        ({"role": "user", "content": [{"text": "a part without a type"}]}, "unknown_message_type"),
        ({"role": "user", "content": 7}, "malformed_record"),
    ],
)
def test_a_message_of_unknown_role_or_part_type_drops_the_row_by_name(tmp_path, message, drop):
    r = row(CALLS_BARE, meta("u"))
    r["messages"].insert(2, message)
    root = write_cuagym(tmp_path / "m", {"train": [r, row(CALLS_BARE[1:], meta("ok"))]})
    eps, stats = run(root, tmp_path)
    assert [e.attrs["task_id"] for e in eps] == ["ok"] and stats.drops == {drop: 1}


def test_a_string_content_is_one_text_part(tmp_path):
    r = row(CALLS_BARE, meta("s"))
    r["messages"][0] = {"role": "user", "content": "Plain instruction"}
    r["messages"].insert(0, {"role": "system", "content": [{"type": "image", "index": 0}]})
    root = write_cuagym(tmp_path / "m", {"train": [r]})
    (ep,), _ = run(root, tmp_path)
    assert ep.instruction == "Plain instruction" and summary(ep) == WANT


HOSTILE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "negative": -5, "huge": 10**400}


@pytest.mark.parametrize("value", HOSTILE.values(), ids=HOSTILE.keys())
@pytest.mark.parametrize(
    "action",
    [
        {"action": "click", "coordinate": [500, 500], "clicks": None},
        {"action": "scroll", "direction": "down", "amount": None},
        {"action": "wait", "duration": None},
        {"action": "hold_key", "keys": ["shift"], "duration": None},
        {"action": "click", "coordinate": [None, 500]},
        {"action": "drag", "start_coordinate": [100, 100], "coordinate": [200, None]},
    ],
    ids=["clicks", "scroll_amount", "wait_duration", "hold_duration", "coordinate", "drag_end"],
)
def test_every_guarded_number_refuses_nan_inf_negative_and_huge(action, value):
    field = next(k for k, v in action.items() if v is None or (isinstance(v, list) and None in v))
    a = dict(action)
    a[field] = value if a[field] is None else [value if c is None else c for c in a[field]]
    with pytest.raises(Drop) as e:
        cuagym._step(a, None, (0.5, 0.5), None, ("", ""), False)  # type: ignore[arg-type]
    finite_coordinate = "coordinate" in field and isinstance(value, int)
    assert e.value.reason == ("coordinate_out_of_range" if finite_coordinate else "malformed_step")


@pytest.mark.parametrize(
    ("action", "drop"),
    [
        ({"action": "click", "coordinate": [5, 5], "clicks": 2.5}, "malformed_step"),
        ({"action": "click", "coordinate": [5, 5], "clicks": 4}, "malformed_step"),
        ({"action": "scroll", "direction": "up", "amount": 0}, "malformed_step"),
        ({"action": "scroll", "direction": "up", "amount": 1001}, "malformed_step"),
        ({"action": "wait", "duration": 3601}, "malformed_step"),
        ({"action": "click", "coordinate": [True, 5]}, "malformed_step"),
        ({"action": "type"}, "malformed_step"),
        ({"action": "type", "text": 42}, "malformed_step"),
        ({"action": "terminate", "status": "maybe"}, "malformed_step"),
        ({"action": "response", "text": None}, "malformed_step"),
    ],
)
def test_counts_out_of_their_range_and_mistyped_fields_are_malformed(action, drop):
    with pytest.raises(Drop) as e:
        cuagym._step(action, None, (0.5, 0.5), None, ("", ""), False)  # type: ignore[arg-type]
    assert e.value.reason == drop


def test_an_infinite_value_in_a_real_row_is_counted_not_an_overflow(tmp_path):
    """The known case: `clicks` replaced by Infinity (what json.dumps writes) raised OverflowError."""
    calls = [bare("click", coordinate=[250, 500], clicks=math.inf), *CALLS_BARE[1:]]
    root = write_cuagym(tmp_path / "m", {"train": [row(calls, meta("inf"))]})
    raw = next(root.rglob("*.parquet"))
    assert "Infinity" in pq.read_table(raw)["messages"][0].as_py()
    (ep,), stats = run(root, tmp_path)
    assert len(ep.steps) == 4 and stats.drops == {"malformed_step": 1}


@pytest.mark.parametrize(
    ("index", "drop"),
    [
        (math.nan, "malformed_step"),
        (math.inf, "malformed_step"),
        (-math.inf, "malformed_step"),
        (-1, "malformed_step"),
        (0.5, "malformed_step"),
        (10**30, "missing_screenshot"),
        (10**400, "missing_screenshot"),
    ],
)
def test_an_unusable_image_index_drops_the_calls_made_while_it_is_shown(tmp_path, index, drop):
    r = row(CALLS_BARE, meta("i"))
    r["messages"][2]["content"][0]["index"] = index  # the screen after the first call
    r["messages"][0]["content"][0]["index"] = 0.0  # a float index that is whole is an index
    root = write_cuagym(tmp_path / "m", {"train": [r]})
    (ep,), stats = run(root, tmp_path)
    assert [s.action_type.name for s in ep.steps] == ["CLICK", "SCROLL", "PRESS_KEY", "STOP"]
    assert stats.drops == {drop: 1}  # the type made while the bad index was on screen


@pytest.mark.parametrize(
    ("ret", "outcome"),
    [
        (math.nan, "malformed_record"),
        (math.inf, "malformed_record"),
        (-math.inf, "malformed_record"),
        ("1.0", "malformed_record"),
        (-1.0, False),
        (1e308, True),
        (10**400, True),
        (None, False),
    ],
)
def test_episode_return_must_be_null_or_a_finite_number(tmp_path, ret, outcome):
    root = write_cuagym(tmp_path / "m", {"train": [row(CALLS_BARE, meta("r", ret=ret))]})
    eps, stats = run(root, tmp_path)
    if isinstance(outcome, str):
        assert not eps and stats.drops == {outcome: 1}
    else:
        assert eps[0].success is outcome and not stats.drops


def test_hostile_json_and_image_paths_are_counted(tmp_path):
    deep = row(CALLS_BARE, meta("deep"))
    long_path = row(CALLS_BARE, meta("long"))
    long_path["images"] = [{"bytes": None, "path": "w" * 100_000}, {"bytes": None, "path": "a\x00b.png"}]
    root = write_cuagym(tmp_path / "m", {"train": [deep, long_path]})
    shard = next(root.rglob("*.parquet"))
    table = pq.read_table(shard).to_pylist()
    table[0]["messages"] = "[" * 100_000 + "]" * 100_000  # nested past the recursion limit
    pq.write_table(pa.Table.from_pylist(table, schema=cuagym_mirror.SCHEMA), shard)
    eps, stats = run(root, tmp_path)
    assert not eps
    assert stats.drops == {"malformed_json": 1, "missing_screenshot": 5, "empty_episode": 1}


@pytest.mark.parametrize("emptied", [[], None])
def test_a_tool_result_whose_call_is_gone_counts_that_call(tmp_path, emptied):
    """Found by the fuzz explorer (cuagym:3746:empty:zero_png:522494574): a turn's `tool_calls`
    emptied mid-rollout lost its action without a count, though the tool result after it shows
    a call was made. The result with no call before it now counts the lost call."""
    good = row(CALLS_BARE, meta("a"))
    bad = row(CALLS_BARE, meta("b"))
    bad["messages"][3]["tool_calls"] = emptied  # the second call (type "hello"); its result stays
    root = write_cuagym(tmp_path / "m", {"train": [good, bad]})
    (kept, damaged), stats = run(root, tmp_path)
    assert summary(kept) == WANT
    assert summary(damaged) == [WANT[0], *WANT[2:]]
    assert stats.drops == {"malformed_step": 1}


def test_a_final_answer_without_calls_and_results_one_per_call_count_nothing(tmp_path):
    """What real rollouts hold: a closing assistant turn with no tool call (`[]` or absent), and
    a batch of two calls answered by two tool results."""
    images, messages = conversation(CALLS_BARE[:2])
    messages[1]["tool_calls"].append(bare("mouse_move", coordinate=[10, 10]))
    messages.insert(3, {"role": "tool", "content": [{"type": "text", "text": "moved"}]})
    messages.append({"role": "assistant", "content": [{"type": "text", "text": "done"}], "tool_calls": []})
    messages.append({"role": "assistant", "content": [{"type": "text", "text": "really done"}]})
    pictures = [{"bytes": b, "path": None} for b in images]
    raw = {"images": pictures, "messages": messages, "metadata": meta("c")}
    root = write_cuagym(tmp_path / "m", {"train": [raw]})
    (ep,), stats = run(root, tmp_path)
    assert [s.action_type.name for s in ep.steps] == ["CLICK", "HOVER", "TYPE"]
    assert not stats.drops
