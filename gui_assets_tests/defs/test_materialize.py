"""Materializing the chain through Dagster: files, metadata, data versions, failures, hub mode."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from gui_assets.defs.resources import AlertsResource, BuildSettings, GuiAssetsPaths, HubResource
from gui_assets.sources.registry import SOURCES
from gui_assets_tests.conftest import clean_env, cli_materialize, source_definitions
from gui_assets_tests.defs.test_asset_graph import CHAIN
from gui_assets_tests.hub_server import LocalHub

ROOT = Path(__file__).resolve().parents[2]


def assets() -> list:
    return source_definitions("mind2web")  # the chain and its checks


def run(
    out: Path,
    partition: str,
    mirror: Path | None = None,
    source: str | None = None,
    instance: dg.DagsterInstance | None = None,
    **build,
) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        assets(),
        partition_key=partition,
        resources={
            "paths": GuiAssetsPaths(out=str(out), mirror=str(mirror) if mirror else None, source=source),
            "hub": HubResource(cache_dir=str(out / "hf_cache")),
            "build": BuildSettings(**build),
            "alerts": AlertsResource(),
        },
        instance=instance,
        raise_on_error=False,
    )


def metadata(result: dg.ExecuteInProcessResult, key: str) -> dict:
    (mat,) = result.asset_materializations_for_node(key)
    return {k: v.value for k, v in mat.metadata.items()}


def test_chain_materializes_one_partition_with_metadata(tmp_path, demo_mirror):
    with dg.instance_for_test() as instance:
        result = run(tmp_path, "test_task", demo_mirror, instance=instance)
        assert result.success
        raw = metadata(result, "mind2web")
        assert raw["files"] == 1 and raw["mode"] == "mirror" and raw["revision"].startswith("mirror-")
        ep = metadata(result, "mind2web_episodes")
        assert ep["episodes_out"] == 2 and ep["drops"] == {}
        sh = metadata(result, "mind2web_shards")
        assert sh["shards"] == 1 and sh["demos"] == 2 and sh["steps"] == ep["steps"]
        info = metadata(result, "mind2web_dataset_info")
        assert Path(info["path"]) == tmp_path / "mind2web_test_task" / "dataset_info.json"
        on_disk = json.loads(Path(info["path"]).read_text())
        assert on_disk["stats"]["steps"] == sh["steps"] and on_disk["split"] == "test_task"
        # one revision and one meaning of demo_mirror, whoever reports them
        assert on_disk["build"]["upstream"]["revision"] == raw["revision"] == info["revision"]
        assert on_disk["build"]["demo_mirror"] is raw["demo_mirror"] is info["demo_mirror"] is True
        versions = _data_versions(result)
        assert set(versions) == set(CHAIN)
        for key in CHAIN:  # the instance records what the run reported, per partition
            rec = instance.get_latest_data_version_record(dg.AssetKey(key), partition_key="test_task")
            assert rec is not None and rec.asset_materialization.tags["dagster/data_version"] == versions[key]
        manifest = tmp_path / "_work" / "mind2web_test_task" / "shards.json"
        before = json.loads(manifest.read_text())
        again = run(tmp_path, "test_task", demo_mirror, instance=instance)
        assert again.success
        # nothing changed: same data versions (if the shards' differs, say which shard entry did)
        assert _data_versions(again) == versions, (before, json.loads(manifest.read_text()))


def _data_versions(result: dg.ExecuteInProcessResult) -> dict[str, str]:
    out = {}
    for ev in result.get_asset_materialization_events():
        mat = ev.event_specific_data.materialization
        out[mat.asset_key.to_user_string()] = mat.tags["dagster/data_version"]
    return out


def test_a_byte_changing_knob_changes_the_shards_data_version(tmp_path, demo_mirror):
    a = _data_versions(run(tmp_path / "a", "test_domain", demo_mirror))
    b = _data_versions(run(tmp_path / "b", "test_domain", demo_mirror, libdeflate_level=1))
    assert a["mind2web_episodes"] == b["mind2web_episodes"]
    assert a["mind2web_shards"] != b["mind2web_shards"]


def test_a_missing_mirror_fails_the_partition_naming_it(tmp_path):
    result = run(tmp_path, "train", tmp_path / "nowhere")
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type == dg.DagsterEventType.STEP_FAILURE)
    assert "mirror has no osunlp/Multimodal-Mind2Web" in str(failure.event_specific_data.error)
    assert not (tmp_path / "mind2web_train").exists()


def test_hub_mode_through_dagster_against_a_localhost_hub(tmp_path, demo_mirror, monkeypatch):
    token = "hf_dagster_secret_token_0000"
    monkeypatch.setenv("HF_TOKEN", token)
    with LocalHub(demo_mirror) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        result = run(tmp_path, "test_task", source="hub")
        assert result.success
        repo_requests = [r for r in hub.state.requests if "osunlp/Multimodal-Mind2Web" in r.path]
        assert repo_requests and all(r.authorized for r in repo_requests)  # HF_TOKEN reached the hub
    raw = metadata(result, "mind2web")
    assert raw["mode"] == "hub" and raw["revision"] == hub.state.commit
    info = json.loads((tmp_path / "mind2web_test_task" / "dataset_info.json").read_text())
    assert info["build"]["upstream"]["revision"] == hub.state.commit
    everything = json.dumps([str(e) for e in result.all_events])
    assert token not in everything


def users_command(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """`dagster asset materialize <args>` with no -m, as typed after the README's set-up (the venv's
    activate script exports DAGSTER_CLI_ASSET_MATERIALIZE_MODULE_NAME), nothing else set."""
    dagster = Path(sys.executable).parent / "dagster"
    env = clean_env(DAGSTER_CLI_ASSET_MATERIALIZE_MODULE_NAME="gui_assets")
    return subprocess.run(
        [str(dagster), "asset", "materialize", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_readme_shows_the_demo_command_and_the_materialize_command_with_and_without_the_module():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert ".venv/bin/activate" not in readme.replace(". .venv/bin/activate", "")  # no edited activate script
    demo = next(
        line for line in readme.splitlines() if line.startswith("python3 -m venv") and "[fast]" in line
    )
    assert demo.endswith("&& gui-assets demo")
    assert "dagster asset materialize -m gui_assets --select 'mind2web*' --partition train" in readme
    assert "export DAGSTER_CLI_ASSET_MATERIALIZE_MODULE_NAME=gui_assets" in readme
    assert "dagster asset materialize --select 'mind2web*' --partition train" in readme


@pytest.mark.slow
def test_without_a_partition_dagster_refuses_before_anything_runs(tmp_path):
    """The location reads no command line: Dagster's own check answers, and nothing is built."""
    r = users_command(["--select", "mind2web*"], tmp_path)
    assert r.returncode != 0 and "no '--partition' option was provided" in r.stderr
    assert not (tmp_path / "build").exists()


def test_each_root_asset_names_its_chains_partitions():
    """Where Dagster shows an asset (the UI, `dg list defs`), the keys `--partition` takes."""
    from gui_assets.definitions import defs

    for spec in SOURCES:
        description = defs.resolve_assets_def(spec.name).descriptions_by_key[dg.AssetKey(spec.name)]
        assert f"(`--partition KEY`): {', '.join(spec.partition_keys)}." in description


@pytest.mark.slow
def test_the_readme_cli_command_builds_the_demo(tmp_path):
    """`dagster asset materialize --select 'mind2web*' --partition train` as typed after the set-up,
    with nothing else set: the demo mirror is generated under the build's work folder and used."""
    r = users_command(["--select", "mind2web*", "--partition", "train"], tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "RUN_SUCCESS" in r.stderr + r.stdout
    d = tmp_path / "build" / "mind2web_train"
    assert (d / "mind2web_train_0000.hdf5").is_file() and (d / "dataset_info.json").is_file()
    assert json.loads((d / "dataset_info.json").read_text())["build"]["demo_mirror"] is True
    assert (tmp_path / "build" / "_work" / "demo_mirror" / "osunlp" / "Multimodal-Mind2Web" / "data").is_dir()
    v = subprocess.run(
        [sys.executable, "-m", "gui_assets.validate", str(tmp_path / "build")], capture_output=True, text=True
    )
    assert v.returncode == 0, v.stdout + v.stderr


@pytest.mark.slow
def test_an_unknown_partition_is_refused_by_the_cli(tmp_path):
    r = cli_materialize("validation", tmp_path, clean_env())
    assert r.returncode != 0
    assert "validation" in r.stderr


@pytest.mark.slow
def test_the_agentnet_cli_command_builds_train_and_val_shards(tmp_path, demo_mirror):
    """`dagster asset materialize -m gui_assets --select 'agentnet*' --partition ubuntu`."""
    r = cli_materialize("ubuntu", tmp_path, clean_env(GUI_ASSETS_MIRROR=str(demo_mirror)), source="agentnet")
    assert r.returncode == 0, r.stderr[-3000:]
    d = tmp_path / "build" / "agentnet_ubuntu"
    assert sorted(p.name for p in d.iterdir()) == [
        "agentnet_ubuntu_0000.hdf5",
        "agentnet_ubuntu_val_0000.hdf5",
        "dataset_info.json",
    ]
    info = json.loads((d / "dataset_info.json").read_text())
    assert info["build"]["holdout_rule"]["val_episodes"] == 1 and len(info["val_shards"]) == 1
    assert "ASSET_CHECK_EVALUATION" in r.stderr and "split_disjointness" in r.stderr


@pytest.mark.slow
def test_the_weblinx_cli_command_builds_valid(tmp_path, demo_mirror):
    """`dagster asset materialize -m gui_assets --select 'weblinx*' --partition valid`."""
    r = cli_materialize("valid", tmp_path, clean_env(GUI_ASSETS_MIRROR=str(demo_mirror)), source="weblinx")
    assert r.returncode == 0, r.stderr[-3000:]
    d = tmp_path / "build" / "weblinx_valid"
    info = json.loads((d / "dataset_info.json").read_text())
    shards = [s["file"] for s in info["shards"]]  # one per frame size: the demos' viewports differ
    assert shards == [f"weblinx_valid_{i:04d}.hdf5" for i in range(len(shards))]
    assert sorted(p.name for p in d.iterdir()) == ["dataset_info.json", *shards]
    assert info["stats"]["episodes_out"] == 2 and info["split"] == "valid"


@pytest.mark.slow
def test_the_webarena_cli_command_builds_human(tmp_path, demo_mirror):
    """`dagster asset materialize -m gui_assets --select 'webarena*' --partition human`."""
    r = cli_materialize("human", tmp_path, clean_env(GUI_ASSETS_MIRROR=str(demo_mirror)), source="webarena")
    assert r.returncode == 0, r.stderr[-3000:]
    info = json.loads((tmp_path / "build" / "webarena_human" / "dataset_info.json").read_text())
    assert info["heldout_ids"] == {"task_ids": [274, 275], "intent_template_ids": [212]}
    assert "usb wifi" not in r.stdout + r.stderr  # typed values are data, never logged


@pytest.mark.slow
def test_the_cuagym_cli_command_builds_desktop_use(tmp_path, demo_mirror):
    """`--select 'cuagym*' --partition desktop_use`. Pango's `--select 'pango*' --partition sample`
    is the run test_run_summary reads its summary from."""
    env = clean_env(GUI_ASSETS_MIRROR=str(demo_mirror))
    r = cli_materialize("desktop_use", tmp_path, env, source="cuagym")
    assert r.returncode == 0, r.stderr[-3000:]
    d = tmp_path / "build" / "cuagym_desktop_use"
    info = json.loads((d / "dataset_info.json").read_text())
    assert info["stats"]["episodes_out"] >= 3 and (d / "cuagym_desktop_use_0000.hdf5").is_file()
