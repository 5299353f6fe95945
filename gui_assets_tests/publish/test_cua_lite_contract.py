"""cua-lite's row contract as this project's own checks, run on an export of every demo directory.

The rules are those of cua-lite's publish gate (`lite/data/utils/rows.py::validate_canonical_rows`
and what it calls, in `justanotheruser82174/cua-lite`), as summarized in the team's notes: the
metadata keys and dims, the nested extra tool schemas, the desktop/browser action signatures
(closed keys, types, enums), key tokens, coordinates, tool-call ids and result pairing, finish
calls, content parts, image references and files, and the split folders. cua-lite itself cannot
be installed here, so this is a floor written from its rules, not its reader.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from collections import Counter
from pathlib import Path, PurePosixPath
from typing import Any

import pyarrow.parquet as pq
import pytest

from gui_assets.core.episode_store import ImageStore, iter_episodes
from gui_assets.core.ir import (
    NO_MASK,
    POINT_MASK,
    ActionType,
    GuiEpisode,
    Observation,
    SourceRef,
    step_builder,
)
from gui_assets.core.layout import DatasetInfo, OutLayout, built_directories
from gui_assets.core.splits import MAIN, VAL
from gui_assets.publish import cua_lite
from gui_assets.publish.cua_lite_actions import STEP_DROPS
from gui_assets.publish.cua_lite_keys import KEY_DROPS
from gui_assets.sources.registry import SOURCES
from gui_assets_tests.conftest import page_bytes

NAME = "cua-lite/GuiAgent"
PLATFORMS = ("desktop", "browser", "mobile")
TASK_TYPES = ("understanding", "grounding.action", "grounding.point", "grounding.bbox", "use")
SPLITS = ("train", "validation")
METADATA_KEYS = {"metadata_kind", "dims", "extra_tool_schemas", "valid_actions", "others"}
GUI_TOOLS = {"computer", "mobile", "point", "bbox"}
DIALECT_FINISH = {"ABORT", "COMPLETE", "INFO", "answer", "call_user", "finished"}
FINISH = {"response", "terminate"}
# cua-lite's named keys, written out here on their own (not imported from the writer)
NAMED_KEYS = {
    *"ctrl alt shift meta enter tab space backspace delete esc".split(),
    *"up down left right home end pageup pagedown insert".split(),
    *"capslock menu clear printscreen kp_enter".split(),
    *"volumeup volumedown volumemute playpause nexttrack prevtrack".split(),
    *(f"f{n}" for n in range(1, 25)),
}
PART_TYPES = {
    "system": {"text"},
    "user": {"text", "image", "metadata"},
    "assistant": {"text", "action_description", "inline_reasoning", "history_summary", "metadata"},
    "tool": {"text", "image", "metadata"},
}
TEXT_PARTS = {"text", "action_description", "inline_reasoning", "history_summary"}
BUTTONS = ("left", "right", "middle")
# desktop/browser `computer` actions: (required args, optional args), each arg's kind
DESKTOP: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "key": ({"keys": "keys"}, {}),
    "key_down": ({"keys": "keys"}, {}),
    "key_up": ({"keys": "keys"}, {}),
    "type": ({"text": "str"}, {"press_enter": "bool"}),
    "hold_key": ({"keys": "keys", "duration": "number"}, {}),
    "mouse_move": ({"coordinate": "coordinate"}, {}),
    "click": ({}, {"coordinate": "coordinate", "button": BUTTONS, "clicks": (1, 2, 3)}),
    "drag": ({"coordinate": "coordinate"}, {"start_coordinate": "coordinate", "button": BUTTONS}),
    "mouse_down": ({}, {"button": BUTTONS}),
    "mouse_up": ({}, {"button": BUTTONS}),
    "scroll": ({"direction": ("up", "down", "left", "right"), "amount": "int"}, {"coordinate": "coordinate"}),
    "wait": ({"duration": "number"}, {}),
    "screenshot": ({}, {}),
    "cursor_position": ({}, {}),
}
# mobile `mobile` actions, likewise (cua-lite's LiteMobileActionSet, written out here on their own)
MOBILE: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "tap": ({"coordinate": "coordinate"}, {"clicks": (1, 2)}),
    "long_press": ({"coordinate": "coordinate"}, {"duration": "number"}),
    "type": ({"text": "str"}, {}),
    "swipe": ({"start_coordinate": "coordinate", "coordinate": "coordinate"}, {}),
    "drag": ({"start_coordinate": "coordinate", "coordinate": "coordinate"}, {}),
    "pinch": ({"coordinate": "coordinate", "direction": ("in", "out")}, {"amount": "int"}),
    "system_button": ({"button": ("Home", "Back", "Enter", "Menu", "Recent")}, {}),
    "wait": ({"duration": "number"}, {}),
    "screenshot": ({}, {}),
}
BATCH = {"desktop": ("computer", DESKTOP), "browser": ("computer", DESKTOP), "mobile": ("mobile", MOBILE)}


def canonical_key(token: Any) -> bool:
    if not isinstance(token, str) or not token or token != token.lower():
        return False
    if len(token) == 1:
        return 33 <= ord(token) <= 126
    return "+" not in token and token in NAMED_KEYS


def is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def value_problem(kind: Any, v: Any) -> str | None:
    if isinstance(kind, tuple):
        return None if v in kind and not isinstance(v, bool) else f"{v!r} not one of {kind}"
    ok = {
        "str": isinstance(v, str),
        "bool": isinstance(v, bool),
        "int": is_int(v),
        "number": isinstance(v, int | float) and not isinstance(v, bool) and v >= 0,
        "keys": isinstance(v, list) and bool(v) and all(canonical_key(k) for k in v),
        "coordinate": isinstance(v, list) and len(v) == 2 and all(is_int(c) and 0 <= c <= 1000 for c in v),
    }[kind]
    return None if ok else f"{v!r} is not a valid {kind}"


def schema_problems(schemas: Any) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """The nested tool declaration shape; (problems, parameters by name)."""
    if not isinstance(schemas, list):
        return ["extra_tool_schemas must be a list"], {}
    problems: list[str] = []
    params: dict[str, dict[str, Any]] = {}
    for i, s in enumerate(schemas):
        fn = s.get("function") if isinstance(s, dict) else None
        if not isinstance(s, dict) or set(s) != {"type", "function"} or s["type"] != "function":
            problems.append(f"extra_tool_schemas[{i}] is not {{type: function, function: {{...}}}}")
            continue
        if not isinstance(fn, dict) or not set(fn) <= {"name", "description", "parameters", "strict"}:
            problems.append(f"extra_tool_schemas[{i}].function has noncanonical keys")
            continue
        name = fn.get("name")
        if not isinstance(name, str) or not name or name in params:
            problems.append(f"extra_tool_schemas[{i}] name {name!r} empty or duplicate")
        elif name in GUI_TOOLS or name in DIALECT_FINISH:
            problems.append(f"extra_tool_schemas[{i}] redeclares {name!r}")
        if not isinstance(fn.get("description", ""), str) or not isinstance(fn.get("strict", False), bool):
            problems.append(f"extra_tool_schemas[{i}] description or strict mistyped")
        p = fn.get("parameters")
        if not isinstance(p, dict) or p.get("type") != "object" or not isinstance(p.get("properties"), dict):
            problems.append(f"extra_tool_schemas[{i}].parameters is no object schema")
            continue
        params[str(name)] = p
    return problems, params


def arguments_problem(params: dict[str, Any], args: dict[str, Any]) -> str | None:
    """The subset of JSON Schema the declarations use: required, string type, enum."""
    for req in params.get("required", []):
        if req not in args:
            return f"missing required {req!r}"
    for k, v in args.items():
        prop = params["properties"].get(k)
        if prop is None:
            continue  # cua-lite's check is not closed-key for standalone tools
        if prop.get("type") == "string" and not isinstance(v, str):
            return f"{k} must be a string"
        if "enum" in prop and v not in prop["enum"]:
            return f"{k}={v!r} not in {prop['enum']}"
    return None


def metadata_problems(meta: Any, platform: str, task_type: str) -> list[str]:
    if not isinstance(meta, dict):
        return ["metadata must be a dict"]
    problems = []
    if set(meta) - METADATA_KEYS or not {"metadata_kind", "dims"} <= set(meta):
        problems.append(f"metadata keys {sorted(meta)}")
    if meta.get("metadata_kind") != "cua":
        problems.append("metadata_kind must be cua")
    dims = meta.get("dims")
    if not (isinstance(dims, list) and len(dims) == 2 and dims[0] in PLATFORMS and dims[1] in TASK_TYPES):
        problems.append(f"dims {dims!r}")
    elif dims != [platform, task_type]:
        problems.append(f"dims {dims} differ from the path's {[platform, task_type]}")
    va = meta.get("valid_actions")
    if va is not None and not (isinstance(va, list) and all(isinstance(a, str) for a in va)):
        problems.append("valid_actions must be null or a list of strings")
    others = meta.get("others", {})
    if not isinstance(others, dict):
        problems.append("others must be a dict")
    elif "split" in others or "content_only_final" in others:
        problems.append("others carries split or content_only_final")
    return problems


def batch_problems(args: Any, extra: set[str], platform: str = "desktop") -> list[str]:
    """A batch call (`computer` on desktop and browser, `mobile` on mobile): a non-empty list of
    the platform's actions, each closed-key against its signature."""
    tool, table = BATCH[platform]
    actions = args.get("actions") if isinstance(args, dict) else None
    if not isinstance(actions, list) or not actions or set(args) != {"actions"}:
        return [f"{tool} arguments must be {{actions: [non-empty list]}}"]
    problems = []
    for i, a in enumerate(actions):
        name = a.get("action") if isinstance(a, dict) else None
        if name not in table or name in extra:
            problems.append(f"actions[{i}] action {name!r} is not a {tool} action")
            continue
        required, optional = table[name]
        for arg, v in a.items():
            kind = required.get(arg, optional.get(arg)) if arg != "action" else None
            if arg != "action" and kind is None:
                problems.append(f"actions[{i}] has unknown argument {arg!r} for {name}")
            elif kind is not None and (why := value_problem(kind, v)):
                problems.append(f"actions[{i}].{arg}: {why}")
        problems += [f"actions[{i}].{r} is required for {name}" for r in required if r not in a]
    return problems


def call_problems(
    call: Any, params: dict[str, dict[str, Any]], ids: set[str], platform: str = "desktop"
) -> list[str]:
    if (
        not isinstance(call, dict)
        or set(call) != {"id", "type", "function"}
        or call.get("type") != "function"
    ):
        return [f"tool call {call!r} is not {{id, type: function, function}}"]
    cid, fn = call["id"], call["function"]
    problems = []
    if not isinstance(cid, str) or not cid or cid in ids:
        problems.append(f"tool call id {cid!r} empty or reused")
    ids.add(str(cid))
    if not isinstance(fn, dict) or set(fn) != {"name", "arguments"} or not isinstance(fn["arguments"], dict):
        return [*problems, "function must be {name, arguments: {...}}"]
    name, args = fn["name"], fn["arguments"]
    if name == BATCH[platform][0]:
        problems += batch_problems(args, set(params), platform)
    elif name in GUI_TOOLS or name in DIALECT_FINISH:
        problems.append(f"tool {name!r} is not valid for a {platform} use row")
    elif name not in params:
        problems.append(f"tool_call {name!r} is standalone but missing from extra_tool_schemas")
    elif why := arguments_problem(params[name], args):
        problems.append(f"tool_call {name!r} arguments: {why}")
    return problems


def content_problems(i: int, m: dict[str, Any], n_images: int) -> list[str]:
    role, content = m.get("role"), m.get("content")
    if role == "assistant" and content is None:
        return []
    if role == "tool" and not (isinstance(content, list) and content):
        return [f"messages[{i}] role:tool content is required and non-empty"]
    if isinstance(content, str) and role in ("system", "user"):
        return []
    if not isinstance(content, list):
        return [f"messages[{i}] content must be a list"]
    problems = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind not in PART_TYPES[role]:
            problems.append(f"messages[{i}] part type {kind!r} not allowed on {role}")
        elif kind in TEXT_PARTS and not isinstance(part.get("text"), str):
            problems.append(f"messages[{i}] {kind} part needs text")
        elif kind == "image" and not (is_int(part.get("index")) and 0 <= part["index"] < n_images):
            problems.append(f"messages[{i}] image index {part.get('index')!r} out of range {n_images}")
        elif kind == "metadata" and not isinstance(part.get("data"), dict):
            problems.append(f"messages[{i}] metadata part needs data")
    return problems


def turn_problems(messages: list[dict[str, Any]]) -> list[str]:
    """`use` pairing: every non-final call answered by one role:tool result before the next turn;
    no orphan or duplicate results; a finish call ends the row; content-only turns are last;
    the row ends on an assistant turn."""
    problems: list[str] = []
    waiting: set[str] = set()
    finished = False
    for i, m in enumerate(messages):
        role = m["role"]
        if role == "tool":
            if m.get("tool_call_id") not in waiting:
                problems.append(f"messages[{i}] orphan or duplicate result {m.get('tool_call_id')!r}")
            waiting.discard(m.get("tool_call_id"))
            continue
        if waiting:
            problems.append(f"messages[{i}] arrived before results for {sorted(waiting)}")
        if role == "assistant":
            if finished:
                problems.append(f"messages[{i}] assistant turn after a finish call")
            calls = m.get("tool_calls") or []
            names = {c["function"]["name"] for c in calls if isinstance(c, dict) and "function" in c}
            finished = bool(names & FINISH)
            waiting = {c["id"] for c in calls if isinstance(c, dict)} if not finished else set()
            texts = [p for p in m.get("content") or [] if p.get("type") == "text" and p.get("text")]
            if not calls and (not texts or i != len(messages) - 1):
                problems.append(f"messages[{i}] content-only turn must have text and end the row")
    if messages[-1]["role"] != "assistant":
        problems.append("the row does not end on an assistant turn")
    return problems


def message_problems(
    messages: Any, images: list[str], params: dict[str, dict[str, Any]], platform: str = "desktop"
) -> list[str]:
    if not isinstance(messages, list) or not messages:
        return ["messages must be a non-empty list"]
    problems: list[str] = []
    ids: set[str] = set()
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in PART_TYPES:
            return [f"messages[{i}] role outside the vocabulary"]
        problems += content_problems(i, m, len(images))
        if any(k == "raw_response" or k.startswith("_lite_") for k in m):
            problems.append(f"messages[{i}] carries a private key")
        if "reasoning_content" in m:
            problems.append(f"messages[{i}] dataset reasoning belongs in inline_reasoning parts")
        if m["role"] == "tool" and "call_id" in m:
            problems.append(f"messages[{i}] uses call_id, not tool_call_id")
        calls = m.get("tool_calls")
        if calls and m["role"] != "assistant":
            problems.append(f"messages[{i}] tool_calls on a {m['role']} message")
        for call in calls or []:
            problems += [f"messages[{i}] {p}" for p in call_problems(call, params, ids, platform)]
    return problems + turn_problems(messages)


def path_parts(rel: str) -> tuple[str, str, str, str]:
    """(platform, task_type, split, variant) of `cua-lite/GuiAgent/<p>/<t>/<split>/<variant>.parquet`."""
    parts = PurePosixPath(rel).parts
    assert rel.startswith(NAME + "/") and len(parts) == 6 and rel.endswith(".parquet"), rel
    platform, task_type, split, variant = parts[2], parts[3], parts[4], parts[5][: -len(".parquet")]
    assert platform in PLATFORMS and task_type in TASK_TYPES and split in SPLITS, rel
    assert variant not in ("", ".", "..") and "\\" not in variant, rel
    return platform, task_type, split, variant


def row_problems(row: dict[str, Any], root: Path, rel: str) -> list[str]:
    """Everything cua-lite's gate (and its SFT export's image loading) would reject in one row."""
    platform, task_type, _, _ = path_parts(rel)
    if set(row) != {"images", "messages", "metadata"}:
        return [f"columns {sorted(row)}"]
    images, messages, meta = row["images"], json.loads(row["messages"]), json.loads(row["metadata"])
    problems = metadata_problems(meta, platform, task_type)
    schema_issues, params = schema_problems(meta.get("extra_tool_schemas", []))
    problems += schema_issues
    if not isinstance(images, list) or not all(isinstance(p, str) for p in images):
        return [*problems, "images must be a list of paths"]
    for p in images:
        pp = PurePosixPath(p)
        if (
            pp.is_absolute()
            or ".." in pp.parts
            or not p.startswith(f"{NAME}/images/")
            or not (root / p).is_file()
        ):
            problems.append(f"image {p} is not a file under the export's image store")
    return problems + message_problems(messages, images, params, platform)


def export_rows(root: Path) -> dict[str, list[dict[str, Any]]]:
    """Every parquet file under the export (as cua-lite discovers them: **/*.parquet) and its rows."""
    return {
        p.relative_to(root).as_posix(): pq.read_table(p).to_pylist() for p in sorted(root.rglob("*.parquet"))
    }


@pytest.fixture(scope="module")
def every_demo(every_demo: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """Every partition of every source built from the demo mirror (a copy of the session's
    shared build), and their export."""
    out = tmp_path_factory.mktemp("cua_lite_contract") / "out"
    shutil.copytree(every_demo, out, symlinks=True)
    return out, cua_lite.write_export(out)


def test_every_row_of_every_demo_directory_passes_the_contract(every_demo):
    out, result = every_demo
    root = Path(result["root"])
    files = export_rows(root)
    assert {rel: len(rows) for rel, rows in files.items()} == result["files"]
    checked: Counter[str] = Counter()
    for rel, rows in files.items():
        for i, row in enumerate(rows):
            assert row_problems(row, root, rel) == [], (rel, i)
            checked[path_parts(rel)[3]] += 1
    infos = {info.directory: info for info in built_directories(out)}
    assert len(infos) == sum(len(spec.partition_keys) for spec in SOURCES)  # every registered partition
    exported = {d for d, info in infos.items() if info.source_record["split_role"] != "evaluation"}
    assert set(checked) == exported and all(checked[d] > 0 for d in exported)
    layout = OutLayout(out)
    episodes = sum(len(list(iter_episodes(layout.episodes(d)))) for d in exported)
    no_row = result["left_out"]["episodes"].get("no_action", 0)
    assert sum(checked.values()) == episodes - no_row > 30  # every episode outside WebArena's tasks


def test_no_benchmark_test_data_is_under_train(every_demo):
    out, result = every_demo
    root, layout = Path(result["root"]), OutLayout(out)
    infos = {info.directory: info for info in built_directories(out)}
    seen: dict[str, set[str]] = {"train": set(), "validation": set()}
    for rel, rows in export_rows(root).items():
        _, _, split, directory = path_parts(rel)
        role = infos[directory].source_record["split_role"]
        assert role != "evaluation", rel
        assert split == "validation" or role == "train", rel
        seen[split] |= {json.loads(r["metadata"])["others"]["id"] for r in rows}
    assert not seen["train"] & seen["validation"]
    for directory, info in infos.items():
        table = pq.read_table(layout.splits(directory), columns=["episode_id", "part"]).to_pydict()
        parts = dict(zip(table["episode_id"], table["part"], strict=True))
        for ep in iter_episodes(layout.episodes(directory)):
            if ep.episode_id in seen["train"]:
                assert info.source_record["split_role"] == "train" and parts.get(ep.episode_id) != VAL
    assert result["directories"]["webarena_human"]["rows"] == {"train": 0, "validation": 0}
    assert result["directories"]["mind2web_test_task"]["rows"]["train"] == 0


def _episodes_by_directory(out: Path) -> dict[str, list[GuiEpisode]]:
    layout = OutLayout(out)
    return {
        info.directory: list(iter_episodes(layout.episodes(info.directory)))
        for info in built_directories(out)
    }


def test_what_is_left_out_is_counted_and_adds_up(every_demo):
    out, result = every_demo
    episodes = _episodes_by_directory(out)
    left_out = result["left_out"]
    assert sum(result["files"].values()) + sum(left_out["episodes"].values()) == sum(
        map(len, episodes.values())
    )
    assert left_out["episodes"]["evaluation_split"] == len(episodes["webarena_human"])
    assert left_out["steps"]["evaluation_split"] == sum(len(e.steps) for e in episodes["webarena_human"])
    assert set(left_out["keys"]) <= set(KEY_DROPS)
    for reason, rows in result["truncated"].items():
        assert reason in STEP_DROPS and left_out["steps"][reason] >= rows > 0
    # AgentNet's demo hotkey("alt+å"): no canonical chord, so that row ends before it
    if any(s.text == "alt+å" for e in episodes["agentnet_win_mac"] for s in e.steps):
        assert left_out["keys"]["text_with_modifier"] >= 1 and result["truncated"]["unmapped_keys"] >= 1


def test_declared_schemas_and_standalone_calls_validate_as_json_schema(every_demo):
    import jsonschema  # a dev dependency: the schemas cua-lite validates calls against must be valid

    root = Path(every_demo[1]["root"])
    called: Counter[str] = Counter()
    for rows in export_rows(root).values():
        for row in rows:
            schemas = {
                s["function"]["name"]: s["function"]["parameters"]
                for s in json.loads(row["metadata"])["extra_tool_schemas"]
            }
            for p in schemas.values():
                jsonschema.Draft202012Validator.check_schema(p)
            for m in json.loads(row["messages"]):
                for call in m.get("tool_calls", []):
                    name = call["function"]["name"]
                    if name not in GUI_TOOLS:  # the batch tools are cua-lite's own, never declared
                        jsonschema.Draft202012Validator(schemas[name]).validate(call["function"]["arguments"])
                        called[name] += 1
    assert sum(called.values()) > 0  # the demo's WebLINX loads (goto) and Lite.CUAGym answers (response)
    assert "terminate" not in called  # cua-lite's convention: no terminal terminate in use rows


def _copy_build(out: Path, dest: Path) -> Path:
    shutil.copytree(out, dest, ignore=shutil.ignore_patterns(cua_lite.EXPORT_DIR))
    return dest


def _edit_source_record(out: Path, directory: str, **changes: Any) -> None:
    path = OutLayout(out).dataset_info(directory)
    info = DatasetInfo.read(path)
    record = dict(info.build["source"])
    for k, v in changes.items():
        if v is None:
            record.pop(k, None)
        else:
            record[k] = v
    info.build["source"] = record
    info.write(path)


def test_evaluation_tasks_are_validation_only_when_asked_and_stale_files_go(every_demo, tmp_path):
    out = _copy_build(every_demo[0], tmp_path / "out")
    stale = out / cua_lite.EXPORT_DIR / NAME / "browser/use/train/mind2web_test_task.parquet"
    shutil.copytree(Path(every_demo[1]["root"]), out / cua_lite.EXPORT_DIR)
    pq.write_table(pq.read_table(stale.parent.parent / "validation/mind2web_test_task.parquet"), stale)
    result = cua_lite.write_export(out, evaluation_as_validation=True)
    root = Path(result["root"])
    assert f"{NAME}/browser/use/train/mind2web_test_task.parquet" in result["removed"] and not stale.exists()
    assert result["files"][f"{NAME}/browser/use/validation/webarena_human.parquet"] == 2
    assert "evaluation_split" not in result["left_out"]["episodes"]  # nothing left out for being evaluation
    for rel, rows in export_rows(root).items():
        assert "webarena" not in rel or path_parts(rel)[2] == "validation"
        for row in rows:
            assert row_problems(row, root, rel) == []


def test_a_directory_without_a_role_or_platform_is_split_by_holdout_or_left_out(every_demo, tmp_path):
    out = _copy_build(every_demo[0], tmp_path / "out")
    _edit_source_record(out, "agentnet_ubuntu", split_role=None)  # built before split roles
    _edit_source_record(out, "weblinx_train", platform=None)
    _edit_source_record(out, "pango_sample", platform="watch")  # no action set for it
    result = cua_lite.write_export(out)
    table = pq.read_table(OutLayout(out).splits("agentnet_ubuntu"), columns=["part"]).to_pydict()
    parts = Counter(table["part"])
    assert parts[VAL] > 0 and result["directories"]["agentnet_ubuntu"] == {
        "platform": "desktop",
        "split_role": None,
        "rows": {"train": parts[MAIN], "validation": parts[VAL]},
    }
    episodes = _episodes_by_directory(out)
    assert result["left_out"]["episodes"]["unknown_platform"] == len(episodes["weblinx_train"]) > 0
    assert result["left_out"]["episodes"]["unsupported_platform"] == len(episodes["pango_sample"]) > 0
    assert not any("weblinx_train" in f or "pango_sample" in f for f in result["files"])


@pytest.mark.parametrize(
    ("role", "holdout", "asked", "split"),
    [
        ("train", False, False, "train"),
        ("train", True, False, "validation"),
        ("validation", False, False, "validation"),
        ("validation", True, False, "validation"),
        ("evaluation", False, False, None),
        ("evaluation", True, False, None),
        ("evaluation", False, True, "validation"),
        ("evaluation", True, True, "validation"),
        (None, False, False, "train"),  # a build from before split roles: by its holdout only
        (None, True, False, "validation"),
    ],
)
def test_the_split_rule(role, holdout, asked, split):
    assert cua_lite.export_split(role, holdout, asked) == split


def test_an_unknown_split_role_fails_loudly():
    with pytest.raises(ValueError, match="split_role 'test'"):
        cua_lite.export_split("test", False)


def test_the_contract_checks_catch_what_the_old_export_wrote(every_demo):
    """The checks are not vacuous: the old writer's mistakes each fail them."""
    root = Path(every_demo[1]["root"])
    rel = f"{NAME}/browser/use/validation/weblinx_valid.parquet"
    row = export_rows(root)[rel][0]
    meta, messages = json.loads(row["metadata"]), json.loads(row["messages"])

    def problems(meta: dict[str, Any] = meta, messages: list[dict[str, Any]] = messages) -> list[str]:
        return row_problems(
            {**row, "metadata": json.dumps(meta), "messages": json.dumps(messages)}, root, rel
        )

    assert problems() == []
    assert problems({**meta, "extra_tool_schemas": [{"name": "terminate"}]})
    assert problems({**meta, "split": "train"})
    assert problems({**meta, "dims": ["desktop", "use"]})
    bad_key = json.loads(json.dumps(messages))
    bad_key[1]["tool_calls"][0]["function"] = {
        "name": "computer",
        "arguments": {"actions": [{"action": "key", "keys": ["ControlLeft", "KeyC"]}]},
    }
    assert any("is not a valid keys" in p for p in problems(messages=bad_key))
    no_point = json.loads(json.dumps(messages))
    no_point[1]["tool_calls"][0]["function"] = {
        "name": "computer",
        "arguments": {"actions": [{"action": "drag"}]},
    }
    assert any("coordinate is required for drag" in p for p in problems(messages=no_point))
    assert "the row does not end on an assistant turn" in problems(messages=messages[:-1])
    thought = json.loads(json.dumps(messages))
    thought[1]["reasoning_content"] = "a thought"
    assert any("inline_reasoning" in p for p in problems(messages=thought))


# ---------------------------------------------------------------------------------------------
# The row rules on synthetic episodes: finishing, batching and the inexpressible-step rule.


@pytest.fixture
def frames(tmp_path: Path) -> tuple[ImageStore, Any]:
    store = ImageStore(tmp_path / "images")
    return store, cua_lite.Frames(store, tmp_path / "export", cua_lite.IMAGES_DIR)


def _episode(store: ImageStore, specs: list[tuple[Any, ...]]) -> GuiEpisode:
    """One episode whose step i is shown on its own screen: specs are (kind, params, mask, text,
    keyword arguments of step_builder's maker)."""
    steps = []
    for i, (kind, params, mask, text, extra) in enumerate(specs):
        sha = store.put(page_bytes(320, 240, seed=i + 1), "png")
        make = step_builder(Observation(sha, "png", 0, 0, 320, 240), SourceRef("t/t", "f", row=i))
        steps.append(make(kind, params, mask, text, **extra))
    return GuiEpisode("t/ep", "t", "do it", steps)


CLICK = (ActionType.CLICK, (0.5, 0.25), POINT_MASK, "", {})


def _row(frames: Any, ep: GuiEpisode, platform: str = "browser") -> tuple[dict[str, Any], Any, list]:
    row, plan = cua_lite.episode_row(ep, frames[1], platform, "synthetic")
    if row:
        rel = f"{NAME}/{platform}/use/train/synthetic.parquet"
        assert row_problems(row, frames[1].root, rel) == []
        return row, plan, json.loads(row["messages"])
    return row, plan, []


def _calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c["function"] for m in messages for c in m.get("tool_calls", [])]


def test_an_ungrounded_hover_ends_the_row_before_it(frames):
    hover = (ActionType.HOVER, (), NO_MASK, "", {"ungrounded": "no_candidate"})
    ep = _episode(frames[0], [CLICK, CLICK, hover, CLICK])
    row, plan, messages = _row(frames, ep)
    assert len(_calls(messages)) == 2 and messages[-1]["role"] == "assistant"
    assert len(row["images"]) == 2  # the first screen and the one after call 0: never the hover's
    others = json.loads(row["metadata"])["others"]
    assert others["truncated"] is True and others["truncated_reason"] == "ungrounded_hover"
    assert plan.steps_left_out == {"ungrounded_hover": 1, "after_row_end": 1}


def test_an_episode_starting_with_an_ungrounded_drag_is_left_out(frames):
    drag = (ActionType.DRAG, (), NO_MASK, "", {"ungrounded": "no_candidate"})
    row, plan, _ = _row(frames, _episode(frames[0], [drag, CLICK, CLICK]))
    assert row == {} and plan.left_out == "no_action"
    assert plan.steps_left_out == {"ungrounded_drag": 1, "after_row_end": 2}


def test_a_stop_ends_the_row_with_done_on_its_own_screen(frames):
    stop = (ActionType.STOP, (), NO_MASK, "", {})
    row, plan, messages = _row(frames, _episode(frames[0], [CLICK, stop, CLICK]))
    assert messages[-1] == {"role": "assistant", "content": [{"type": "text", "text": "Done."}]}
    assert messages[-2]["role"] == "tool" and len(row["images"]) == 2
    assert frames[1].path(_episode(frames[0], [CLICK, stop]).steps[1]) == row["images"][1]
    others = json.loads(row["metadata"])["others"]
    assert others["terminated"] is True and others["terminate_status"] == "success"
    assert plan.steps_left_out == {"after_finish": 1}


def test_a_stop_with_an_answer_is_the_response_call_and_a_fail_ends_at_the_last_action(frames):
    answer = (ActionType.STOP, (), NO_MASK, "42", {"name": "response"})
    _, _, messages = _row(frames, _episode(frames[0], [CLICK, answer]))
    assert _calls(messages)[-1] == {"name": "response", "arguments": {"text": "42"}}
    assert messages[-1]["role"] == "assistant"
    fail = (ActionType.FAIL, (), NO_MASK, "", {})
    row, plan, messages = _row(frames, _episode(frames[0], [CLICK, CLICK, fail]))
    assert [c["name"] for c in _calls(messages)] == ["computer", "computer"] and "tool_calls" in messages[-1]
    assert json.loads(row["metadata"])["others"]["terminate_status"] == "failure"
    row, plan, _ = _row(frames, _episode(frames[0], [fail]))
    assert row == {} and plan.left_out == "no_action" and plan.steps_left_out == {"no_action": 1}


def test_stale_steps_join_the_previous_batch(frames):
    typed = (ActionType.TYPE, (), NO_MASK, "hi", {})
    ep = _episode(frames[0], [CLICK, typed, CLICK])
    ep.steps[1] = dataclasses.replace(ep.steps[1], obs_stale=True)
    row, _, messages = _row(frames, ep)
    calls = _calls(messages)
    assert [a["action"] for a in calls[0]["arguments"]["actions"]] == ["click", "type"] and len(calls) == 2
    assert len(row["images"]) == 2


def test_navigation_scrolls_waits_and_home(frames):
    goto = (ActionType.GOTO, (), NO_MASK, "https://a.example/", {})
    back = (ActionType.PRESS_BACK, (), NO_MASK, "", {})
    wait = (ActionType.WAIT, (), NO_MASK, "", {"desc": "wait(2.5)"})
    at_pointer = (ActionType.CLICK, (), NO_MASK, "", {"ungrounded": "no_point"})  # recorded with no point
    specs = [goto, back, wait, at_pointer, CLICK]
    _, _, messages = _row(frames, _episode(frames[0], specs))
    calls = _calls(messages)
    assert calls[:2] == [
        {"name": "goto", "arguments": {"url": "https://a.example/"}},
        {"name": "back", "arguments": {}},
    ]
    assert calls[2]["arguments"]["actions"] == [{"action": "wait", "duration": 2.5}]
    assert calls[3]["arguments"]["actions"] == [{"action": "click"}]  # where the pointer is, as recorded
    _, _, messages = _row(frames, _episode(frames[0], specs), platform="desktop")
    assert [a["action"] for a in _calls(messages)[0]["arguments"]["actions"]] == ["key", "type"]
    home = (ActionType.PRESS_HOME, (), NO_MASK, "", {})
    edge = (
        ActionType.SCROLL,
        (),
        NO_MASK,
        "",
        {"desc": "scroll(left)", "ungrounded": "gesture_outside_frame"},
    )
    lost = (ActionType.CLICK, (), NO_MASK, "", {"ungrounded": "no_candidate"})  # element never located
    for step, reason in ((home, "no_equivalent"), (edge, "ungrounded_scroll"), (lost, "ungrounded_click")):
        row, plan, _ = _row(frames, _episode(frames[0], [CLICK, step]))
        assert json.loads(row["metadata"])["others"]["truncated_reason"] == reason
        assert plan.steps_left_out == {reason: 1}


def test_key_presses_become_canonical_key_and_type_actions(frames):
    keys = [
        (ActionType.PRESS_KEY, (), NO_MASK, text, {})
        for text in ("ControlLeft+KeyC", "command+shift+Page_Down", "å", "Fn ctrl++")
    ]
    row, plan, messages = _row(frames, _episode(frames[0], keys), platform="desktop")
    assert [c["arguments"]["actions"] for c in _calls(messages)] == [
        [{"action": "key", "keys": ["ctrl", "c"]}],
        [{"action": "key", "keys": ["meta", "shift", "pagedown"]}],
        [{"action": "type", "text": "å"}],
        [{"action": "key", "keys": ["ctrl", "+"]}],
    ]
    assert (
        plan.keys_dropped == {"unknown_key": 1} and "truncated" not in json.loads(row["metadata"])["others"]
    )


def _step(
    kind: ActionType, params: tuple[float, ...], mask: tuple[float, ...], text: str = "", desc: str = ""
):
    obs = Observation("ab" * 32, "png", 0, 0, 1280, 1080)
    ref = SourceRef("o/r", "f.parquet", row=0)
    return step_builder(obs, ref)(kind, params, mask, text, desc=desc)


@pytest.mark.parametrize(
    ("kind", "params", "mask", "text", "desc", "want"),
    [
        (ActionType.CLICK, (0.71, 0.78), POINT_MASK, "", "", "click(710, 780)"),
        (ActionType.CLICK, (0.95, 0.51), POINT_MASK, "", "right_click(0.95, 0.51)", "right_click(950, 510)"),
        (ActionType.TYPE, (0.2, 0.3), POINT_MASK, "0.25 kg", "", 'type(200, 300, "0.25 kg")'),
        (ActionType.DRAG, (0.1, 0.2, 0.3, 0.4), (1, 1, 1, 1), "", "", "drag(100, 200, 300, 400)"),
        (ActionType.TYPE, (0, 0), NO_MASK, "0.50", "", 'type("0.50")'),  # typed numbers stay
        (ActionType.SCROLL, (0.5, 0.8, 0.5, 0.2), (1, 1, 1, 1), "", "", "scroll(down)"),
        (ActionType.WAIT, (0, 0), NO_MASK, "", "wait(2.5)", "wait(2.5)"),
    ],
)
def test_the_action_description_uses_the_tool_calls_integer_coordinates(kind, params, mask, text, desc, want):
    from gui_assets.publish.cua_lite_actions import description

    assert description(_step(kind, params, mask, text, desc)) == want


def test_no_exported_action_description_renders_a_point_in_unit_coordinates(every_demo):
    _, result = every_demo
    root = Path(result["root"])
    unit_point = re.compile(r"^\w+\([01]\.\d\d, [01]\.\d\d")
    descriptions = 0
    for rows in export_rows(root).values():
        for row in rows:
            for message in json.loads(row["messages"]):
                for part in message.get("content") or []:
                    if isinstance(part, dict) and part.get("type") == "action_description":
                        descriptions += 1
                        for one in part["text"].split("; "):
                            assert not unit_point.match(one), one
    assert descriptions > 100


def test_a_grounded_weblinx_typing_step_keeps_where_it_typed(demo_mirror, tmp_path):
    from gui_assets.publish.cua_lite_actions import computer_actions
    from gui_assets.sources.weblinx.source import SPEC as WEBLINX
    from gui_assets_tests.conftest import run_adapter

    episodes, _ = run_adapter(WEBLINX, demo_mirror, "valid", tmp_path)
    typing = [s for e in episodes for s in e.steps if s.action_type == ActionType.TYPE]
    grounded = [s for s in typing if s.grounded]
    assert grounded, "the demo's WebLINX replay has a `change` intent at an element"
    for s in grounded:
        point = [round(s.params[0] * 1000), round(s.params[1] * 1000)]
        assert computer_actions(s, Counter()) == [
            {"action": "click", "coordinate": point},
            {"action": "type", "text": s.text},
        ]
    ungrounded = dataclasses.replace(grounded[0], mask=NO_MASK, params=(0.0, 0.0, 0.0, 0.0))
    assert computer_actions(ungrounded, Counter()) == [{"action": "type", "text": grounded[0].text}]
