"""The six checks through Dagster: per partition, blocking leakage, alerts from CLI and UI runs."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest

from gui_assets.checks.alerts import ALERTS_FILE
from gui_assets.defs.resources import AlertsResource, BuildSettings, GuiAssetsPaths, HubResource
from gui_assets.defs.sensors import run_failure_alerts
from gui_assets_tests.conftest import clean_env, cli_materialize, m2w_row, page_bytes, source_definitions
from gui_assets_tests.webhook_server import WebhookReceiver

CHECKS = {
    ("mind2web_shards", "alignment_leakage"),
    ("mind2web_shards", "causal_cursor"),
    ("mind2web_shards", "action_mask"),
    ("mind2web_shards", "scroll_histogram"),
    ("mind2web_splits", "split_disjointness"),
    ("mind2web_dataset_info", "shard_integrity"),
}


def materialize(
    out: Path,
    partition: str,
    mirror: Path,
    webhook: str | None = None,
    instance: dg.DagsterInstance | None = None,
) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        source_definitions("mind2web"),
        partition_key=partition,
        resources={
            "paths": GuiAssetsPaths(out=str(out), mirror=str(mirror)),
            "hub": HubResource(),
            "build": BuildSettings(),
            "alerts": AlertsResource(webhook=webhook, backoff_s=0.01),
        },
        instance=instance,
        raise_on_error=False,
    )


def evaluations(result: dg.ExecuteInProcessResult) -> dict[tuple[str, str], dg.AssetCheckEvaluation]:
    return {(e.asset_key.to_user_string(), e.check_name): e for e in result.get_asset_check_evaluations()}


def same_element_mirror(write_m2w, clicks_per_task: int = 5, tasks: int = 3) -> Path:
    """Every action of a task clicks the element the previous one clicked."""
    shot = page_bytes(seed=4)
    rows = [
        m2w_row(f"task-{t}", str(i), rect="900,600,160,44", screenshot=shot)
        for t in range(tasks)
        for i in range(clicks_per_task)
    ]
    return write_m2w([rows])


def test_the_six_checks_pass_on_the_demo_with_their_figures(tmp_path, demo_mirror):
    result = materialize(tmp_path, "train", demo_mirror)
    assert result.success
    ev = evaluations(result)
    assert set(ev) == CHECKS
    for key, e in ev.items():
        assert e.passed, (key, e.description)
        assert e.partition == "train"
    leak = ev[("mind2web_shards", "alignment_leakage")].metadata
    assert {"target_inside_eye_in_hand_rate", "numerator", "denominator", "frames_checked"} <= set(leak)
    scroll = ev[("mind2web_shards", "scroll_histogram")].metadata
    assert "| down |" in scroll["histogram_table"].value
    assert scroll["histogram_chart"].value.startswith("![scroll histogram](data:image/png;base64,")
    assert Path(scroll["histogram_png"].value).read_bytes().startswith(b"\x89PNG")
    assert not (tmp_path / ALERTS_FILE).exists()  # nothing failed, nothing alerted


def test_a_leak_blocks_everything_downstream_and_alerts_a_real_webhook(tmp_path, write_m2w):
    mirror = same_element_mirror(write_m2w)
    with WebhookReceiver() as hook:
        result = materialize(tmp_path / "out", "train", mirror, webhook=hook.url)
    assert not result.success
    leak = evaluations(result)[("mind2web_shards", "alignment_leakage")]
    assert not leak.passed and leak.severity == dg.AssetCheckSeverity.ERROR
    assert leak.metadata["demonstrated_cursor_rate"].value == 1.0
    materialized = {m.asset_key.to_user_string() for m in result.get_asset_materialization_events()}
    assert "mind2web_shards" in materialized and "mind2web_dataset_info" not in materialized
    assert "mind2web_upload" not in materialized  # nothing is uploaded for a leaky partition
    assert not (tmp_path / "out" / "mind2web_train" / "dataset_info.json").exists()
    assert not (tmp_path / "out" / "hub" / "mind2web_train").exists()
    alerts = [p["gui_assets"] for p in hook.received]
    leak_alerts = [a for a in alerts if a["check"] == "alignment_leakage"]
    assert len(leak_alerts) == 1
    a = leak_alerts[0]
    assert (a["asset"], a["partition"], a["severity"]) == ("mind2web_shards", "train", "ERROR")
    assert a["figures"]["target_inside_eye_in_hand_rate"] == pytest.approx(0.8)
    assert a["run_id"] == result.run_id


def test_a_warn_failure_leaves_the_run_green_and_still_alerts(tmp_path, write_m2w):
    """Three clicks on one element then one elsewhere, six times: a rate of 0.5 over 24 steps."""
    shot = page_bytes(seed=5)
    rows = []
    for t in range(6):
        rects = ["900,600,160,44"] * 3 + ["100,150,160,44"]
        rows += [m2w_row(f"t{t}", str(i), rect=r, screenshot=shot) for i, r in enumerate(rects)]
    result = materialize(tmp_path, "train", write_m2w([rows]))
    assert result.success
    leak = evaluations(result)[("mind2web_shards", "alignment_leakage")]
    assert not leak.passed and leak.severity == dg.AssetCheckSeverity.WARN
    alerts = {
        json.loads(x)["check"]: json.loads(x) for x in (tmp_path / ALERTS_FILE).read_text().splitlines()
    }
    assert set(alerts) == {"alignment_leakage", "scroll_histogram"}  # and no page here needed a scroll
    alert = alerts["alignment_leakage"]
    assert (alert["severity"], alert["run_id"]) == ("WARN", result.run_id)
    assert alert["figures"]["target_inside_eye_in_hand_rate"] == 0.5
    assert (tmp_path / "mind2web_train" / "dataset_info.json").is_file()  # not blocked at WARN


def test_an_episode_in_two_partitions_fails_split_disjointness(tmp_path, write_m2w):
    shot = page_bytes(seed=6)
    same = [
        m2w_row("shared-task", "0", rect="100,100,200,50", screenshot=shot),
        m2w_row("shared-task", "1", rect="700,500,200,50", screenshot=shot),
    ]
    mirror = write_m2w([same], split="train")
    write_m2w([same], split="test_task")
    with dg.instance_for_test() as instance:
        assert materialize(tmp_path, "train", mirror, instance=instance).success
        result = materialize(tmp_path, "test_task", mirror, instance=instance)
    ev = evaluations(result)[("mind2web_splits", "split_disjointness")]
    assert not ev.passed and ev.metadata["compared_partitions"].value == ["train"]
    alerted = [json.loads(x)["check"] for x in (tmp_path / ALERTS_FILE).read_text().splitlines()]
    assert "split_disjointness" in alerted


@pytest.mark.slow
def test_the_cli_exits_non_zero_on_a_leak_and_alerts_without_a_daemon(tmp_path, write_m2w):
    mirror = same_element_mirror(write_m2w)
    with WebhookReceiver() as hook:
        env = clean_env(
            GUI_ASSETS_MIRROR=str(mirror),
            GUI_ASSETS_OUT=str(tmp_path / "out"),
            GUI_ASSETS_ALERT_WEBHOOK=hook.url,
        )
        r = cli_materialize("train", tmp_path, env)
    assert r.returncode != 0
    assert "mind2web_shards_alignment_leakage" in r.stderr
    checks = [p["gui_assets"]["check"] for p in hook.received]
    assert checks.count("alignment_leakage") == 1
    assert "target_inside_eye_in_hand_rate" in hook.received[checks.index("alignment_leakage")]["text"]
    assert not (tmp_path / "out" / "mind2web_train" / "dataset_info.json").exists()
    assert "secretpart" not in r.stdout + r.stderr  # the webhook URL's secret is never logged


def test_the_run_failure_sensor_alerts_failed_runs(tmp_path):
    with dg.instance_for_test() as instance:
        result = materialize(tmp_path, "train", tmp_path / "no-mirror", instance=instance)
        assert not result.success
        run = instance.get_run_by_id(result.run_id)
        failure = next(e for e in result.all_events if e.event_type == dg.DagsterEventType.RUN_FAILURE)
        ctx = dg.build_run_status_sensor_context(
            sensor_name="run_failure_alerts",
            dagster_instance=instance,
            dagster_run=run,
            dagster_event=failure,
            resources={"paths": GuiAssetsPaths(out=str(tmp_path)), "alerts": AlertsResource()},
        ).for_run_failure()
        run_failure_alerts(ctx)
    (line,) = (tmp_path / ALERTS_FILE).read_text().splitlines()
    alert = json.loads(line)
    assert (
        alert["kind"] == "run_failure" and alert["partition"] == "train" and alert["run_id"] == result.run_id
    )
