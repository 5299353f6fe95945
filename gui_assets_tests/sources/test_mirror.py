"""Raw inputs: the local mirror listing and hub-mode downloads against a localhost hub."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gui_assets.pipeline.chain import RawSettings, build_directory
from gui_assets.sources.mind2web.adapter import file_patterns
from gui_assets.sources.mind2web.source import SPEC as MIND2WEB
from gui_assets.sources.mirror import (
    MIRROR_REVISION_PREFIX,
    RawInputError,
    RawPartition,
    from_hub,
    from_mirror,
    partition_version,
)
from gui_assets_tests.conftest import REPO
from gui_assets_tests.hub_server import LocalHub

TOKEN = "hf_testtoken_do_not_leak_0123456789"


def listed_revisions(part: RawPartition) -> dict[str, str]:
    """Each upstream file's own revision, as dataset_info.json lists it (build.upstream.files)."""
    return {f["path"]: f["revision"] for f in part.upstream_record()["files"]}


def test_mirror_manifest_lists_the_split_with_sizes_and_hashes(demo_mirror):
    part = from_mirror(demo_mirror, REPO, file_patterns("train"))
    assert [f.path for f in part.files] == sorted(f.path for f in part.files)
    assert all(f.path.startswith("data/train-") for f in part.files) and len(part.files) == 2
    assert part.revision == MIRROR_REVISION_PREFIX + part.version and part.mode == "mirror"
    assert all(len(f.sha256) == 64 and f.size > 0 for f in part.files)
    assert not part.downloaded_at and "downloaded_at" not in part.upstream_record()


def test_a_mirror_revision_is_its_content(tmp_path, demo_mirror):
    """Two states of one mirror never share a revision; the same files always give the same one,
    wherever the mirror lies; another partition's files do not move it."""
    import shutil

    before = from_mirror(demo_mirror, REPO, file_patterns("train"))
    repo = tmp_path / REPO
    shutil.copytree(demo_mirror / REPO, repo)
    assert from_mirror(tmp_path, REPO, file_patterns("train")).revision == before.revision
    other = next((repo / "data").glob("test_task-*"))
    other.write_bytes(other.read_bytes() + b"\0")
    assert from_mirror(tmp_path, REPO, file_patterns("train")).revision == before.revision
    mine = next((repo / "data").glob("train-*"))
    mine.write_bytes(mine.read_bytes() + b"\0")
    after = from_mirror(tmp_path, REPO, file_patterns("train"))
    assert after.revision != before.revision and after.revision == MIRROR_REVISION_PREFIX + after.version


def test_each_mirror_file_has_its_own_revision_and_an_edit_moves_only_its_own(tmp_path, demo_mirror):
    """dataset_info.json lists each file with its own revision, so an edit of one file moves
    that file's revision only; the partition's revision still moves."""
    import shutil

    repo = tmp_path / REPO
    shutil.copytree(demo_mirror / REPO, repo)
    before = from_mirror(tmp_path, REPO, file_patterns("train"))
    first, second = before.files
    assert first.revision != second.revision and first.revision != before.revision
    for f in before.files:
        assert f.revision == MIRROR_REVISION_PREFIX + partition_version([(f.path, f.size, f.content_id)])
    assert listed_revisions(before) == {first.path: first.revision, second.path: second.revision}
    again = RawPartition.from_dict(json.loads(json.dumps(before.to_dict())))
    assert listed_revisions(again) == listed_revisions(before)
    edited = repo / first.path
    edited.write_bytes(edited.read_bytes() + b"\0")
    after = from_mirror(tmp_path, REPO, file_patterns("train"))
    assert listed_revisions(after)[first.path] != first.revision and after.revision != before.revision
    assert listed_revisions(after)[second.path] == second.revision


def test_a_folder_entry_gives_its_members_one_revision(tmp_path):
    repo = tmp_path / "o" / "r"
    (repo / "images").mkdir(parents=True)
    (repo / "images" / "a.png").write_bytes(b"a")
    (repo / "images" / "b.png").write_bytes(b"b")
    (repo / "data.jsonl").write_text("{}\n")
    part = from_mirror(tmp_path, "o/r", ["images/", "data.jsonl"])
    listed = listed_revisions(part)
    assert set(listed) == {"images/", "data.jsonl"}
    assert listed["images/"] == next(f for f in part.files if f.path == "images/").revision
    assert listed["data.jsonl"] not in (listed["images/"], part.revision)


def test_hub_records_name_the_commit_that_last_changed_their_file(demo_mirror, tmp_path):
    """On the hub a file's revision is its last commit (the expanded tree listing's lastCommit):
    a later commit that changes one file moves that file's revision only."""
    import shutil

    shutil.copytree(demo_mirror / REPO, tmp_path / "hub" / REPO)
    patterns = file_patterns("train")
    with LocalHub(tmp_path / "hub") as hub:
        old = hub.state.commit
        part = from_hub(REPO, patterns, endpoint=hub.endpoint, cache_dir=tmp_path / "cache")
        assert [f.revision for f in part.files] == [old, old] and part.revision == old
        first, second = (f.path for f in part.files)
        edited = tmp_path / "hub" / REPO / first
        edited.write_bytes(edited.read_bytes() + b"\0")
        hub.state.move_to(REPO, "f" * 40, [first])
        after = from_hub(REPO, patterns, endpoint=hub.endpoint, cache_dir=tmp_path / "cache")
        assert after.revision == "f" * 40
        assert listed_revisions(after) == {first: "f" * 40, second: old}


def test_a_hub_folder_entry_names_the_last_commit_of_any_of_its_files(tmp_path):
    repo = tmp_path / "hub" / "o" / "r"
    (repo / "images").mkdir(parents=True)
    (repo / "images" / "a.png").write_bytes(b"a")
    (repo / "images" / "b.png").write_bytes(b"b")
    (repo / "data.jsonl").write_text("{}\n")
    with LocalHub(tmp_path / "hub") as hub:
        old = hub.state.commit
        (repo / "images" / "a.png").write_bytes(b"A")
        hub.state.move_to("o/r", "e" * 40, ["images/a.png"])
        part = from_hub("o/r", ["images/", "data.jsonl"], endpoint=hub.endpoint, cache_dir=tmp_path / "c")
        asked = [r for r in hub.state.requests if "/paths-info/" in r.path]
    assert listed_revisions(part) == {"images/": "e" * 40, "data.jsonl": old}
    assert len(asked) == 1  # the partition's own paths, in one request


def test_a_hub_that_does_not_date_the_files_fails_by_name_and_a_dated_commit_is_kept(
    demo_mirror, tmp_path, monkeypatch
):
    """Naming the partition's commit instead would give other bytes than a build on which the
    hub answered; a commit's answer never changes, so a rebuild from the cache asks nothing."""
    from huggingface_hub import HfApi

    answer = HfApi.get_paths_info

    def refused(*args, **kwargs):
        raise OSError("paths-info refused")

    def silent(self, repo_id, paths, **kwargs):
        return [
            e for e in answer(self, repo_id, paths, **kwargs) if not e.path.startswith("data/train-00001")
        ]

    patterns = file_patterns("train")
    with LocalHub(demo_mirror) as hub:
        monkeypatch.setattr(HfApi, "get_paths_info", refused)
        with pytest.raises(RawInputError, match=r"did not say which commit.*paths-info refused"):
            from_hub(REPO, patterns, endpoint=hub.endpoint, cache_dir=tmp_path / "cache")
        monkeypatch.setattr(HfApi, "get_paths_info", silent)
        with pytest.raises(RawInputError, match=r"no last commit for .*data/train-00001"):
            from_hub(REPO, patterns, endpoint=hub.endpoint, cache_dir=tmp_path / "cache")
        monkeypatch.setattr(HfApi, "get_paths_info", answer)
        dated = from_hub(REPO, patterns, endpoint=hub.endpoint, cache_dir=tmp_path / "cache")
        monkeypatch.setattr(HfApi, "get_paths_info", refused)
        again = from_hub(REPO, patterns, endpoint=hub.endpoint, cache_dir=tmp_path / "cache")
    assert [f.revision for f in again.files] == [f.revision for f in dated.files] == [hub.state.commit] * 2


def test_the_commit_a_mirror_was_downloaded_at_is_kept_beside_its_revision(tmp_path, demo_mirror):
    import shutil

    repo = tmp_path / REPO
    shutil.copytree(demo_mirror / REPO, repo)
    meta = repo / ".cache" / "huggingface" / "download" / "data"
    meta.mkdir(parents=True)
    name = next(p.name for p in (repo / "data").glob("test_task-*"))
    (meta / f"{name}.metadata").write_text("a" * 40 + "\netag\n1700000000.0\n")
    part = from_mirror(tmp_path, REPO, file_patterns("test_task"))
    assert part.downloaded_at == "a" * 40 and part.revision.startswith(MIRROR_REVISION_PREFIX)
    assert part.upstream_record()["downloaded_at"] == "a" * 40


def test_a_local_dir_download_is_not_reread_to_hash_it(tmp_path, demo_mirror, monkeypatch):
    """`hf download --local-dir` records each LFS file's sha256 as its etag: the manifest takes
    it (the build then reads the file once, to parse it), unless the file changed since."""
    import hashlib
    import os
    import shutil

    from gui_assets.sources import mirror

    repo = tmp_path / REPO
    shutil.copytree(demo_mirror / REPO, repo)
    meta = repo / ".cache" / "huggingface" / "download" / "data"
    meta.mkdir(parents=True)
    path = next(p for p in (repo / "data").glob("test_task-*"))
    real = hashlib.sha256(path.read_bytes()).hexdigest()
    (meta / f"{path.name}.metadata").write_text(f"{'a' * 40}\n{real}\n{path.stat().st_mtime + 5}\n")
    reads: list[Path] = []
    real_sha = mirror.sha256_file
    monkeypatch.setattr(mirror, "sha256_file", lambda p: reads.append(p) or real_sha(p))
    (entry,) = from_mirror(tmp_path, REPO, file_patterns("test_task")).files
    assert entry.sha256 == real and reads == []
    later = path.stat().st_mtime + 60  # edited after the download: hashed again
    os.utime(path, (later, later))
    (entry,) = from_mirror(tmp_path, REPO, file_patterns("test_task")).files
    assert entry.sha256 == real and reads == [path]


def test_a_mirror_without_the_repo_or_the_split_fails_by_name(tmp_path, demo_mirror):
    with pytest.raises(RawInputError, match="mirror has no osunlp/Multimodal-Mind2Web"):
        from_mirror(tmp_path, REPO, file_patterns("train"))
    with pytest.raises(RawInputError, match=r"no files matching \['data/nope-\*.parquet'\]"):
        from_mirror(demo_mirror, REPO, ["data/nope-*.parquet"])


def test_hub_mode_end_to_end_against_a_localhost_hub(demo_mirror, tmp_path):
    out = tmp_path / "out"
    with LocalHub(demo_mirror) as hub:
        settings = RawSettings(
            mode="hub", mirror=Path(), token=TOKEN, endpoint=hub.endpoint, cache_dir=tmp_path / "cache"
        )
        info = build_directory(MIND2WEB, "test_website", out, settings)
        fetched = {
            r.path.rsplit("/", 1)[-1]
            for r in hub.state.requests
            if r.method == "GET" and "/resolve/" in r.path
        }
        repo_requests = [r for r in hub.state.requests if REPO in r.path]
        assert repo_requests and all(r.authorized for r in repo_requests)  # the token travels as a header
    assert len(fetched) == 1 and next(iter(fetched)).startswith("test_website-")  # only the split's files
    up = info.build["upstream"]
    assert up["mode"] == "hub" and up["revision"] == hub.state.commit
    assert info.stats["episodes_out"] == 2
    # the downloaded files sit in the huggingface_hub cache, in its usual layout
    assert list((tmp_path / "cache").glob("datasets--osunlp--Multimodal-Mind2Web/snapshots/*/data/*.parquet"))
    for p in out.rglob("*"):
        if p.is_file():
            assert TOKEN.encode() not in p.read_bytes(), p


def test_a_dropped_connection_fails_by_name_and_the_rerun_fetches_only_what_is_missing(demo_mirror, tmp_path):
    cache = tmp_path / "cache"
    files = from_mirror(demo_mirror, REPO, file_patterns("train")).files
    big = max(files, key=lambda f: f.size)
    with LocalHub(demo_mirror) as hub:
        hub.state.fail_after_bytes[big.path] = big.size // 3
        with pytest.raises(RawInputError, match="hub download of osunlp/Multimodal-Mind2Web") as e:
            from_hub(REPO, file_patterns("train"), endpoint=hub.endpoint, cache_dir=cache, token=TOKEN)
        assert TOKEN not in str(e.value)
        tries = [r for r in hub.state.requests if r.method == "GET" and r.path.endswith(big.path)]
        assert len(tries) > 1  # huggingface_hub retried before giving up
        del hub.state.fail_after_bytes[big.path]
        hub.state.requests.clear()
        part = from_hub(REPO, file_patterns("train"), endpoint=hub.endpoint, cache_dir=cache, token=TOKEN)
        gets = [r.path for r in hub.state.requests if r.method == "GET" and "/resolve/" in r.path]
    assert [g.rsplit("/", 1)[-1] for g in gets] == [
        big.path.rsplit("/", 1)[-1]
    ]  # the finished file is reused
    assert {f.path: f.sha256 for f in part.files} == {f.path: f.sha256 for f in files}


def test_an_unknown_hub_repo_fails_by_name(tmp_path):
    with LocalHub(tmp_path) as hub, pytest.raises(RawInputError, match="osunlp/Multimodal-Mind2Web"):
        from_hub(REPO, file_patterns("train"), endpoint=hub.endpoint, cache_dir=tmp_path / "c")


def test_raw_manifest_records_no_token(demo_mirror, tmp_path):
    with LocalHub(demo_mirror) as hub:
        part = from_hub(
            REPO, file_patterns("test_task"), endpoint=hub.endpoint, cache_dir=tmp_path / "c", token=TOKEN
        )
    assert TOKEN not in json.dumps(part.to_dict())


def test_the_raw_stage_hashes_a_mirror_file_once_until_it_changes(tmp_path, demo_mirror, monkeypatch):
    """A build of a mirror shares the hash cache with the upstream observation: an unchanged
    file is not read again to describe it, an edited one is (its size and mtime moved)."""
    import os
    import shutil

    from gui_assets.core.layout import OutLayout
    from gui_assets.pipeline.raw import fetch_raw
    from gui_assets.sources import mirror

    shutil.copytree(demo_mirror / REPO, tmp_path / "m" / REPO)
    reads: list[Path] = []
    real_sha = mirror.sha256_file
    monkeypatch.setattr(mirror, "sha256_file", lambda p: reads.append(p) or real_sha(p))
    layout, settings = OutLayout(tmp_path / "out"), RawSettings(mode="mirror", mirror=tmp_path / "m")
    first = fetch_raw(MIND2WEB, "train", layout, settings)
    assert len(reads) == first.file_count > 1
    reads.clear()
    assert fetch_raw(MIND2WEB, "train", layout, settings).files == first.files and reads == []
    edited = first.files[0].local
    later = edited.stat().st_mtime + 60
    os.utime(edited, (later, later))
    again = fetch_raw(MIND2WEB, "train", layout, settings)
    assert reads == [edited] and again.files == first.files  # same bytes, same sha256
