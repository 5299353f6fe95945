"""Pango in hub mode: train.csv from the hub (LocalHub), the documents and screenshots its rows
name fetched over https from a local bucket (HttpsBucket, a throwaway certificate), recorded in
the raw manifest, and fetched only once."""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from gui_assets.core.layout import OutLayout
from gui_assets.pipeline.chain import RawSettings, build_directory, fetch_raw
from gui_assets.sources.mirror import RawInputError, RawPartition
from gui_assets.sources.pango import demo as pango_mirror
from gui_assets.sources.pango.adapter import REPO_ID
from gui_assets.sources.pango.source import SPEC as PANGO
from gui_assets.sources.remote import RemoteSettings
from gui_assets_tests.conftest import page_bytes, run_adapter
from gui_assets_tests.https_server import HttpsBucket
from gui_assets_tests.hub_server import LocalHub

ROW0, ROW1, ROW2 = pango_mirror.IDS
TOKEN = "hf_not_for_buckets"


def settings(hub: LocalHub, bucket: HttpsBucket, cache: Path, **remote) -> RawSettings:
    return RawSettings(
        mode="hub",
        mirror=Path(),
        endpoint=hub.endpoint,
        cache_dir=cache,
        token=TOKEN,
        remote=RemoteSettings(ca_bundle=bucket.ca_bundle, backoff_s=0.01, **remote),
    )


def test_hub_mode_fetches_the_bucket_files_records_them_and_a_rerun_fetches_nothing_new(tmp_path):
    root = tmp_path / "hub"  # the hub's repo and the bucket's objects: both under <root>/<repo>
    with HttpsBucket(root / REPO_ID, tmp_path) as bucket, LocalHub(root) as hub:
        pango_mirror.write_mirror(root, bucket=bucket.url())
        doc0 = f"finalized/{ROW0}/actions_v3.json"
        bucket.state.drop_after[doc0] = (100, 1)  # the first document's connection drops once
        spec = dataclasses.replace(PANGO, remote_hosts=(bucket.host,))
        raw = settings(hub, bucket, tmp_path / "cache")
        info = build_directory(spec, "sample", tmp_path / "out", raw)

        # the same files read as a mirror give the same episodes and drops
        _, mirrored = run_adapter(PANGO, root, "sample", tmp_path / "mirror")
        assert info.stats["episodes_out"] == 4 and info.stats["drops"] == dict(mirrored.drops)
        assert info.stats["drops"]["missing_input_metadata"] == 1  # the 404

        manifest = RawPartition.read(OutLayout(tmp_path / "out").raw_manifest("pango_sample"))
        missing = bucket.url(f"finalized/{ROW2}/actions_v3.json")
        assert manifest.refused == {missing: "not_found"}
        urls = {f.path for f in manifest.remote}
        assert {bucket.url(doc0), bucket.url(f"finalized/{ROW1}/actions_v3.json")} <= urls and len(
            urls
        ) == 2 + 14 + 14 + 2
        for f in manifest.remote:  # every copy is the bucket's object, by size and sha256
            data = (root / REPO_ID / urlsplit(f.path).path.lstrip("/")).read_bytes()
            assert (f.size, f.sha256) == (len(data), hashlib.sha256(data).hexdigest())
            assert f.local.read_bytes() == data
        assert {"train.csv", "data/train-00000-of-00001.parquet", "screenshots/legacy/001.png"} <= {
            f.path for f in manifest.files
        }  # the inline document's screenshots are repo paths, fetched from the hub
        assert info.build["upstream"]["refused"] == {missing: "not_found"}
        assert len(info.build["upstream"]["remote"]) == len(urls)

        assert bucket.state.gets(doc0) == 2  # dropped, then whole
        assert not any(r.authorized for r in bucket.state.requests)  # the token stays with the hub
        assert any(r.authorized for r in hub.state.requests)

        before = len(bucket.state.requests)
        again = fetch_raw(spec, "sample", OutLayout(tmp_path / "again"), raw)
        assert [r.path for r in bucket.state.requests[before:]] == [urlsplit(missing).path.lstrip("/")]
        assert again.remote == manifest.remote and again.refused == manifest.refused


def write_rows(repo: Path, rows: list[dict[str, str]]) -> None:
    repo.mkdir(parents=True, exist_ok=True)
    with open(repo / "train.csv", "w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(
            fh, fieldnames=["id", "input_metadata", "synthetically_generated_instruction"]
        )
        writer.writeheader()
        writer.writerows(rows)


def test_plain_http_other_hosts_and_files_over_the_cap_are_refused_by_name(tmp_path):
    repo = tmp_path / "hub" / REPO_ID
    small, big = page_bytes(400, 300, seed=1), page_bytes(1600, 1200, seed=2)
    (repo / "s").mkdir(parents=True)
    (repo / "s" / "small.png").write_bytes(small)
    (repo / "s" / "big.png").write_bytes(big)
    with HttpsBucket(repo, tmp_path) as bucket, LocalHub(tmp_path / "hub") as hub:
        plain, other = f"http://{bucket.host}/", "https://other.example/"
        shots = [
            bucket.url("s/small.png"),
            f"{plain}s/small.png",
            f"{other}s/small.png",
            bucket.url("s/big.png"),
        ]
        events = [
            {"type": "click", "x": 5.0, "y": 5.0, "relative_timestamp_ms": t, "screenshot_url": s}
            for t, s in enumerate(shots)
        ]
        docs = {
            "r1": json.dumps({"actions": events}),
            "r4": json.dumps({"actions": events, "pad": "x" * len(big)}),
        }
        for rid, text in docs.items():
            (repo / "finalized" / rid).mkdir(parents=True)
            (repo / "finalized" / rid / "actions_v3.json").write_text(text)
        urls = {
            "r1": bucket.url("finalized/r1/actions_v3.json"),
            "r2": f"{plain}finalized/r1/actions_v3.json",
            "r3": f"{other}finalized/r1/actions_v3.json",
            "r4": bucket.url("finalized/r4/actions_v3.json"),
        }
        write_rows(
            repo,
            [
                {"id": k, "input_metadata": v, "synthetically_generated_instruction": "go"}
                for k, v in urls.items()
            ],
        )
        cap = (len(small) + len(big)) // 2
        assert len(docs["r1"]) < cap < len(big) < len(docs["r4"])
        spec = dataclasses.replace(PANGO, remote_hosts=(bucket.host,))
        info = build_directory(
            spec, "sample", tmp_path / "out", settings(hub, bucket, tmp_path / "c", max_bytes=cap)
        )
        assert info.stats["episodes_out"] == 1 and info.stats["steps"] == 1
        assert info.stats["drops"] == {"refused_url": 3, "refused_screenshot_url": 3}
        assert info.build["upstream"]["refused"] == {
            urls["r2"]: "not_https",
            urls["r3"]: "host_not_allowed",
            urls["r4"]: "too_large",
            shots[1]: "not_https",
            shots[2]: "host_not_allowed",
            shots[3]: "too_large",
        }
        asked = {r.path for r in bucket.state.requests}
        assert asked == {
            "finalized/r1/actions_v3.json",
            "finalized/r4/actions_v3.json",
            "s/small.png",
            "s/big.png",
        }


def test_with_no_host_declared_hub_mode_stops_naming_the_hosts_the_rows_use(tmp_path):
    root = tmp_path / "hub"
    with HttpsBucket(root / REPO_ID, tmp_path) as bucket, LocalHub(root) as hub:
        pango_mirror.write_mirror(root, bucket=bucket.url())
        with pytest.raises(RawInputError, match=f"pango: the records name files on {bucket.host}"):
            fetch_raw(PANGO, "sample", OutLayout(tmp_path / "out"), settings(hub, bucket, tmp_path / "c"))
        assert bucket.state.requests == []
