"""Pin what users select by: asset keys, groups, deps, partition keys, selections, code versions."""

from __future__ import annotations

import dagster as dg
import pytest

from gui_assets import defs
from gui_assets.defs.factory import build_source_defs
from gui_assets.sources import SOURCES
from gui_assets_tests.conftest import asset_keys

CHAIN = [
    "mind2web",
    "mind2web_episodes",
    "mind2web_splits",
    "mind2web_shards",
    "mind2web_dataset_info",
    "mind2web_upload",
]
PARTITIONS = {
    "mind2web": ["train", "test_task", "test_website", "test_domain"],
    "agentnet": ["win_mac", "ubuntu"],
    "weblinx": ["train", "valid"],
    "webarena": ["human"],
    "cuagym": ["browser_use", "desktop_use"],
    "pango": ["sample"],
}
EXPECTED_GRAPH = {
    key: parents
    for s in PARTITIONS
    for key, parents in {
        f"{s}_upstream": [],  # observed, not built: what the hub (or mirror) holds now
        s: [f"{s}_upstream"],
        f"{s}_episodes": [s],
        f"{s}_splits": [f"{s}_episodes"],
        f"{s}_shards": [f"{s}_splits"],
        f"{s}_dataset_info": [f"{s}_shards"],
        f"{s}_upload": [f"{s}_dataset_info"],
    }.items()
}
INFO_KEYS = sorted(f"{s}_dataset_info" for s in PARTITIONS)
REPO_LEVEL = {
    "preview": INFO_KEYS,
    "dataset_card": sorted(["preview", *INFO_KEYS]),
    "hub_card": ["dataset_card", "preview"],
    "cua_lite_export": INFO_KEYS,
}
EXPECTED_GRAPH.update(REPO_LEVEL)
EXPECTED_KINDS = {
    "mind2web": {"huggingface", "python"},
    "mind2web_episodes": {"parquet", "python"},
    "mind2web_splits": {"parquet", "python"},
    "mind2web_shards": {"hdf5", "python"},
    "mind2web_dataset_info": {"json", "python"},
    "mind2web_upload": {"huggingface", "python"},
}


def graph() -> dg.AssetGraph:
    return defs.resolve_asset_graph()


def test_definitions_load():
    dg.Definitions.validate_loadable(defs)


def test_the_switches_are_off_by_default():
    """Observing upstream and rebuilding on its moves are opt-in (Automation in the UI)."""
    sensors = {s.name: s.default_status for s in defs.sensors}
    assert sensors == {
        "run_failure_alerts": dg.DefaultSensorStatus.RUNNING,
        "observe_upstream": dg.DefaultSensorStatus.STOPPED,
        "upstream_auto_rebuild": dg.DefaultSensorStatus.STOPPED,
    }
    jobs = {j.name for j in defs.jobs}
    assert jobs == {f"{s}_observe_upstream" for s in PARTITIONS}


def test_asset_keys_and_deps_are_pinned():
    g = graph()
    got = {
        k.to_user_string(): sorted(p.to_user_string() for p in g.get(k).parent_keys)
        for k in g.get_all_asset_keys()
    }
    assert got == EXPECTED_GRAPH


def test_groups_partitions_kinds_owners_and_versions():
    g = graph()
    for key in CHAIN:
        node = g.get(dg.AssetKey(key))
        assert node.group_name == "mind2web"
        assert node.partitions_def.get_partition_keys() == [
            "train",
            "test_task",
            "test_website",
            "test_domain",
        ]
        assert node.code_version and len(node.code_version) == 16
        assert node.owners == ["team:gui_assets"]
        assert node.description
        assert {k.split("/")[-1] for k in node.tags if k.startswith("dagster/kind/")} == EXPECTED_KINDS[key]
        assert "dagster/code_references" in node.metadata
    # one PartitionsDefinition object for the whole chain: the CLI's --partition needs that
    assert len({id(g.get(dg.AssetKey(k)).partitions_def) for k in CHAIN}) == 1


@pytest.mark.parametrize(
    ("selection", "expected"),
    [
        # legacy `S*` is the chain and everything downstream: the repo-level publishing assets too
        ("mind2web*", set(CHAIN) | set(REPO_LEVEL)),
        ("group:mind2web", set(CHAIN)),
        ("group:publish", set(REPO_LEVEL)),
        ("mind2web_shards*", {"mind2web_shards", "mind2web_dataset_info", "mind2web_upload", *REPO_LEVEL}),
        ("*mind2web_splits", {"mind2web", "mind2web_episodes", "mind2web_splits"}),
        ("agentnet*", {k.replace("mind2web", "agentnet") for k in CHAIN} | set(REPO_LEVEL)),
        ("weblinx*", {k.replace("mind2web", "weblinx") for k in CHAIN} | set(REPO_LEVEL)),
        ("webarena*", {k.replace("mind2web", "webarena") for k in CHAIN} | set(REPO_LEVEL)),
        ("cuagym*", {k.replace("mind2web", "cuagym") for k in CHAIN} | set(REPO_LEVEL)),
        ("pango*", {k.replace("mind2web", "pango") for k in CHAIN} | set(REPO_LEVEL)),
    ],
)
def test_selection_strings_users_type(selection, expected):
    keys = dg.AssetSelection.from_string(selection).resolve(graph())
    assert {k.to_user_string() for k in keys} == expected


def test_every_source_spec_yields_exactly_its_chain_without_overlap():
    seen: set[str] = set()
    for spec in SOURCES:
        d = build_source_defs(spec)
        keys = {k.to_user_string() for a in d.assets for k in asset_keys(a)}
        assert keys == {
            f"{spec.name}_upstream",
            spec.name,
            *(f"{spec.name}_{s}" for s in ("episodes", "splits", "shards", "dataset_info", "upload")),
        }
        assert not keys & seen
        seen |= keys
