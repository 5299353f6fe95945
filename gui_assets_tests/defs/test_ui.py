"""The UI as users see it: `dagster dev` (webserver and daemon) driven by headless chromium.

After a CLI build of one Mind2Web partition, the test opens the source's asset graph, the
`mind2web_shards` partition `train` (its metadata and the contact sheet of sampled frames),
and the scroll-histogram check with its chart, saving a screenshot of each under
test-artifacts/ui/. It then launches the all-partitions backfill command against the same
webserver and sees the daemon pick it up.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from gui_assets.cli.backfill import graphql
from gui_assets_tests.conftest import clean_env, cli_materialize, free_port

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts" / "ui"
CHROMIUM = Path("/usr/bin/chromium")


def _wait_http(url: str, timeout: float) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"{url} did not answer within {timeout} s")


@pytest.fixture
def dagster_dev(tmp_path, demo_mirror):
    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is not installed (scripts/test installs it)")
    home = tmp_path / "home"
    home.mkdir()
    # The project's instance settings (run queue, pools, no first-run prompt), storage in `home`.
    settings = (REPO / "dagster.yaml").read_text(encoding="utf-8")
    (home / "dagster.yaml").write_text(settings[settings.index("concurrency:") :], encoding="utf-8")
    env = clean_env(
        DAGSTER_HOME=str(home), GUI_ASSETS_OUT=str(tmp_path / "out"), GUI_ASSETS_MIRROR=str(demo_mirror)
    )
    build = cli_materialize("train", REPO, env)
    assert build.returncode == 0, build.stderr[-3000:]
    port = free_port()
    log = (tmp_path / "dagster-dev.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "dagster", "dev", "-m", "gui_assets", "-h", "127.0.0.1", "-p", str(port)],
        cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_http(f"{base}/server_info", 180)
        yield base
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()


def test_graph_partition_checks_and_backfill_in_a_real_browser(dagster_dev):
    from playwright.sync_api import sync_playwright

    base = dagster_dev
    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    ARTIFACTS.mkdir(parents=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1600, "height": 1000})

        page.goto(f"{base}/locations/gui_assets/asset-groups/mind2web")
        page.get_by_text("mind2web_shards", exact=True).first.wait_for(timeout=60_000)
        page.wait_for_timeout(1500)
        page.screenshot(path=ARTIFACTS / "1-asset-graph.png")
        html = page.content()
        for name in (
            "mind2web_episodes",
            "mind2web_splits",
            "mind2web_dat",
            "mind2web_upload",
        ):  # long names elide
            assert name in html, name

        page.goto(f"{base}/assets/mind2web_shards?view=partitions&partition=train")
        page.get_by_text("contact_sheet", exact=True).first.wait_for(timeout=60_000)
        for field in ("shards", "demos", "steps", "target_inside_eye_in_hand_rate", "shard_list"):
            assert page.get_by_text(field, exact=True).count() >= 1, field
        page.screenshot(path=ARTIFACTS / "2-shards-partition.png", full_page=True)
        page.locator("tr", has_text="contact_sheet").get_by_text("[Show Markdown]").first.click()
        sheet = page.get_by_role("dialog").locator("img").first
        sheet.wait_for(timeout=30_000)
        assert sheet.evaluate("img => img.naturalWidth") > 600  # the contact sheet decoded
        page.wait_for_timeout(500)
        page.screenshot(path=ARTIFACTS / "3-contact-sheet.png")
        page.keyboard.press("Escape")

        page.goto(f"{base}/assets/mind2web_shards?view=checks")
        for check in ("action_mask", "alignment_leakage", "causal_cursor", "scroll_histogram"):
            page.get_by_text(check, exact=True).first.wait_for(timeout=60_000)
        page.get_by_text("scroll_histogram", exact=True).first.click()
        page.locator("tr", has_text="histogram_chart").get_by_text("[Show Markdown]").first.click()
        chart = page.get_by_role("dialog").locator("img").first
        chart.wait_for(timeout=30_000)
        assert chart.evaluate("img => img.naturalWidth") > 300
        page.wait_for_timeout(500)
        page.screenshot(path=ARTIFACTS / "4-check-chart.png")
        browser.close()
    for shot in ARTIFACTS.glob("*.png"):
        assert shot.stat().st_size > 20_000, shot  # a real page, not a blank one

    r = subprocess.run(
        [sys.executable, "-m", "gui_assets.cli.backfill", "--url", base, "--source", "mind2web"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    backfill = r.stdout.split("backfill ", 1)[1].split()[0]
    query = (
        f'query {{ partitionBackfillOrError(backfillId: "{backfill}") {{ __typename '
        "... on PartitionBackfill { status numPartitions tags { key value } } } }"
    )
    found = graphql(base, query)["partitionBackfillOrError"]
    assert found["__typename"] == "PartitionBackfill", found
    assert {"key": "gui_assets/source", "value": "mind2web"} in found["tags"]
    assert found["status"] in ("REQUESTED", "COMPLETED_SUCCESS", "COMPLETED")
    (ARTIFACTS / "backfill.json").write_text(json.dumps(found, indent=2) + "\n")
