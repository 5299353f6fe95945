"""Upstream observed: against a local hub server, a new commit touching one partition's files
marks that partition, and only it, stale; a commit touching nothing of it marks nothing; the
opt-in automation rebuilds exactly the affected partition."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import pyarrow.parquet as pq
import pytest
from dagster._core.asset_graph_view.asset_graph_view import AssetGraphView
from dagster._core.definitions.data_version import CachingStaleStatusResolver

from gui_assets.defs.location import build_definitions
from gui_assets.defs.resources import AlertsResource, BuildSettings, GuiAssetsPaths, HubResource
from gui_assets.defs.upstream_assets import observe_job_name
from gui_assets.sources.mind2web.source import SPEC as MIND2WEB
from gui_assets_tests.hub_server import LocalHub

REPO = MIND2WEB.repo_id
KEYS = list(MIND2WEB.partition_keys)
CHAIN = ["mind2web", "mind2web_episodes", "mind2web_splits", "mind2web_shards", "mind2web_dataset_info"]


def statuses(defs: dg.Definitions, instance: dg.DagsterInstance, key: str) -> dict[str, str]:
    resolver = CachingStaleStatusResolver(
        instance=instance,
        asset_graph=defs.resolve_asset_graph(),
        loading_context=AssetGraphView.for_test(defs, instance),
    )
    return {p: resolver.get_status(dg.AssetKey(key), p).value for p in KEYS}


@pytest.fixture
def hub(tmp_path: Path, demo_mirror: Path):
    root = tmp_path / "hub"
    shutil.copytree(demo_mirror / REPO, root / REPO)
    with LocalHub(root) as server:
        yield server


@pytest.fixture
def defs(tmp_path: Path, hub: LocalHub) -> dg.Definitions:
    return mind2web_defs(
        GuiAssetsPaths(out=str(tmp_path / "out"), source="hub"),
        HubResource(endpoint=hub.endpoint, cache_dir=str(tmp_path / "hf-cache")),
    )


def mind2web_defs(paths: GuiAssetsPaths, hub: HubResource) -> dg.Definitions:
    """The Mind2Web chain, its checks, its observation job and the sensors, loaded anew (a code
    edit is a new load), on these resources."""
    located = build_definitions([MIND2WEB])
    resources = {"paths": paths, "hub": hub, "build": BuildSettings(), "alerts": AlertsResource()}
    return dg.Definitions(
        assets=located.assets,
        asset_checks=located.asset_checks,
        jobs=located.jobs,
        sensors=located.sensors,
        resources=resources,
    )


def observe(defs: dg.Definitions, instance: dg.DagsterInstance) -> None:
    assert defs.resolve_job_def(observe_job_name(MIND2WEB)).execute_in_process(instance=instance).success


def build(defs: dg.Definitions, instance: dg.DagsterInstance, key: str, keys: list[str] = CHAIN) -> None:
    job = defs.resolve_implicit_global_asset_job_def()
    selection = [dg.AssetKey(k) for k in keys]
    assert job.execute_in_process(instance=instance, partition_key=key, asset_selection=selection).success


def commit(hub: LocalHub, n: int) -> None:
    hub.state.commit = f"{n:040x}"


@pytest.mark.slow
def test_a_commit_marks_exactly_the_partitions_whose_files_it_touched(defs, hub, tmp_path):
    with dg.instance_for_test() as instance:
        observe(defs, instance)
        for key in KEYS:
            build(defs, instance, key)
        assert statuses(defs, instance, "mind2web") == dict.fromkeys(KEYS, "FRESH")

        # A commit that touches none of the partitions' files: nothing moves.
        (hub.state.root / REPO / "README.md").write_text("a new card\n")
        commit(hub, 1)
        observe(defs, instance)
        assert statuses(defs, instance, "mind2web") == dict.fromkeys(KEYS, "FRESH")

        # A commit that rewrites test_task's parquet file: test_task, and only it.
        (path,) = (hub.state.root / REPO / "data").glob("test_task-*.parquet")
        table = pq.read_table(path)
        pq.write_table(table.slice(0, table.num_rows - 1), path)
        commit(hub, 2)
        observe(defs, instance)
        want = {k: "STALE" if k == "test_task" else "FRESH" for k in KEYS}
        assert statuses(defs, instance, "mind2web") == want

        # Rebuilding the raw asset records the new files: its data version moves, so the next
        # stage of that partition, and only it, is stale until it is rebuilt in turn.
        build(defs, instance, "test_task", ["mind2web"])
        assert statuses(defs, instance, "mind2web") == dict.fromkeys(KEYS, "FRESH")
        assert statuses(defs, instance, "mind2web_episodes") == want


@pytest.mark.slow
def test_the_opt_in_automation_rebuilds_the_partition_whose_upstream_moved(defs, hub):
    with dg.instance_for_test() as instance:
        observe(defs, instance)
        for key in KEYS:
            build(defs, instance, key)
        evaluated = dg.evaluate_automation_conditions(defs=defs, instance=instance)
        assert evaluated.total_requested == 0
        observe(defs, instance)  # the same files: nothing to do
        evaluated = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=evaluated.cursor)
        assert evaluated.total_requested == 0

        (path,) = (hub.state.root / REPO / "data").glob("test_domain-*.parquet")
        table = pq.read_table(path)
        pq.write_table(table.slice(1), path)
        commit(hub, 3)
        observe(defs, instance)
        evaluated = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=evaluated.cursor)
        requested = {k: set(evaluated.get_requested_partitions(dg.AssetKey(k))) for k in CHAIN}
        assert requested == {k: {"test_domain"} for k in CHAIN}
        build(defs, instance, "test_domain")  # what the sensor launches: the requested chain, one run
        assert statuses(defs, instance, "mind2web") == dict.fromkeys(KEYS, "FRESH")
        evaluated = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=evaluated.cursor)
        assert evaluated.total_requested == 0


def test_the_raw_asset_records_what_the_observation_reports(defs, hub):
    """The observation and the raw asset agree on the version of the same files, whatever
    the commit: that is what lets an unchanged partition stay fresh."""
    with dg.instance_for_test() as instance:
        observe(defs, instance)
        build(defs, instance, "train", ["mind2web"])
        observed = instance.fetch_observations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey("mind2web_upstream"), asset_partitions=["train"]),
            limit=1,
        ).records[0]
        built = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey("mind2web"), asset_partitions=["train"]), limit=1
        ).records[0]
        assert (
            observed.asset_observation.data_version
            == built.asset_materialization.tags["dagster/data_version"]
        )
