"""A seventh source declared inside this test: an adapter function, a demo generator and a
SourceSpec, nothing else edited, gets its demo mirror, its whole chain, its six checks, its row
in the card and in the preview, and its cua-lite export. (test_new_source.py adds one to the
registry itself, in a copy of the project.)"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pyarrow.parquet as pq

from gui_assets.core.drops import Drop, DropReason
from gui_assets.core.ir import POINT_MASK, ActionType, GuiEpisode, SourceRef, step_builder
from gui_assets.core.layout import DatasetInfo
from gui_assets.core.splits import shipped_split
from gui_assets.defs.location import build_definitions
from gui_assets.defs.resources import AlertsResource, BuildSettings, GuiAssetsPaths, HubResource
from gui_assets.sources.assembly import AdapterRun, Steps
from gui_assets.sources.demo_mirror import ensure_demo_mirror
from gui_assets.sources.spec import SourceSpec
from gui_assets_tests.conftest import asset_keys, page_bytes

REPO = "toy-org/toy-repo"


def toy_episodes(run: AdapterRun) -> Iterator[GuiEpisode]:
    """`data/<key>.jsonl`: one episode per line, {id, instruction, steps: [{image, click}]};
    screenshots under `images/`.

    Drop reasons:
        malformed_json            a line that is not JSON
        missing_screenshot        a step whose image is not there
        empty_episode             a line none of whose steps survived
    """
    (lines,) = run.raw.find("data/*.jsonl")
    for row_no, line in run.candidates(enumerate(Path(lines.local).read_text().splitlines())):
        try:
            rec = json.loads(line)
        except ValueError:
            run.drop(DropReason.MALFORMED_JSON)
            continue
        steps = Steps()
        for i, s in enumerate(rec["steps"]):
            try:
                image = run.raw.root / "images" / s["image"]
                if not image.is_file():
                    raise Drop(DropReason.MISSING_SCREENSHOT, s["image"])
                obs = run.observe(image.read_bytes())
            except Drop as e:
                run.drop(e.reason)
                continue
            ref = SourceRef(run.raw.repo_id, lines.path, row=row_no, member=f"steps[{i}]")
            steps.add(step_builder(obs, ref)(ActionType.CLICK, tuple(s["click"]), POINT_MASK))
        episode = run.episode(rec["id"], rec["instruction"], steps, True, {"toy_id": rec["id"]})
        if episode is not None:
            yield episode


def write_mirror(root: Path) -> Path:
    repo = root / REPO
    (repo / "images").mkdir(parents=True)
    (repo / "data").mkdir()
    for i in range(3):
        (repo / "images" / f"s{i}.png").write_bytes(page_bytes(640, 480, seed=i))
    clicks = [[0.2, 0.3], [0.8, 0.7], [0.2, 0.75]]
    lines = [
        {
            "id": "e1",
            "instruction": "click around",
            "steps": [{"image": f"s{i}.png", "click": c} for i, c in enumerate(clicks)],
        },
        {
            "id": "e2",
            "instruction": "click twice",
            "steps": [{"image": "s2.png", "click": [0.7, 0.2]}, {"image": "nope.png", "click": [0.1, 0.1]}],
        },
        {"id": "e3", "instruction": "nothing", "steps": [{"image": "nope.png", "click": [0.5, 0.5]}]},
    ]
    (repo / "data" / "alpha.jsonl").write_text("\n".join([*map(json.dumps, lines), "{not json"]) + "\n")
    return repo


TOY = SourceSpec(
    name="toy",
    repo_id=REPO,
    partition_keys=("alpha",),
    file_patterns=lambda key: [f"data/{key}.jsonl", "images/"],
    adapter=toy_episodes,
    split_rule=shipped_split,
    description="A toy source declared in a test.",
    license="mit",
    platform="desktop",
    scrolls=False,
    notes="Toy demonstrations, clicks only.",
    demo=write_mirror,
)


def test_a_seventh_source_gets_its_chain_checks_card_row_preview_and_cua_lite_export(tmp_path):
    mirror = ensure_demo_mirror(tmp_path / "mirror", [TOY])
    out = tmp_path / "out"
    defs = build_definitions([TOY])
    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert {
        "toy_upstream",
        "toy",
        "toy_episodes",
        "toy_splits",
        "toy_shards",
        "toy_dataset_info",
        "toy_upload",
    } <= keys
    resources = {
        "paths": GuiAssetsPaths(out=str(out), mirror=str(mirror)),
        "hub": HubResource(),
        "build": BuildSettings(preview_count=10),
        "alerts": AlertsResource(),
    }
    chain = [a for a in defs.assets if all(k.path[0].startswith("toy") for k in asset_keys(a))]
    with dg.instance_for_test() as instance:
        result = dg.materialize(
            [*chain, *defs.asset_checks], partition_key="alpha", resources=resources, instance=instance
        )
        assert result.success
        checks = result.get_asset_check_evaluations()
        assert sorted(c.check_name for c in checks) == [
            "action_mask",
            "alignment_leakage",
            "causal_cursor",
            "scroll_histogram",
            "shard_integrity",
            "split_disjointness",
        ]
        assert all(c.passed for c in checks), [(c.check_name, c.metadata.get("summary")) for c in checks]
        publish = [a for a in defs.assets if a not in chain]
        assert dg.materialize(publish, resources=resources, instance=instance).success

    info = DatasetInfo.read(out / "toy_alpha" / "dataset_info.json")
    assert info.build["demo_mirror"] is True  # its part of a generated demo mirror: never published
    assert info.stats["episodes_in"] == 4 and info.stats["episodes_out"] == 2 and info.stats["steps"] == 4
    assert info.stats["drops"] == {"empty_episode": 1, "malformed_json": 1, "missing_screenshot": 2}
    assert info.stats["drops_by_unit"] == {
        "episode": {"empty_episode": 1},
        "record": {"malformed_json": 1},
        "step": {"missing_screenshot": 2},
    }
    assert info.source_record["platform"] == "desktop" and info.source_record["license"] == "mit"
    card = (out / "README.md").read_text()
    assert "| toy_alpha/ | toy | desktop | 2 | 4 | 1 |" in card
    assert f"| toy | `{REPO}` | mit |" in card and "Toy demonstrations, clicks only." in card
    preview = pq.read_table(next((out / "preview").glob("*.parquet"))).to_pylist()
    assert {r["directory"] for r in preview} == {"toy_alpha"}
    export = out / "cua_lite" / "cua-lite" / "GuiAgent" / "desktop" / "use" / "train" / "toy_alpha.parquet"
    rows = pq.read_table(export).to_pylist()
    assert len(rows) == 2 and json.loads(rows[0]["metadata"])["dims"] == ["desktop", "use"]
