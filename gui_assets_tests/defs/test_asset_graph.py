"""Pin what users select by: asset keys, groups, deps, partition keys, selections, code versions.

Two layers. The six real sources' public names (source names, partition keys, the Mind2Web chain)
are pinned literally: users type them, so renaming one must fail here. The structure every
registered source gets (its chain, its partitions on every asset, its checks, its kinds, its
observing job, its selections) is derived from the registry, so a new source is checked the
same way without this file changing.
"""

from __future__ import annotations

import itertools

import dagster as dg
import pytest

from gui_assets.definitions import defs
from gui_assets.defs.factory import build_source_defs
from gui_assets.sources.registry import SOURCES
from gui_assets.sources.spec import SourceSpec
from gui_assets_tests.conftest import asset_keys

CHAIN = [
    "mind2web",
    "mind2web_episodes",
    "mind2web_splits",
    "mind2web_shards",
    "mind2web_dataset_info",
    "mind2web_upload",
]
# Literal on purpose: what users select by (`--select 'agentnet*' --partition ubuntu`).
PARTITIONS = {
    "mind2web": ["train", "test_task", "test_website", "test_domain"],
    "agentnet": ["win_mac", "ubuntu"],
    "weblinx": ["train", "valid"],
    "webarena": ["human"],
    "cuagym": ["browser_use", "desktop_use"],
    "pango": ["sample"],
}
STAGES = ("episodes", "splits", "shards", "dataset_info", "upload")
KINDS = {
    "": {"huggingface", "python"},
    "_episodes": {"parquet", "python"},
    "_splits": {"parquet", "python"},
    "_shards": {"hdf5", "python"},
    "_dataset_info": {"json", "python"},
    "_upload": {"huggingface", "python"},
}
CHECKS = {
    "_shards": ["action_mask", "alignment_leakage", "causal_cursor", "scroll_histogram"],
    "_splits": ["split_disjointness"],
    "_dataset_info": ["shard_integrity"],
}
NAMES = [s.name for s in SOURCES]


def chain(source: str) -> list[str]:
    return [source, *(f"{source}_{stage}" for stage in STAGES)]


def expected_graph() -> dict[str, list[str]]:
    """Every registered source's chain behind its observed upstream, then the publishing assets."""
    graph = {}
    for s in NAMES:
        keys = [f"{s}_upstream", *chain(s)]  # upstream: observed, not built (what the hub holds now)
        graph[keys[0]] = []
        graph.update({key: [parent] for parent, key in itertools.pairwise(keys)})
        # an asset depends on everything it reads, not only its predecessor: the shards read the
        # IR, dataset_info the raw manifest, the drop counts and the split table
        graph[f"{s}_shards"] = sorted([f"{s}_episodes", f"{s}_splits"])
        graph[f"{s}_dataset_info"] = sorted([s, f"{s}_episodes", f"{s}_shards", f"{s}_splits"])
    graph.update(repo_level_deps(sorted(NAMES)))
    return graph


def repo_level_deps(sources: list[str]) -> dict[str, list[str]]:
    """The publishing assets and what they read: every source's dataset_info (and the cua-lite
    and LeRobot exports every source's IR)."""
    infos = [f"{s}_dataset_info" for s in sources]
    return {
        "preview": infos,
        "screen_overlap": infos,
        "dataset_card": sorted(["preview", "screen_overlap", *infos]),
        "hub_card": ["dataset_card", "preview", "screen_overlap"],
        "cua_lite_export": sorted([*infos, *(f"{s}_episodes" for s in sources)]),
        "lerobot_export": sorted([*infos, *(f"{s}_episodes" for s in sources)]),
        "hub_lerobot": ["lerobot_export"],
    }


REPO_LEVEL = set(repo_level_deps([]))


def graph() -> dg.AssetGraph:
    return defs.resolve_asset_graph()


def test_definitions_load():
    dg.Definitions.validate_loadable(defs)


def test_the_six_sources_and_their_partition_keys_are_pinned():
    """A renamed source or partition key breaks every user's selection: it fails here."""
    registered = {s.name: list(s.partition_keys) for s in SOURCES}
    assert {name: registered.get(name) for name in PARTITIONS} == PARTITIONS
    g = graph()
    for name, keys in PARTITIONS.items():
        assert g.get(dg.AssetKey(name)).partitions_def.get_partition_keys() == keys


def test_the_switches_are_off_by_default():
    """Observing upstream and rebuilding on its moves are opt-in (Automation in the UI)."""
    sensors = {s.name: s.default_status for s in defs.sensors}
    assert sensors == {
        "run_failure_alerts": dg.DefaultSensorStatus.RUNNING,
        "observe_upstream": dg.DefaultSensorStatus.STOPPED,
        "upstream_auto_rebuild": dg.DefaultSensorStatus.STOPPED,
    }
    jobs = {j.name for j in defs.jobs}
    assert jobs == {f"{s}_observe_upstream" for s in NAMES}
    assert {f"{s}_observe_upstream" for s in PARTITIONS} <= jobs


def test_asset_keys_and_deps_are_pinned():
    g = graph()
    got = {
        k.to_user_string(): sorted(p.to_user_string() for p in g.get(k).parent_keys)
        for k in g.get_all_asset_keys()
    }
    assert got == expected_graph()
    assert set(CHAIN) <= set(got) and all(f"{s}_upload" in got for s in PARTITIONS)


@pytest.mark.parametrize("spec", SOURCES, ids=NAMES)
def test_groups_partitions_kinds_owners_and_versions(spec: SourceSpec):
    g = graph()
    for key in chain(spec.name):
        node = g.get(dg.AssetKey(key))
        assert node.group_name == spec.name
        assert node.partitions_def.get_partition_keys() == list(spec.partition_keys)
        assert node.code_version and len(node.code_version) == 16
        assert node.owners == ["team:gui_assets"]
        assert node.description
        kinds = {k.split("/")[-1] for k in node.tags if k.startswith("dagster/kind/")}
        assert kinds == KINDS[key.removeprefix(spec.name)]
        assert "dagster/code_references" in node.metadata
    # one PartitionsDefinition object for the whole chain: the CLI's --partition needs that
    assert len({id(g.get(dg.AssetKey(k)).partitions_def) for k in chain(spec.name)}) == 1


@pytest.mark.parametrize("spec", SOURCES, ids=NAMES)
def test_each_source_has_its_six_checks_on_the_assets_they_judge(spec: SourceSpec):
    checks: dict[str, list[str]] = {}
    for c in defs.asset_checks or []:
        for key in c.check_keys:
            asset = key.asset_key.to_user_string()
            if asset.startswith(spec.name) and asset.removeprefix(spec.name) in CHECKS:
                checks.setdefault(asset.removeprefix(spec.name), []).append(key.name)
    assert {k: sorted(v) for k, v in checks.items()} == CHECKS


@pytest.mark.parametrize(
    ("selection", "expected"),
    [
        # legacy `S*` is the chain and everything downstream: the repo-level publishing assets too
        ("mind2web*", set(CHAIN) | REPO_LEVEL),
        ("group:mind2web", set(CHAIN)),
        ("group:publish", REPO_LEVEL),
        ("mind2web_shards*", {"mind2web_shards", "mind2web_dataset_info", "mind2web_upload", *REPO_LEVEL}),
        ("*mind2web_splits", {"mind2web", "mind2web_episodes", "mind2web_splits"}),
        *((f"{s}*", set(chain(s)) | REPO_LEVEL) for s in PARTITIONS),
    ],
)
def test_selection_strings_users_type(selection, expected):
    keys = dg.AssetSelection.from_string(selection).resolve(graph())
    assert {k.to_user_string() for k in keys} == expected


@pytest.mark.parametrize("spec", SOURCES, ids=NAMES)
def test_each_registered_source_is_selected_by_its_name_and_group(spec: SourceSpec):
    own = set(chain(spec.name))
    for selection, expected in ((f"{spec.name}*", own | REPO_LEVEL), (f"group:{spec.name}", own)):
        keys = dg.AssetSelection.from_string(selection).resolve(graph())
        assert {k.to_user_string() for k in keys} == expected


def test_every_source_spec_yields_exactly_its_chain_without_overlap():
    seen: set[str] = set()
    for spec in SOURCES:
        d = build_source_defs(spec)
        keys = {k.to_user_string() for a in d.assets for k in asset_keys(a)}
        assert keys == {f"{spec.name}_upstream", *chain(spec.name)}
        assert not keys & seen
        seen |= keys


@pytest.mark.parametrize("spec", SOURCES, ids=NAMES)
def test_the_observable_upstream_asset_has_kinds_like_the_chain(spec: SourceSpec):
    node = graph().get(dg.AssetKey(f"{spec.name}_upstream"))
    kinds = {k.split("/")[-1] for k in node.tags if k.startswith("dagster/kind/")}
    assert kinds == ({"filesystem", "python"} if spec.not_on_hub else {"huggingface", "python"})
    if spec.name == "webarena":  # its human traces are mirrored by hand, never read from the hub
        assert "filesystem" in kinds
    assert node.group_name == spec.name and node.is_observable
