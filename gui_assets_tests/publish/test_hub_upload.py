"""Uploads through huggingface_hub's own HTTP client to a hub laid out and answering as the hub does
(gui_assets_tests.hub_server), with the faults the seed card met: connections dropped in the
middle of large objects, a server answering 500 for a while, commits refused. The final repo must
equal an uninterrupted upload, no object that landed is sent again, and dataset_info.json is
committed only after every shard it names is in the repo."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from gui_assets.publish import hub
from gui_assets_tests.hub_server import LocalHub

REPO = "org/gui-agent"
SHARD_BYTES = 6 * 1000 * 1000


@pytest.fixture(autouse=True)
def lfs_transfer(monkeypatch):
    """huggingface_hub sends through Xet when hf_xet is installed; its storage service cannot run
    here, so the LFS transfer (which the hub also accepts) is what crosses the wire."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)


def _build(root: Path) -> list[tuple[str, Path]]:
    folder = root / "mind2web_train"
    folder.mkdir(parents=True)
    shards = {}
    for i in range(3):
        p = folder / f"mind2web_train_{i:04d}.hdf5"
        p.write_bytes(np.random.default_rng(i).bytes(SHARD_BYTES))
        shards[p.name] = hashlib.sha256(p.read_bytes()).hexdigest()
    (folder / "dataset_info.json").write_text(json.dumps({"shards": shards}, indent=1))
    return [(f"mind2web_train/{p.name}", p) for p in sorted(folder.iterdir())]


def _repo(server: LocalHub) -> dict[str, str]:
    return {rel: hashlib.sha256(p.read_bytes()).hexdigest() for rel, p in server.state.files(REPO)}


def _local(files: list[tuple[str, Path]]) -> dict[str, str]:
    return {rel: hashlib.sha256(p.read_bytes()).hexdigest() for rel, p in files}


def _upload(
    server: LocalHub, files: list[tuple[str, Path]], waits: list[float] | None = None
) -> hub.UploadResult:
    target = hub.HfHubTarget(REPO, token="hf_local_only", endpoint=server.endpoint)
    return hub.upload(
        files, target, "Upload mind2web_train", sleep=(waits if waits is not None else []).append
    )


def test_an_upload_lands_whole_with_the_description_in_the_last_commit(tmp_path):
    files = _build(tmp_path / "out")
    with LocalHub(tmp_path / "hub") as server:
        r = _upload(server, files)
        assert _repo(server) == _local(files) and r.retries == 0
        assert server.state.commits[-1] == ["mind2web_train/dataset_info.json"]
        assert sorted(Counter(server.state.objects_received).values()) == [1, 1, 1]  # the shards, once each
        commits = len(server.state.commits)
        again = _upload(server, files)
        assert again.uploaded == [] and len(server.state.commits) == commits  # nothing sent twice


def test_dropped_connections_and_a_failing_server_are_retried_and_resumed(tmp_path):
    files = _build(tmp_path / "out")
    waits: list[float] = []
    with LocalHub(tmp_path / "hub") as server:
        server.state.drop_uploads = 2  # two objects cut off half way
        server.state.fail_requests = 2  # then two 500s on the upload routes
        server.state.fail_commits = 1  # and the first commit fails after every object landed
        r = _upload(server, files, waits)
        assert _repo(server) == _local(files)
        # Every object was kept exactly once: a retry never sent again what had landed.
        assert sorted(Counter(server.state.objects_received).values()) == [1, 1, 1]
        puts = [q for q in server.state.requests if q.method == "PUT"]
        assert len(puts) >= 3 + 2  # the two cut-off uploads were sent again by the client
        # What huggingface_hub does not retry itself (creating the repo, the commit) our loop
        # retries, with doubling waits.
        assert r.retries >= 1 and waits == [2.0 * 2**i for i in range(r.retries)]
        assert server.state.commits[-1] == ["mind2web_train/dataset_info.json"]
        assert all("mind2web_train/dataset_info.json" not in c for c in server.state.commits[:-1])


def test_an_upload_cut_short_never_commits_the_description_and_the_rerun_finishes_it(tmp_path):
    files = _build(tmp_path / "out")
    with LocalHub(tmp_path / "hub") as server:
        server.state.refuse_paths = {"mind2web_train/dataset_info.json"}
        with pytest.raises(hub.UploadError, match=r"dataset_info\.json .*after 5 attempts"):
            _upload(server, files)
        held = _repo(server)
        assert "mind2web_train/dataset_info.json" not in held  # no description of a partial upload
        assert len(held) == 3  # the shards landed, as data only
        server.state.refuse_paths = set()
        received = list(server.state.objects_received)
        r = _upload(server, files)
        assert r.uploaded == ["mind2web_train/dataset_info.json"]  # only what was missing
        assert server.state.objects_received == received  # no shard sent again
        assert _repo(server) == _local(files)
