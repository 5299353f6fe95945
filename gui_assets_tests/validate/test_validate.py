"""`python -m gui_assets.validate`: a real build passes; each rule, broken once on a copy, is named.

One small real build (the Mind2Web demo build, plus AgentNet for `_val_` shards and WebArena for
held-out ids, with the card, the preview and the cua-lite export) is made once; every case copies
only the folders it needs, breaks one rule with h5py or a JSON edit, and checks that the report
names that rule (and nothing it should not) with exit status 1.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

from gui_assets.pipeline.chain import RawSettings, build_directory
from gui_assets.publish import card, cua_lite, preview
from gui_assets.sources.agentnet.source import SPEC as AGENTNET
from gui_assets.sources.webarena.source import SPEC as WEBARENA
from gui_assets.validate import main
from gui_assets.validate.rules import RULES
from gui_assets_tests.test_layering import imported_names

ROOT = Path(__file__).resolve().parents[2]
M2W, TASK, AGENT, WEBARENA_DIR = "mind2web_train", "mind2web_test_task", "agentnet_ubuntu", "webarena_human"
OUTPUT_PARTS = ("README.md", "preview", "cua_lite")
# What editing a shard in place also changes: its listed size and hash.
SHARD_EDIT = frozenset({"info.shards.sha256", "info.shards.bytes"})


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, demo_build, demo_mirror) -> Path:
    """A whole output folder: four Mind2Web directories, AgentNet ubuntu, WebArena, card, preview
    and cua-lite export, every one written by the pipeline."""
    source, _ = demo_build
    out = tmp_path_factory.mktemp("validate") / "out"
    shutil.copytree(source, out)
    raw = RawSettings(mode="mirror", mirror=demo_mirror)
    build_directory(AGENTNET, "ubuntu", out, raw)
    build_directory(WEBARENA, "human", out, raw)
    card.write_card(out, "org/gui-agent")
    preview.write_preview(out)
    cua_lite.write_export(out)
    return out


def run_json(*args: str) -> tuple[int, dict[str, Any]]:
    """The validator in process with --json: (exit status, the parsed report)."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        status = main(["--json", *args])
    return status, json.loads(buffer.getvalue())


def broken_rules(report: dict[str, Any]) -> set[str]:
    return {rule for t in report["targets"] for rule in t["finding_counts"]}


# --- the correct build ---------------------------------------------------------------------


def test_the_real_build_passes_as_a_user_runs_it(built):
    r = subprocess.run(
        [sys.executable, "-m", "gui_assets.validate", str(built)], capture_output=True, text=True, cwd=built
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines()[-1].startswith(
        "summary: 6 directories, 1 output; 0 findings; every rule holds"
    )
    for d in (M2W, TASK, AGENT, WEBARENA_DIR):
        assert f"{d} (directory, {built / d}):" in r.stdout
    assert "skipped _work/" in r.stdout


def test_every_rule_is_judged_on_the_real_build(built):
    """No rule is dead: each one is checked somewhere in a whole build."""
    status, report = run_json(str(built))
    assert status == 0 and report["ok"] and report["findings"] == 0
    checked = {rule for t in report["targets"] for rule in t["rules_checked"]}
    assert checked == set(RULES)
    train = next(t for t in report["targets"] if t["name"] == M2W)
    assert train["figures"]["pixel_steps"] == 8  # the default sample per shard


def test_full_compares_every_step_and_a_single_shard_is_judged_alone(built):
    shard = built / M2W / f"{M2W}_0000.hdf5"
    status, report = run_json("--full", str(shard))
    assert status == 0
    (target,) = report["targets"]
    assert target["kind"] == "shard" and target["figures"]["pixel_steps"] == target["figures"]["steps"] > 8
    assert not any(r.startswith("info.") for r in target["rules_checked"])


@pytest.mark.parametrize(
    "args",
    [["/nonexistent/build"], ["README.md"], []],
    ids=["missing path", "not a shard", "no path"],
)
def test_usage_errors_exit_2(built, args):
    paths = [str(built / a) if a == "README.md" else a for a in args]
    assert main(paths) == 2


def test_a_folder_with_nothing_to_judge_is_a_usage_error(tmp_path):
    (tmp_path / "empty").mkdir()
    assert main([str(tmp_path)]) == 2


def test_the_validator_imports_nothing_of_the_pipeline():
    """It is an independent judge: only its own package, h5py, numpy and the standard library."""
    package = ROOT / "gui_assets" / "validate"
    for path in package.glob("*.py"):
        for name in imported_names(path):
            top = name.split(".")[0]
            assert top != "gui_assets" or name.startswith("gui_assets.validate"), (path.name, name)
            assert top not in ("pyarrow", "polars", "PIL", "dagster"), (path.name, name)


def test_the_format_page_lists_every_rule_id_and_no_other():
    page = (ROOT / "docs" / "format.md").read_text(encoding="utf-8")
    rows = page.split("| rule id | checks |", 1)[1].splitlines()
    table = [line.split("`")[1] for line in rows if line.startswith("| `")]
    assert sorted(table) == sorted(RULES) and len(table) == len(set(table))
    for rule in RULES:  # each rule is also marked where the page states it
        assert f"[{rule}]" in page, rule


def test_the_dataset_card_says_how_to_check_a_download(built):
    text = (built / "README.md").read_text(encoding="utf-8")
    assert "## Check a download" in text and "python -m gui_assets.validate <folder>" in text


# --- each rule broken once -----------------------------------------------------------------


def shard_of(root: Path, directory: str = M2W, val: bool = False) -> Path:
    return root / directory / f"{directory}_{'val_' if val else ''}0000.hdf5"


@contextmanager
def opened(root: Path, directory: str = M2W, val: bool = False) -> Iterator[h5py.Group]:
    """/data of a copied shard, writable."""
    with h5py.File(shard_of(root, directory, val), "r+") as f:
        yield f["data"]


def edit_demo(
    fn: Callable[[h5py.Group], None], directory: str = M2W, demo: str = "demo_0", val: bool = False
):
    def mutate(root: Path) -> None:
        with opened(root, directory, val) as data:
            fn(data[demo])

    return mutate


def edit_data(fn: Callable[[h5py.Group], None], directory: str = M2W):
    def mutate(root: Path) -> None:
        with opened(root, directory) as data:
            fn(data)

    return mutate


def edit_info(fn: Callable[[dict[str, Any]], None], directory: str = M2W):
    def mutate(root: Path) -> None:
        path = root / directory / "dataset_info.json"
        info = json.loads(path.read_text(encoding="utf-8"))
        fn(info)
        path.write_text(json.dumps(info), encoding="utf-8")

    return mutate


def setitem(name: str, index: Any, value: Any) -> Callable[[h5py.Group], None]:
    def fn(group: h5py.Group) -> None:
        group[name][index] = value

    return fn


def setattr_(name: str, value: Any) -> Callable[[h5py.Group], None]:
    def fn(group: h5py.Group) -> None:
        group.attrs[name] = value

    return fn


def delattr_(name: str) -> Callable[[h5py.Group], None]:
    def fn(group: h5py.Group) -> None:
        del group.attrs[name]

    return fn


def both(*fns: Callable[[h5py.Group], None]) -> Callable[[h5py.Group], None]:
    def fn(group: h5py.Group) -> None:
        for f in fns:
            f(group)

    return fn


def plugin_filter(demo: h5py.Group) -> None:
    """Rewrite a dataset behind blosc (32001), a filter only hdf5plugin provides: created without
    checking the filter is there, and left unwritten so it reads as its fill value (zeros)."""
    shape = demo["obs/joint_states"].shape
    del demo["obs/joint_states"]
    demo["obs"].create_dataset(
        "joint_states",
        shape=shape,
        dtype=np.float32,
        chunks=shape,
        compression=32001,
        allow_unknown_filter=True,
    )


def move_eye_rect(demo: h5py.Group) -> None:
    rect = demo["eye_rect"][3]
    demo["eye_rect"][3] = rect + np.array([0.1, 0, 0.1, 0], dtype=np.float32)


def widen_eye_rect(demo: h5py.Group) -> None:
    rect = demo["eye_rect"][1]
    demo["eye_rect"][1] = [rect[0], rect[1], rect[0] + 0.2, rect[3]]


def shift_cursor(demo: h5py.Group) -> None:
    """The cursor of step 4 moved (consistently in every alias) where no action left it."""
    for name in ("robot_states", "obs/cursor_states", "obs/gripper_states"):
        demo[name][4] = [0.9, 0.9]
    demo["states"][4, 0:2] = [0.9, 0.9]


def invert_crops(demo: h5py.Group) -> None:
    eye = demo["obs/eye_in_hand_rgb"]
    for t in range(eye.shape[0]):
        eye[t] = 255 - eye[t]


def invent_coordinate(demo: h5py.Group) -> None:
    """A CLICK's x2 slot, which its mask leaves out, given a value (the actions copy agrees)."""
    demo["action_params"][3, 2] = 0.3
    demo["actions"][3, 2] = 0.3


def span_mask_on_click(demo: h5py.Group) -> None:
    demo["action_mask"][3] = [1, 1, 1, 1]
    demo["actions"][3, 6] = 0


def click_outside_frame(demo: h5py.Group) -> None:
    demo["action_params"][7, 0] = 1.5
    demo["actions"][7, 0] = 1.5


def retype(name: str, dtype: Any) -> Callable[[h5py.Group], None]:
    def fn(demo: h5py.Group) -> None:
        values = demo[name][:]
        del demo[name]
        demo.create_dataset(name, data=values.astype(dtype))

    return fn


def rename_demo(data: h5py.Group) -> None:
    data.move("demo_4", "demo_7")


def empty_shard(data: h5py.Group) -> None:
    for name in list(data):
        del data[name]
    data.attrs["num_demos"] = 0
    data.attrs["total"] = 0


def copy_episode_id(root: Path) -> None:
    """The val shard's demo given the episode_id of a main shard's demo."""
    with opened(root, AGENT) as data:
        episode = data["demo_0"].attrs["episode_id"]
    with opened(root, AGENT, val=True) as data:
        data["demo_0"].attrs["episode_id"] = episode


def rename_file(old: str, new: str, directory: str = M2W) -> Callable[[Path], None]:
    def mutate(root: Path) -> None:
        (root / directory / old).rename(root / directory / new)

    return mutate


def write_file(rel: str, data: bytes) -> Callable[[Path], None]:
    def mutate(root: Path) -> None:
        (root / rel).write_bytes(data)

    return mutate


def truncate_shard(root: Path) -> None:
    path = shard_of(root)
    path.write_bytes(path.read_bytes()[:100])


def copy_extra_shard(root: Path) -> None:
    shutil.copy(shard_of(root), root / M2W / f"{M2W}_extra.hdf5")


def misplace_parquet(root: Path) -> None:
    first = sorted((root / "cua_lite").rglob("*.parquet"))[0]
    first.rename(first.parents[2] / "stray.parquet")


def corrupt_image(root: Path) -> None:
    first = sorted(p for p in (root / "cua_lite").rglob("images/*/*") if p.is_file())[0]
    first.write_bytes(first.read_bytes() + b"\0")


def truncate_preview(root: Path) -> None:
    path = next((root / "preview").glob("*.parquet"))
    path.write_bytes(path.read_bytes()[:-10])


def card_without_preview(root: Path) -> None:
    path = root / "README.md"
    path.write_text(path.read_text().replace("config_name: preview", "config_name: frames"))


@dataclass(frozen=True)
class Case:
    rule: str
    mutate: Callable[[Path], None]
    copy: tuple[str, ...] = (M2W,)
    also: frozenset[str] | None = frozenset()  # other rules the same damage breaks; None: any
    output: bool = False  # validate the copied output folder instead of the directory


def shard_case(
    rule: str,
    mutate: Callable[[Path], None],
    copy: tuple[str, ...] = (M2W,),
    also: frozenset[str] | set[str] = frozenset(),
) -> Case:
    return Case(rule, mutate, copy, SHARD_EDIT | frozenset(also))


def info_case(rule: str, fn: Callable[[dict[str, Any]], None], directory: str = M2W) -> Case:
    return Case(rule, edit_info(fn, directory), (directory,))


def _add_shard_entry(info: dict[str, Any]) -> None:
    info["shards"].append({**info["shards"][0], "file": f"{M2W}_0001.hdf5"})


DELETE = object()  # _set's value that deletes the key


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """Set info[a][b]...[z] = value, `path` being "a.b.z" (list indices as numbers)."""

    def fn(info: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = info
        for key in parents:
            node = node[int(key)] if key.isdigit() else node[key]
        if value is DELETE:
            del node[last]
        else:
            node[int(last) if last.isdigit() else last] = value(node) if callable(value) else value

    return fn


CASES = [
    Case("files.naming", copy_extra_shard),
    Case(
        "files.contiguous",
        rename_file(f"{M2W}_0000.hdf5", f"{M2W}_0001.hdf5"),
        also=frozenset({"info.shards.listed", "info.shards.present"}),
    ),
    Case("files.no_shards", rename_file(f"{AGENT}_0000.hdf5", "../moved.hdf5", AGENT), (AGENT,), also=None),
    Case("files.unexpected", write_file(f"{M2W}/notes.txt", b"a note")),
    shard_case("shard.open", truncate_shard),
    shard_case("shard.filters", edit_demo(plugin_filter)),
    Case("shard.empty", edit_data(empty_shard, TASK), (TASK,), also=None),
    shard_case("data.attrs", edit_data(delattr_("tag"))),
    shard_case("data.json", edit_data(setattr_("env_args", "{not json"))),
    shard_case(
        "data.problem_info", edit_data(setattr_("problem_info", json.dumps({"language_instruction": "x"})))
    ),
    shard_case("data.action_types", edit_data(setattr_("gui_action_types", json.dumps(["TYPE", "CLICK"])))),
    shard_case(
        "data.param_names", edit_data(setattr_("gui_param_names", json.dumps(["x", "y", "x2", "y2"])))
    ),
    shard_case("data.counts", edit_data(setattr_("num_demos", 4))),
    shard_case("data.demo_numbering", edit_data(rename_demo)),
    shard_case("demo.attrs", edit_demo(delattr_("language_instruction"))),
    shard_case("demo.num_samples", edit_demo(setattr_("num_samples", 99))),
    shard_case("demo.identity", edit_demo(setattr_("directory", "elsewhere"))),
    shard_case("demo.source_ref", edit_demo(setattr_("source_ref", json.dumps({"repo_id": "x"})))),
    shard_case("demo.platform", edit_demo(setattr_("platform", "tablet"))),
    shard_case(
        "demo.source_ids",
        edit_demo(delattr_("intent_template_id"), WEBARENA_DIR),
        (WEBARENA_DIR,),
        also={"info.heldout_ids"},
    ),
    shard_case("demo.datasets", edit_demo(retype("rewards", np.int32))),
    shard_case("demo.optional", edit_demo(setitem("obs_stale", 0, 2))),
    shard_case("demo.actions.params", edit_demo(setitem("actions", (0, 0), 0.123))),
    shard_case("demo.actions.type", edit_demo(setitem("actions", (0, 4), 9))),
    shard_case("demo.actions.has_text", edit_demo(setitem("actions", (0, 5), 1))),
    shard_case("demo.actions.n_masked", edit_demo(setitem("actions", (0, 6), 3))),
    shard_case(
        "demo.action_type.range", edit_demo(setitem("action_type", 7, 20)), also={"demo.actions.type"}
    ),
    shard_case("demo.action_mask.table", edit_demo(span_mask_on_click)),
    shard_case("demo.action_mask.masked_zero", edit_demo(invent_coordinate)),
    shard_case(
        "demo.action_params.range",
        edit_demo(click_outside_frame),
        also={"demo.action_desc.coords", "info.stats.target_rate"},
    ),
    shard_case("demo.action_desc.form", edit_demo(setitem("action_desc", 3, "clicked"))),
    shard_case("demo.action_desc.coords", edit_demo(setitem("action_desc", 3, "click(0.01, 0.02)"))),
    shard_case("demo.scroll.desc", edit_demo(setitem("action_desc", 0, "scroll(up)"), demo="demo_2")),
    shard_case("demo.dones", edit_demo(setitem("dones", 0, 1))),
    shard_case("demo.rewards", edit_demo(setitem("rewards", 0, 1))),
    shard_case("demo.progress", edit_demo(setitem("states", (1, 4), 0.9))),
    shard_case("demo.cursor.aliases", edit_demo(setitem("robot_states", 2, [0.1, 0.1]))),
    shard_case("demo.scroll_states", edit_demo(setitem("obs/scroll_states", 1, [0, 5]))),
    shard_case("demo.joint_states", edit_demo(setitem("obs/joint_states", (0, 0), 1))),
    shard_case("demo.cursor.causal", edit_demo(shift_cursor)),
    shard_case("demo.native_hw", edit_demo(setitem("native_hw", 0, [0, 1280]), demo="demo_2")),
    shard_case("demo.eye_rect.size", edit_demo(widen_eye_rect)),
    shard_case(
        "demo.eye_rect.centre",
        edit_demo(move_eye_rect),
        also={"demo.eye_in_hand.pixels", "info.stats.target_rate"},
    ),
    shard_case("demo.eye_in_hand.pixels", edit_demo(invert_crops)),
    Case("info.read", write_file(f"{M2W}/dataset_info.json", b"{not json")),
    info_case("info.keys", _set("stats.drops", DELETE)),
    info_case("info.identity", _set("directory", "other")),
    info_case("info.shards.listed", _set("shards", [])),
    info_case("info.shards.present", _add_shard_entry),
    info_case("info.shards.counts", _set("shards.0.demos", 4)),
    info_case("info.shards.bytes", _set("shards.0.bytes", lambda e: e["bytes"] + 1)),
    info_case("info.shards.sha256", _set("shards.0.sha256", "0" * 64)),
    info_case("info.shards.frame_hw", _set("shards.0.frame_hw", [1, 1])),
    info_case("info.shards.cap", _set("build.config.shard_cap_bytes", 1000)),
    info_case("info.stats.counts", _set("stats.steps", lambda s: s["steps"] + 1)),
    info_case(
        "info.stats.action_type_counts", _set("stats.action_type_counts.CLICK", lambda c: c["CLICK"] + 1)
    ),
    info_case("info.stats.ungrounded_steps", _set("stats.ungrounded_steps", 0)),
    info_case("info.stats.scroll_histogram", _set("stats.scroll_histogram.left", {"0.00-0.25": 3})),
    info_case("info.stats.target_rate", _set("stats.target_inside_eye_in_hand_rate", 0.99)),
    info_case("info.holdout_rule", _set("build.holdout_rule", DELETE), AGENT),
    info_case("info.heldout_ids", _set("heldout_ids.task_ids", [1]), WEBARENA_DIR),
    info_case("info.subsplits", _set("subsplits", {"IDD": {"episodes": 99, "steps": 1}})),
    shard_case("split.disjoint", copy_episode_id, (AGENT,)),
    Case("out.card", card_without_preview, (TASK, *OUTPUT_PARTS), output=True),
    Case("preview.parquet", truncate_preview, (TASK, *OUTPUT_PARTS), output=True),
    Case("cua_lite.layout", misplace_parquet, (TASK, *OUTPUT_PARTS), output=True),
    Case("cua_lite.images", corrupt_image, (TASK, *OUTPUT_PARTS), output=True),
]


def test_every_rule_has_its_case():
    assert sorted(c.rule for c in CASES) == sorted(RULES)


@pytest.mark.parametrize("case", CASES, ids=[c.rule for c in CASES])
def test_a_broken_rule_is_named(built, tmp_path, case):
    root = tmp_path / "out"
    root.mkdir()
    for part in case.copy:
        source = built / part
        (shutil.copytree if source.is_dir() else shutil.copy)(source, root / part)
    case.mutate(root)
    status, report = run_json(str(root if case.output else root / case.copy[0]))
    broken = broken_rules(report)
    assert status == 1 and case.rule in broken, broken
    if case.also is not None:
        assert broken <= {case.rule} | case.also, broken
    finding = next(f for t in report["targets"] for f in t["findings"] if f["rule"] == case.rule)
    assert finding["message"] and (finding["file"] or finding["demo"])


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (_set("build.upstream.files.0.revision", DELETE), "has no key revision"),
        (_set("build.upstream.files.0.sha256", DELETE), "has neither sha256 nor lfs_oid"),
    ],
    ids=["no revision", "no hash"],
)
def test_an_upstream_file_without_its_revision_or_hash_is_named(built, tmp_path, damage, message):
    """dataset_info.json lists each upstream file with its size, hash and its own revision."""
    root = tmp_path / M2W
    shutil.copytree(built / M2W, root)
    edit_info(damage)(tmp_path)
    status, report = run_json(str(root))
    messages = [f["message"] for t in report["targets"] for f in t["findings"] if f["rule"] == "info.keys"]
    assert status == 1 and broken_rules(report) == {"info.keys"}, report
    assert f"build.upstream.files[0] {message}" in messages, messages


def test_a_broken_rule_is_printed_with_where_it_broke(built, tmp_path):
    """The text report as a person reads it: rule id, file, demo, step and why; exit status 1."""
    root = tmp_path / M2W
    shutil.copytree(built / M2W, root)
    with h5py.File(root / f"{M2W}_0000.hdf5", "r+") as f:
        f["data/demo_2/action_desc"][0] = "scroll(up)"
    r = subprocess.run(
        [sys.executable, "-m", "gui_assets.validate", str(root)], capture_output=True, text=True
    )
    assert r.returncode == 1
    line = next(x for x in r.stdout.splitlines() if "[demo.scroll.desc]" in x)
    assert f"{M2W}_0000.hdf5 demo_2 step 0:" in line and "moves the view down" in line
    summary = r.stdout.splitlines()[-1]
    assert summary.startswith("summary: 1 directory; ") and "broken rules: demo.scroll.desc" in summary
