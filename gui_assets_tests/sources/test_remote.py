"""The https fetcher against a local TLS server: retries, refusals, the size cap, the cache."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from gui_assets.sources.mirror import RawInputError
from gui_assets.sources.remote import Fetcher, Refusal, RemoteSettings
from gui_assets_tests.https_server import HttpsBucket

BODY = bytes(range(256)) * 40  # 10 kB


@pytest.fixture
def bucket(tmp_path: Path):
    root = tmp_path / "bucket"
    (root / "finalized" / "s1").mkdir(parents=True)
    (root / "finalized" / "s1" / "actions_v3.json").write_bytes(BODY)
    with HttpsBucket(root, tmp_path) as b:
        yield b


def fetcher(bucket: HttpsBucket, cache: Path, **settings) -> Fetcher:
    return Fetcher(
        cache, [bucket.host], RemoteSettings(ca_bundle=bucket.ca_bundle, backoff_s=0.01, **settings)
    )


DOC = "finalized/s1/actions_v3.json"


def test_a_connection_dropped_mid_file_is_retried_and_the_copy_verified(bucket, tmp_path):
    bucket.state.drop_after[DOC] = (3000, 1)  # 3 kB of 10, then the connection drops, once
    got = fetcher(bucket, tmp_path / "cache").fetch(bucket.url(DOC))
    assert got.refused is None and got.local is not None
    assert got.local.read_bytes() == BODY
    assert (got.size, got.sha256) == (len(BODY), hashlib.sha256(BODY).hexdigest())
    assert bucket.state.gets(DOC) == 2


def test_server_errors_and_timeouts_are_retried_with_backoff(bucket, tmp_path):
    bucket.state.statuses[DOC] = [503, 502, 429]
    f = fetcher(bucket, tmp_path / "a")
    assert f.fetch(bucket.url(DOC)).local is not None and bucket.state.gets(DOC) == 4
    bucket.state.delays[DOC] = [2.0]  # the first answer comes after the read timeout
    assert fetcher(bucket, tmp_path / "b", timeout_s=0.3).fetch(bucket.url(DOC)).local is not None
    assert bucket.state.gets(DOC) == 6


def test_a_failure_outlasting_the_retries_fails_by_the_url(bucket, tmp_path):
    bucket.state.statuses[DOC] = [500] * 10
    with pytest.raises(RawInputError, match=r"actions_v3\.json.*failed 3 times.*HTTP 500"):
        fetcher(bucket, tmp_path / "cache", retries=2).fetch(bucket.url(DOC))
    assert bucket.state.gets(DOC) == 3


def test_other_client_errors_fail_at_once(bucket, tmp_path):
    bucket.state.statuses[DOC] = [403]
    with pytest.raises(RawInputError, match="HTTP 403"):
        fetcher(bucket, tmp_path / "cache").fetch(bucket.url(DOC))
    assert bucket.state.gets(DOC) == 1


def test_404_is_named_and_asked_again_next_time(bucket, tmp_path):
    f = fetcher(bucket, tmp_path / "cache")
    for _ in range(2):
        assert f.fetch(bucket.url("finalized/nope/actions_v3.json")).refused == Refusal.NOT_FOUND
    assert bucket.state.gets("finalized/nope/actions_v3.json") == 2


def test_http_other_hosts_and_malformed_urls_are_refused_without_a_request(bucket, tmp_path):
    f = fetcher(bucket, tmp_path / "cache")
    refused = {
        url: f.fetch(url).refused
        for url in (
            f"http://localhost:{bucket.port}/{DOC}",
            f"s3://bucket/{DOC}",
            f"https://other.example/{DOC}",
            f"https://localhost:{bucket.port + 1}/{DOC}",  # the right host on another port
            f"https://localhost/{DOC}",  # port 443
            "https://[::1/x",
            "https:///x",
            f"https://localhost:{bucket.port}/a\x00b",
            f"https://localhost:{bucket.port}/a\ud800b",
        )
    }
    assert list(refused.values()) == [
        Refusal.NOT_HTTPS,
        Refusal.NOT_HTTPS,
        Refusal.HOST_NOT_ALLOWED,
        Refusal.HOST_NOT_ALLOWED,
        Refusal.HOST_NOT_ALLOWED,
        Refusal.MALFORMED_URL,
        Refusal.MALFORMED_URL,
        Refusal.MALFORMED_URL,
        Refusal.MALFORMED_URL,
    ]
    assert bucket.state.requests == []


def test_spaces_and_non_ascii_in_a_path_are_percent_encoded_on_the_wire(bucket, tmp_path):
    (bucket.state.root / "finalized" / "s1" / "Übersicht 1.png").write_bytes(b"png")
    f = fetcher(bucket, tmp_path / "cache")
    for url in (
        bucket.url("finalized/s1/Übersicht 1.png"),
        bucket.url("finalized/s1/%C3%9Cbersicht%201.png"),
    ):
        got = f.fetch(url)
        assert got.local is not None and got.local.read_bytes() == b"png" and got.url == url
    assert [r.path for r in bucket.state.requests] == ["finalized/s1/Übersicht 1.png"] * 2


def test_redirects_are_followed_only_to_allowed_https_urls(bucket, tmp_path):
    bucket.state.redirects.update(
        {
            "r/ok": f"/{DOC}",
            "r/away": "https://other.example/x",
            "r/plain": f"http://localhost:{bucket.port}/x",
        }
    )
    f = fetcher(bucket, tmp_path / "cache")
    assert f.fetch(bucket.url("r/ok")).local.read_bytes() == BODY  # type: ignore[union-attr]
    assert f.fetch(bucket.url("r/away")).refused == Refusal.HOST_NOT_ALLOWED
    assert f.fetch(bucket.url("r/plain")).refused == Refusal.NOT_HTTPS
    assert [r.path for r in bucket.state.requests] == ["r/ok", DOC, "r/away", "r/plain"]


def test_the_size_cap_refuses_declared_and_streamed_bodies_and_keeps_nothing(bucket, tmp_path):
    (bucket.state.root / "unsized.png").write_bytes(BODY)
    bucket.state.unsized.add("unsized.png")
    f = fetcher(bucket, tmp_path / "cache", max_bytes=4096)
    assert f.fetch(bucket.url(DOC)).refused == Refusal.TOO_LARGE  # by its Content-Length
    assert f.fetch(bucket.url("unsized.png")).refused == Refusal.TOO_LARGE  # cut off while read
    assert not [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]  # no partial file left
    assert fetcher(bucket, tmp_path / "big", max_bytes=len(BODY)).fetch(
        bucket.url("unsized.png")
    ).size == len(BODY)


def test_a_rerun_uses_the_cache_and_refetches_a_copy_that_changed(bucket, tmp_path):
    first = fetcher(bucket, tmp_path / "cache").fetch(bucket.url(DOC))
    again = fetcher(bucket, tmp_path / "cache").fetch(bucket.url(DOC))
    assert again == first and bucket.state.gets() == 1
    assert first.local is not None
    first.local.write_bytes(b"x" + BODY[1:])  # same size, other bytes: the sha256 tells
    healed = fetcher(bucket, tmp_path / "cache").fetch(bucket.url(DOC))
    assert healed.local is not None and healed.local.read_bytes() == BODY and bucket.state.gets() == 2


def test_fetch_all_fetches_each_url_once_and_sends_no_credentials(bucket, tmp_path):
    (bucket.state.root / "b.png").write_bytes(b"png")
    got = fetcher(bucket, tmp_path / "cache").fetch_all(
        [bucket.url(DOC), bucket.url("b.png"), bucket.url(DOC)]
    )
    assert sorted(got) == sorted({bucket.url(DOC), bucket.url("b.png")})
    assert bucket.state.gets() == 2 and not any(r.authorized for r in bucket.state.requests)


def test_an_untrusted_certificate_fails_by_name_and_is_not_retried(bucket, tmp_path, monkeypatch):
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    f = Fetcher(tmp_path / "cache", [bucket.host], RemoteSettings(backoff_s=0.01))  # the system store
    with pytest.raises(RawInputError, match="certificate not trusted"):
        f.fetch(bucket.url(DOC))
    assert bucket.state.requests == [] and f.requests == 1


def test_ssl_cert_file_is_honoured_when_no_bundle_is_given(bucket, tmp_path, monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", str(bucket.ca_bundle))
    f = Fetcher(tmp_path / "cache", [bucket.host], RemoteSettings())
    assert f.fetch(bucket.url(DOC)).size == len(BODY)
