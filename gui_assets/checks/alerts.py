"""Alerts for failed checks and runs: a Slack-compatible webhook POST, else `<out>/alerts.jsonl`.

Delivery never raises: a webhook that fails is retried a bounded number of times with backoff
(timeouts, connection errors, 429 and 5xx; other 4xx answers are final), then the alert is
appended to alerts.jsonl with the delivery error, so it is not lost. Webhook URLs carry secrets
(Slack's do), so only their host is ever logged or recorded.
"""

from __future__ import annotations

import json
import logging
import os
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ALERTS_FILE = "alerts.jsonl"
_RETRYABLE_STATUS = {408, 425, 429, 500, 502, 503, 504}


@dataclass(frozen=True, slots=True)
class Alert:
    kind: str  # "asset_check" or "run_failure"
    asset: str
    partition: str | None
    check: str
    severity: str  # ERROR or WARN
    summary: str
    run_id: str
    figures: dict[str, Any] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def headline(self) -> str:
        where = f"{self.asset}[{self.partition}]" if self.partition else self.asset
        what = f"check {self.check} failed" if self.check else "run failed"
        return f"[{self.severity}] {where}: {what}: {self.summary}"

    def slack_payload(self) -> dict[str, Any]:
        """`text` and `blocks` for Slack; the structured alert under `gui_assets` for other receivers."""
        figures = "\n".join(
            f"• {k}: {json.dumps(v)}" for k, v in self.figures.items() if not isinstance(v, dict)
        )
        lines = [self.headline(), f"run `{self.run_id}`"]
        if figures:
            lines.append(figures)
        if self.examples:
            lines.append("examples: " + "; ".join(self.examples))
        text = "\n".join(lines)
        return {
            "text": text,
            "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": text[:2900]}}],
            "gui_assets": self.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class Delivery:
    sink: str  # "webhook" or "file"
    attempts: int
    error: str | None = None


def webhook_host(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")


def append_jsonl(path: Path, record: dict[str, Any]) -> None:
    """One line per alert in a single O_APPEND write, so concurrent runs never interleave."""
    path.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(record, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)


def _post(url: str, payload: dict[str, Any], timeout: float) -> None:
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    req = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        resp.read()


def deliver(
    alert: Alert,
    *,
    webhook: str | None,
    out_dir: Path,
    log: logging.Logger | Any,
    retries: int = 3,
    timeout: float = 5.0,
    backoff: float = 0.5,
) -> Delivery:
    """Send one alert; never raises. Returns where it went and how many attempts it took."""
    record = {"sent_at": time.time(), **alert.to_dict()}
    if not webhook:
        append_jsonl(out_dir / ALERTS_FILE, record)
        log.warning(f"ALERT {alert.headline()} (run {alert.run_id}) -> {out_dir / ALERTS_FILE}")
        return Delivery("file", 1)
    host = webhook_host(webhook)
    error = ""
    attempts = 0
    for attempt in range(1, retries + 2):
        attempts = attempt
        try:
            _post(webhook, alert.slack_payload(), timeout)
            log.warning(f"ALERT {alert.headline()} (run {alert.run_id}) -> webhook {host}")
            return Delivery("webhook", attempts)
        except urllib.error.HTTPError as e:
            error = f"HTTP {e.code} from {host}"
            if e.code not in _RETRYABLE_STATUS:
                break
        except (urllib.error.URLError, TimeoutError, OSError) as e:
            reason = getattr(e, "reason", e)
            error = f"{type(reason).__name__} reaching {host}"
        if attempt <= retries:
            time.sleep(backoff * 2 ** (attempt - 1))
    log.error(f"alert delivery to {host} failed after {attempts} attempts ({error}); kept in {ALERTS_FILE}")
    append_jsonl(out_dir / ALERTS_FILE, {**record, "delivery_error": error, "webhook_host": host})
    return Delivery("file", attempts, error)
