"""Lineage as a user relies on it: rebuild exactly what the instance marks stale, one asset at a
time, until nothing is marked, and the outputs are byte-identical to a from-scratch build of the
edited inputs; partitions an edit does not touch are never marked. Also the order of building
and observing: a partition built before its upstream was ever observed is still marked when the
upstream moves, and the opt-in automation never starts a first build.

Mirror mode, as a user with a local copy of the data works: a partition's revision is its
content, so a partition whose files did not change is the same bytes whenever it is built. (On
the hub the revision recorded is the commit a partition was built at; test_upstream covers
observation there.)"""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gui_assets.defs import shard_graph, source_assets
from gui_assets.defs.resources import GuiAssetsPaths, HubResource
from gui_assets.pipeline import libero_hdf5, unit_reuse
from gui_assets.sources.mind2web import adapter as mind2web
from gui_assets_tests.defs.test_upstream import CHAIN, REPO, build, mind2web_defs, observe, statuses

BUILT = ["test_task", "test_domain"]  # two small partitions; the others are never built


@pytest.fixture
def mirror(tmp_path: Path, demo_mirror: Path) -> Path:
    """A copy of the demo mirror's Mind2Web repo, to edit."""
    root = tmp_path / "mirror"
    shutil.copytree(demo_mirror / REPO, root / REPO)
    return root


def make_defs(out: Path, mirror: Path) -> dg.Definitions:
    return mind2web_defs(
        GuiAssetsPaths(out=str(out), mirror=str(mirror), source="mirror"),
        HubResource(cache_dir=str(out.parent / "hf-cache")),
    )


def flagged(defs: dg.Definitions, instance: dg.DagsterInstance) -> list[tuple[str, str]]:
    """(asset, partition) marked STALE, in the chain's order."""
    out = []
    for key in CHAIN:
        out += [(key, p) for p, s in statuses(defs, instance, key).items() if s == "STALE"]
    return out


def rebuild_flagged(defs: dg.Definitions, instance: dg.DagsterInstance) -> list[tuple[str, str]]:
    """What a user does in the UI: materialize the first flagged asset alone, look again."""
    done = []
    for _ in range(4 * len(CHAIN) * len(BUILT)):
        now = flagged(defs, instance)
        if not now:
            return done
        key, partition = now[0]
        build(defs, instance, partition, [key])
        done.append((key, partition))
    raise AssertionError(f"still flagged after {len(done)} rebuilds: {flagged(defs, instance)}")


def outputs(out: Path, partition: str) -> dict[str, bytes]:
    folder = out / f"mind2web_{partition}"
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def drop_first_row(mirror: Path, pattern: str) -> None:
    path = sorted((mirror / REPO / "data").glob(pattern))[0]
    table = pq.read_table(path)
    pq.write_table(table.slice(1), path)


def edit_upstream(mirror: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One row of test_task's parquet file: its task text."""
    (path,) = (mirror / REPO / "data").glob("test_task-*.parquet")
    rows = pq.read_table(path).to_pylist()
    rows[0]["confirmed_task"] = f"{rows[0]['confirmed_task']} (edited upstream)"
    pq.write_table(pa.Table.from_pylist(rows, schema=pq.read_schema(path)), path)


def _moved_version(module: object, stage: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """What editing the stage's code does to its code version (the code on disk is not edited)."""
    original = module.stage_version  # type: ignore[attr-defined]

    def edited(name: str, spec=None, *args, **kwargs) -> str:
        v = original(name, spec, *args, **kwargs)
        return f"{int(v, 16) ^ 1:016x}" if name == stage else v

    monkeypatch.setattr(module, "stage_version", edited)


def edit_adapter(mirror: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Mind2Web adapter now writes a note into every step's reasoning."""
    original = mind2web.expand_action

    def expand(*args, **kwargs):
        return [
            dataclasses.replace(s, thought="noted by the edited adapter") for s in original(*args, **kwargs)
        ]

    monkeypatch.setattr(mind2web, "expand_action", expand)
    _moved_version(source_assets, "episodes", monkeypatch)


def edit_writer(mirror: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The shard writer now tags its files differently."""
    monkeypatch.setattr(libero_hdf5, "TAG", "gui-agent-v1-edited")
    _moved_version(shard_graph, "shards", monkeypatch)
    # An edit on disk also moves the code hash in a shard unit's reuse key (unit_reuse), so the
    # unit is written again rather than linked back; the monkeypatched edit moves it by hand.
    original = unit_reuse._code_version
    monkeypatch.setattr(unit_reuse, "_code_version", lambda: original() + "-edited")


EDITS: dict[str, tuple[Callable[[Path, pytest.MonkeyPatch], None], set[str]]] = {
    # edit -> the partitions it touches
    "upstream": (edit_upstream, {"test_task"}),
    "adapter": (edit_adapter, set(BUILT)),
    "writer": (edit_writer, set(BUILT)),
}


@pytest.mark.slow
@pytest.mark.parametrize("edit", list(EDITS))
def test_rebuilding_what_is_flagged_until_none_is_equals_a_fresh_build(edit, mirror, tmp_path, monkeypatch):
    change, touched = EDITS[edit]
    with dg.instance_for_test() as instance:
        defs = make_defs(tmp_path / "out", mirror)
        observe(defs, instance)
        for key in BUILT:
            build(defs, instance, key)
        assert flagged(defs, instance) == []
        before = {p: outputs(tmp_path / "out", p) for p in BUILT}

        change(mirror, monkeypatch)
        defs = make_defs(tmp_path / "out", mirror)  # a code edit is a new code location load
        observe(defs, instance)
        first = flagged(defs, instance)
        assert {p for _, p in first} == touched, first
        done = rebuild_flagged(defs, instance)
        assert {p for _, p in done} == touched  # the others were never flagged
        # the whole chain of each touched partition was reached, one hop at a time
        assert {k for k, _ in done} >= {"mind2web_shards", "mind2web_dataset_info"}, done

    with dg.instance_for_test() as fresh:
        scratch = make_defs(tmp_path / "scratch", mirror)
        for key in BUILT:
            build(scratch, fresh, key)
    for p in BUILT:
        rebuilt, expected = outputs(tmp_path / "out", p), outputs(tmp_path / "scratch", p)
        assert rebuilt.keys() == expected.keys()
        differ = [name for name in expected if rebuilt[name] != expected[name]]
        assert not differ, (p, differ)
        assert (rebuilt != before[p]) == (p in touched)


def test_a_partition_built_before_any_observation_is_flagged_when_upstream_moves(mirror, tmp_path):
    with dg.instance_for_test() as instance:
        defs = make_defs(tmp_path / "out", mirror)
        for key in BUILT:  # built first, observation switched on later: the README's order
            build(defs, instance, key, ["mind2web"])
        observe(defs, instance)
        assert set(statuses(defs, instance, "mind2web").values()) <= {"FRESH", "MISSING"}
        drop_first_row(mirror, "test_domain-*.parquet")
        observe(defs, instance)
        got = statuses(defs, instance, "mind2web")
        assert got == {
            "train": "MISSING",
            "test_task": "FRESH",
            "test_website": "MISSING",
            "test_domain": "STALE",
        }


def test_a_build_after_upstream_moved_unobserved_records_what_it_read(mirror, tmp_path):
    """Observed, then the files move, then a build before the next observation: the build read
    the new files, so the next observation (of those same files) flags nothing."""
    with dg.instance_for_test() as instance:
        defs = make_defs(tmp_path / "out", mirror)
        observe(defs, instance)
        drop_first_row(mirror, "test_task-*.parquet")
        build(defs, instance, "test_task", ["mind2web"])
        observe(defs, instance)
        assert statuses(defs, instance, "mind2web")["test_task"] == "FRESH"


def test_the_automation_never_starts_a_first_build(mirror, tmp_path):
    with dg.instance_for_test() as instance:
        defs = make_defs(tmp_path / "out", mirror)
        build(defs, instance, "test_task")  # one partition built; three never were
        observe(defs, instance)  # the first observation: every partition's version is "new"
        evaluated = dg.evaluate_automation_conditions(defs=defs, instance=instance)
        assert evaluated.total_requested == 0
        for name in ("train-*", "test_task-*"):  # a never-built partition and a built one move
            drop_first_row(mirror, f"{name}.parquet")
        observe(defs, instance)
        evaluated = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=evaluated.cursor)
        requested = {k: set(evaluated.get_requested_partitions(dg.AssetKey(k))) for k in CHAIN}
        assert requested == {k: {"test_task"} for k in CHAIN}
