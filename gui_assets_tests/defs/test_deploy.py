"""The shipped deployment settings: executors by name, Helm values, instance configs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from gui_assets.defs.executors import EXECUTORS, executor_from_env

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", EXECUTORS)
def test_every_named_executor_loads(name, monkeypatch):
    monkeypatch.setenv("GUI_ASSETS_EXECUTOR", name)
    monkeypatch.setenv("GUI_ASSETS_CELERY_BROKER", "redis://127.0.0.1:1/0")
    assert executor_from_env().name == name


def test_an_unknown_executor_is_refused_by_name(monkeypatch):
    monkeypatch.setenv("GUI_ASSETS_EXECUTOR", "spark")
    with pytest.raises(ValueError, match="GUI_ASSETS_EXECUTOR must be one of"):
        executor_from_env()


def test_helm_values_run_this_code_location_with_the_k8s_executor():
    values = yaml.safe_load((REPO / "deploy" / "helm" / "values.yaml").read_text())
    (deployment,) = values["dagster-user-deployments"]["deployments"]
    assert deployment["dagsterApiGrpcArgs"] == ["-m", "gui_assets.definitions"]
    env = {e["name"]: e["value"] for e in deployment["env"]}
    assert env["GUI_ASSETS_EXECUTOR"] == "k8s" and env["GUI_ASSETS_OUT"].startswith("/data")
    assert values["runLauncher"]["type"] == "K8sRunLauncher"
    limits = values["dagsterDaemon"]["runCoordinator"]["config"]["queuedRunCoordinator"][
        "tagConcurrencyLimits"
    ]
    assert limits[0]["key"] == "gui_assets/source" and limits[0]["limit"] == 1


def test_shard_units_ask_kubernetes_for_two_cores():
    from gui_assets.definitions import defs

    job = defs.resolve_implicit_global_asset_job_def()
    unit = next(d for d in job.all_node_defs if d.name == "mind2web_write_shard_unit")
    config = json.loads(unit.tags["dagster-k8s/config"])
    assert config["container_config"]["resources"]["requests"]["cpu"] == "2"


def test_instance_configs_are_valid_dagster_yaml():
    from dagster._core.instance.config import dagster_instance_config

    for path in (REPO / "dagster.yaml", REPO / "deploy" / "dagster-postgres.yaml"):
        config, _ = dagster_instance_config(str(path.parent), config_filename=path.name)
        runs = config["concurrency"]["runs"]
        assert runs["tag_concurrency_limits"][0]["key"] == "gui_assets/source", path
