"""The demo mirror is made from the registry: each spec's generator writes its part, each part's
version is derived from its generator's code, so a stale part regenerates itself, and a build
generates only the parts it reads."""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from gui_assets.core.layout import DEMO_STAMP, OutLayout, is_demo_mirror
from gui_assets.pipeline.chain import RawSettings, fetch_raw
from gui_assets.sources.demo_mirror import demo_version, ensure_demo_mirror
from gui_assets.sources.registry import SOURCES
from gui_assets.sources.webarena.source import SPEC as WEBARENA


@pytest.mark.parametrize("spec", SOURCES, ids=[s.name for s in SOURCES])
def test_every_registered_source_has_a_demo_part_for_every_partition(spec, demo_mirror, tmp_path):
    assert spec.demo is not None, f"{spec.name} declares no demo generator: the demo cannot build it"
    for key in spec.partition_keys:
        part = fetch_raw(spec, key, OutLayout(tmp_path / "out"), RawSettings("mirror", demo_mirror))
        assert part.file_count > 0, (spec.name, key)


def test_the_version_is_derived_from_the_generators_and_which_sources_take_part():
    version = demo_version(SOURCES)
    assert len(version) == 16 and demo_version(list(reversed(SOURCES))) == version
    assert demo_version(SOURCES[:-1]) != version
    renamed = [dataclasses.replace(s, repo_id="someone/else") if s is WEBARENA else s for s in SOURCES]
    assert demo_version(renamed) != version


def test_a_file_a_generator_ships_is_part_of_the_version(tmp_path, monkeypatch):
    module = sys.modules[WEBARENA.demo.__module__]
    shipped = tmp_path / "data"
    shipped.mkdir()
    (shipped / "trace.zip").write_bytes(b"one")
    monkeypatch.setattr(module, "DATA", shipped)
    before = demo_version([WEBARENA])
    (shipped / "trace.zip").write_bytes(b"two")
    assert demo_version([WEBARENA]) != before


def _spec_writing(
    marker: str, calls: list[str], name: str = "toy", first: Callable[[], object] | None = None
):
    """A toy source whose generator notes each call in `calls` and runs `first` (if given) before
    writing."""

    def write(root: Path) -> None:
        if first is not None:
            first()
        calls.append(f"{name}:{marker}")
        (root / "toy-org" / name).mkdir(parents=True, exist_ok=True)
        (root / "toy-org" / name / "data.jsonl").write_text(marker)

    return dataclasses.replace(SOURCES[0], name=name, repo_id=f"toy-org/{name}", demo=write)


def test_a_current_part_is_kept_and_a_stale_one_regenerated_whole(tmp_path):
    calls: list[str] = []
    spec = _spec_writing("first", calls)
    root = ensure_demo_mirror(tmp_path / "mirror", [spec])
    assert json.loads((root / DEMO_STAMP).read_text()) == {"toy": demo_version([spec])}
    assert is_demo_mirror(root / spec.repo_id, spec.repo_id)
    ensure_demo_mirror(root, [spec])
    assert calls == ["toy:first"]  # current: nothing rewritten
    (root / spec.repo_id / "leftover.txt").write_text("from an older generator")
    (root / DEMO_STAMP).write_text('{"toy": "an older version"}\n')
    ensure_demo_mirror(root, [spec])
    assert calls == ["toy:first", "toy:first"] and not (root / spec.repo_id / "leftover.txt").exists()
    (root / DEMO_STAMP).write_text("0123456789abcdef\n")  # an older layout's single version
    ensure_demo_mirror(root, [spec])
    assert calls == ["toy:first"] * 3 and json.loads((root / DEMO_STAMP).read_text())["toy"]


def test_only_the_parts_asked_for_are_generated_and_each_keeps_its_own_version(tmp_path):
    calls: list[str] = []
    one, two = _spec_writing("a", calls, "one"), _spec_writing("b", calls, "two")
    root = ensure_demo_mirror(tmp_path / "mirror", [one])
    assert calls == ["one:a"] and not (root / two.repo_id).exists()
    ensure_demo_mirror(root, [two])
    ensure_demo_mirror(root, [one, two])
    assert calls == ["one:a", "two:b"]  # the second part joined the first; neither was redone
    assert json.loads((root / DEMO_STAMP).read_text()) == {
        "one": demo_version([one]),
        "two": demo_version([two]),
    }
    shutil.rmtree(root / one.repo_id)  # a part gone from disk is generated again
    ensure_demo_mirror(root, [one, two])
    assert calls == ["one:a", "two:b", "one:a"] and (root / one.repo_id / "data.jsonl").is_file()


def _unlocked(root: Path) -> list[str]:
    """What a folder holds besides the lock files."""
    return sorted(p.name for p in root.iterdir() if not p.name.endswith(".lock"))


def test_two_parts_are_generated_side_by_side_not_one_after_the_other(tmp_path):
    both_running = threading.Barrier(2, timeout=20)  # broken if one part waits for the other
    calls: list[str] = []
    parts = [_spec_writing("x", calls, name, both_running.wait) for name in ("one", "two")]
    root = tmp_path / "mirror"
    with ThreadPoolExecutor(2) as pool:
        done = [pool.submit(ensure_demo_mirror, root, [part]) for part in parts]
        [d.result() for d in done]
    assert sorted(calls) == ["one:x", "two:x"]
    assert set(json.loads((root / DEMO_STAMP).read_text())) == {"one", "two"}


def test_concurrent_builds_of_one_part_generate_it_once(tmp_path):
    calls: list[str] = []
    spec = _spec_writing("x", calls)
    root = tmp_path / "mirror"
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda _: ensure_demo_mirror(root, [spec]), range(8)))
    assert calls == ["toy:x"]


def test_a_generator_writing_outside_its_repo_fails_by_name_and_leaves_nothing(tmp_path):
    def stray(root: Path) -> None:
        (root / "elsewhere").mkdir()
        (root / "elsewhere" / "f.txt").write_text("x")

    spec = dataclasses.replace(SOURCES[0], name="stray", repo_id="toy-org/stray", demo=stray)
    with pytest.raises(RuntimeError, match=r"generator of stray must write its files under toy-org/stray"):
        ensure_demo_mirror(tmp_path / "mirror", [spec])
    assert _unlocked(tmp_path / "mirror") == []


def test_a_failing_generator_leaves_the_old_part_and_no_temp_folder(tmp_path):
    calls: list[str] = []
    root = ensure_demo_mirror(tmp_path / "mirror", [_spec_writing("good", calls)])

    def broken(root: Path) -> None:
        (root / "toy-org" / "toy").mkdir(parents=True)
        raise OSError("disk gone")

    failing = dataclasses.replace(SOURCES[0], name="toy", repo_id="toy-org/toy", demo=broken)
    (root / DEMO_STAMP).write_text('{"toy": "an older version"}\n')
    with pytest.raises(OSError, match="disk gone"):
        ensure_demo_mirror(root, [failing])
    assert (root / "toy-org" / "toy" / "data.jsonl").read_text() == "good"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mirror"]
    assert _unlocked(root) == [DEMO_STAMP, "toy-org"]
    assert json.loads((root / DEMO_STAMP).read_text()) == {"toy": "an older version"}  # tried again next
