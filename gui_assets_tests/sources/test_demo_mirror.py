"""The demo mirror is made from the registry: each spec's generator writes its part, and the
mirror's version is derived from the generators' code, so a stale mirror regenerates itself."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

from gui_assets.core.layout import DEMO_STAMP, OutLayout
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


def _spec_writing(marker: str, calls: list[str]):
    def write(root: Path) -> None:
        calls.append(marker)
        (root / "toy-org" / "toy").mkdir(parents=True, exist_ok=True)
        (root / "toy-org" / "toy" / "data.jsonl").write_text(marker)

    return dataclasses.replace(SOURCES[0], name="toy", repo_id="toy-org/toy", demo=write)


def test_a_current_mirror_is_kept_and_a_stale_one_regenerated_whole(tmp_path):
    calls: list[str] = []
    spec = _spec_writing("first", calls)
    root = ensure_demo_mirror(tmp_path / "mirror", [spec])
    assert (root / DEMO_STAMP).read_text().strip() == demo_version([spec])
    ensure_demo_mirror(root, [spec])
    assert calls == ["first"]  # current: nothing rewritten
    (root / "leftover.txt").write_text("from an older generator")
    (root / DEMO_STAMP).write_text("an older version\n")
    ensure_demo_mirror(root, [spec])
    assert calls == ["first", "first"] and not (root / "leftover.txt").exists()


def test_a_failing_generator_leaves_the_old_mirror_and_no_temp_folder(tmp_path):
    calls: list[str] = []
    root = ensure_demo_mirror(tmp_path / "mirror", [_spec_writing("good", calls)])

    def broken(root: Path) -> None:
        raise OSError("disk gone")

    failing = dataclasses.replace(SOURCES[0], name="toy", repo_id="toy-org/toy", demo=broken)
    with pytest.raises(OSError, match="disk gone"):
        ensure_demo_mirror(root, [failing])
    assert (root / "toy-org" / "toy" / "data.jsonl").read_text() == "good"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mirror"]
