"""Alert delivery: a real localhost webhook, bounded retries, the alerts.jsonl fallback."""

from __future__ import annotations

import json
import logging
import socket

from gui_assets.checks.alerts import ALERTS_FILE, Alert, deliver
from gui_assets_tests.webhook_server import WebhookReceiver

ALERT = Alert(
    kind="asset_check",
    asset="mind2web_shards",
    partition="train",
    check="alignment_leakage",
    severity="ERROR",
    summary="leak: rate 0.950",
    run_id="run-123",
    figures={"target_inside_eye_in_hand_rate": 0.95, "numerator": 19, "denominator": 20},
    examples=["mind2web_train_0000.hdf5/demo_0 step 3: x"],
)
LOG = logging.getLogger("test")


def test_a_webhook_receives_a_slack_compatible_post(tmp_path):
    with WebhookReceiver() as hook:
        d = deliver(ALERT, webhook=hook.url, out_dir=tmp_path, log=LOG)
    assert (d.sink, d.attempts) == ("webhook", 1)
    (payload,) = hook.received
    assert payload["text"].startswith("[ERROR] mind2web_shards[train]: check alignment_leakage failed: leak")
    assert "run `run-123`" in payload["text"] and "target_inside_eye_in_hand_rate: 0.95" in payload["text"]
    assert payload["blocks"][0]["type"] == "section"
    assert (
        payload["gui_assets"]["figures"]["numerator"] == 19 and payload["gui_assets"]["run_id"] == "run-123"
    )
    assert not (tmp_path / ALERTS_FILE).exists()


def test_a_failing_webhook_is_retried_with_a_bound(tmp_path):
    with WebhookReceiver(fail_first=2, fail_status=503) as hook:
        d = deliver(ALERT, webhook=hook.url, out_dir=tmp_path, log=LOG, retries=3, backoff=0.01)
    assert (d.sink, d.attempts) == ("webhook", 3) and len(hook.received) == 1


def test_an_undeliverable_alert_is_kept_in_the_file_and_never_raises(tmp_path, caplog):
    with WebhookReceiver(fail_first=100, fail_status=500) as hook:
        d = deliver(ALERT, webhook=hook.url, out_dir=tmp_path, log=LOG, retries=2, backoff=0.01)
        assert hook.attempts == 3  # one try and two retries, then it gives up
    assert d.sink == "file" and d.error == f"HTTP 500 from {hook.url.split('/services')[0]}"
    (line,) = (tmp_path / ALERTS_FILE).read_text().splitlines()
    rec = json.loads(line)
    assert rec["check"] == "alignment_leakage" and rec["delivery_error"].startswith("HTTP 500")
    assert "secretpart" not in (tmp_path / ALERTS_FILE).read_text() + caplog.text  # the URL's secret path


def test_a_client_error_is_not_retried(tmp_path):
    with WebhookReceiver(fail_first=100, fail_status=404) as hook:
        d = deliver(ALERT, webhook=hook.url, out_dir=tmp_path, log=LOG, retries=5, backoff=0.01)
        assert hook.attempts == 1
    assert d.sink == "file"


def test_an_unreachable_webhook_falls_back_to_the_file(tmp_path):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    d = deliver(
        ALERT,
        webhook=f"http://127.0.0.1:{port}/hook",
        out_dir=tmp_path,
        log=LOG,
        retries=1,
        backoff=0.01,
        timeout=1,
    )
    assert d.sink == "file" and "ConnectionRefusedError" in (d.error or "")


def test_without_a_webhook_alerts_append_to_the_file(tmp_path):
    for _ in range(2):
        assert deliver(ALERT, webhook=None, out_dir=tmp_path, log=LOG).sink == "file"
    lines = (tmp_path / ALERTS_FILE).read_text().splitlines()
    assert [json.loads(x)["severity"] for x in lines] == ["ERROR", "ERROR"]
