"""Publishing: the preview config, the dataset card, uploads with resume, the cua-lite export."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml

from gui_assets.core.atomic import sha256_file
from gui_assets.core.episode_store import ImageStore, iter_episodes
from gui_assets.core.images import decode_rgb
from gui_assets.core.ir import ActionType, GuiEpisode, GuiStep, view_direction
from gui_assets.core.layout import DatasetInfo, OutLayout, built_directories
from gui_assets.pipeline.chain import RawSettings, build_directory
from gui_assets.publish import card, cua_lite, hub, preview
from gui_assets.sources.agentnet.source import SPEC as AGENTNET
from gui_assets.sources.cuagym.source import SPEC as CUAGYM
from gui_assets.sources.mind2web.source import SPEC as MIND2WEB
from gui_assets.sources.weblinx.source import SPEC as WEBLINX
from gui_assets_tests.conftest import run_adapter


@pytest.fixture(scope="module")
def built(demo_mirror, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("publish")
    for spec, key in ((MIND2WEB, "train"), (MIND2WEB, "test_task"), (AGENTNET, "ubuntu"), (WEBLINX, "valid")):
        build_directory(spec, key, out, RawSettings(mode="mirror", mirror=demo_mirror))
    return out


def test_the_preview_decodes_with_datasets(built):
    import datasets  # a pinned dev dependency: the loader the hub viewer uses

    r = preview.write_preview(built, count=40, seed=3)
    ds = datasets.load_dataset("parquet", data_files=r["path"], split="train")
    assert len(ds) == r["rows"] and set(r["per_directory"]) == {
        "mind2web_train",
        "mind2web_test_task",
        "agentnet_ubuntu",
        "weblinx_valid",
    }
    row = ds[0]
    assert row["frame"].size[0] == 640 and row["eye_in_hand"].size == (128, 128)  # PIL images, decoded
    assert row["action_type"] in {t.name for t in ActionType} and len(row["action_params"]) == 4
    again = preview.write_preview(built, count=40, seed=3)
    assert Path(again["path"]).read_bytes() == Path(r["path"]).read_bytes()  # seeded: the same sample


def test_the_card_yaml_names_the_preview_and_its_tables_match_the_files(built):
    preview.write_preview(built, count=20)
    card.write_card(built, "org/gui-agent")
    text = (built / "README.md").read_text()
    meta = yaml.safe_load(text.split("---")[1])
    assert meta["license"] == "other" and meta["license_link"] == "LICENSE.md" and meta["license_name"]
    assert meta["task_categories"] and meta["language"] == ["en"] and meta["size_categories"] == ["n<1K"]
    licence = (built / "LICENSE.md").read_text()
    assert "xlangai/AgentNet" in licence and "cc-by-4.0" in licence
    assert "json.loads" in text and "agentview_hw" in text  # what LIBERO-style loaders can do, said
    assert meta["configs"] == [
        {"config_name": "preview", "data_files": [{"split": "sample", "path": "preview/*.parquet"}]}
    ]
    assert list(built.glob("preview/*.parquet"))
    for p in built.glob("*/dataset_info.json"):
        info = DatasetInfo.read(p)
        row = next(line for line in text.splitlines() if line.startswith(f"| {info.directory}/ |"))
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[3:6] == [
            f"{sum(s.demos for s in info.shards):,}",
            f"{sum(s.steps for s in info.shards):,}",
            str(len(info.shards)),
        ]
    assert "Holdout shards" in text and "xlangai/AgentNet" in text and "osunlp/Multimodal-Mind2Web" in text
    # datasets' HDF5 builder misreads the layout: said, with what to use instead
    assert "HDF5 builder" in text and "`preview` config" in text
    assert "LeRobotDataset" not in text  # no LeRobot export in this build: not offered


def test_a_card_of_a_build_with_the_lerobot_export_says_how_to_load_it(built):
    text = card.card_text(built_directories(built), "org/gui-agent", lerobot=True)
    first = built_directories(built)[0].directory
    assert f"--include 'lerobot/{first}/*' --local-dir gui" in text
    assert f'LeRobotDataset("org/gui-agent", root="gui/lerobot/{first}")' in text
    assert "action_mask" in text and "features.action_type.labels" in text  # what to train on


def test_an_interrupted_upload_resumes_without_resending_finished_files(built, tmp_path):
    files = [
        (f"{d.name}/{p.name}", p)
        for d in sorted(built.glob("*_*"))
        if (d / "dataset_info.json").exists()
        for p in sorted(d.iterdir())
    ]
    target = hub.LocalHubTarget(tmp_path / "hub", fail_after=3)
    with pytest.raises(hub.UploadError, match="after 3 attempts"):
        hub.upload(files, target, "first try", retries=2, sleep=lambda s: None)
    assert len(list((tmp_path / "hub").rglob("*.*"))) == 3  # the connection dropped after 3 files
    result = hub.upload(files, hub.LocalHubTarget(tmp_path / "hub"), "rerun", sleep=lambda s: None)
    assert len(result.skipped) == 3 and len(result.uploaded) == len(files) - 3
    again = hub.upload(files, hub.LocalHubTarget(tmp_path / "hub"), "nothing new")
    assert again.uploaded == [] and len(again.skipped) == len(files)
    for repo_path, local in files:
        assert (tmp_path / "hub" / repo_path).read_bytes() == local.read_bytes()
    # the target answers for the paths asked about only: a partition's upload never hashes the rest
    asked = {files[0][0], "not/there.hdf5"}
    assert set(hub.LocalHubTarget(tmp_path / "hub").holds(asked)) == {files[0][0]}
    assert again.digests == {p: sha256_file(local) for p, local in files}


def test_a_local_target_links_the_build_and_a_second_upload_reads_nothing(built, tmp_path, monkeypatch):
    folder = built / "mind2web_train"
    info = DatasetInfo.read(folder / "dataset_info.json")
    files = [(f"mind2web_train/{p.name}", p) for p in sorted(folder.iterdir())]
    known = hub.recorded_digests(info, folder)
    assert set(known) == {f"mind2web_train/{e.file}" for e in info.shards + info.val_shards} and known
    hashed: list[Path] = []

    def counting_sha256(p: Path) -> str:
        hashed.append(p)
        return sha256_file(p)

    monkeypatch.setattr(
        "gui_assets.core.atomic.sha256_file", counting_sha256
    )  # under hub.upload's sha256_files
    monkeypatch.setattr("gui_assets.sources.mirror.sha256_file", counting_sha256)
    target = hub.LocalHubTarget(tmp_path / "hub", hash_cache=tmp_path / "cache.json")
    first = hub.upload(files, target, "first", known=known)
    assert target.placed == {"link": len(files)}  # same file system: no byte copied
    assert {p.name for p in hashed} == {p.name for _, p in files} - {e.file for e in info.shards}
    for repo_path, local in files:
        assert (tmp_path / "hub" / repo_path).samefile(local)
    assert first.digests == {p: sha256_file(local) for p, local in files}  # recorded digests are true
    hashed.clear()
    again = hub.upload(files, hub.LocalHubTarget(tmp_path / "hub"), "again", known=known)
    assert again.uploaded == [] and [p for p in hashed if p.suffix == ".hdf5"] == []

    # a rebuilt file is a new file (the build replaces by rename): it is sent, the old link kept apart
    shard = folder / info.shards[0].file
    copy = tmp_path / "rebuilt.hdf5"
    shutil.copyfile(shard, copy)
    with open(copy, "r+b") as f:
        f.seek(-1, 2)
        f.write(b"\x01")
    repo_path = f"mind2web_train/{shard.name}"
    changed = [(repo_path, copy)]
    third = hub.upload(changed, hub.LocalHubTarget(tmp_path / "hub"), "rebuilt")
    assert third.uploaded == [repo_path] and (tmp_path / "hub" / repo_path).read_bytes() == copy.read_bytes()
    assert shard.read_bytes() != copy.read_bytes()  # the build's own file was not touched through the link


def test_a_target_on_another_file_system_gets_a_copy(built, tmp_path, monkeypatch):
    def no_links(src, dst):
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(hub.os, "link", no_links)
    local = next((built / "agentnet_ubuntu").glob("*.hdf5"))
    how = hub.place(local, tmp_path / "hub" / local.name)
    assert how in {"reflink", "copy"} and (tmp_path / "hub" / local.name).read_bytes() == local.read_bytes()
    assert not (tmp_path / "hub" / local.name).samefile(local)


class FakeHubApi:
    """The hub itself cannot exist here: an HfApi stand-in recording commits and dropping some."""

    def __init__(self, fail_commits: int = 0) -> None:
        from huggingface_hub.errors import HfHubHTTPError

        self.files: dict[str, str] = {}
        self.commits: list[list[str]] = []
        self.fail_commits = fail_commits
        self.error = HfHubHTTPError

    def list_repo_tree(self, repo_id, repo_type, recursive):  # the whole repo, as the hub answers
        from types import SimpleNamespace

        return [
            SimpleNamespace(path=p, lfs=SimpleNamespace(sha256=sha), blob_id=None)
            for p, sha in self.files.items()
        ]

    def create_repo(self, repo_id, repo_type, exist_ok):
        return None

    def create_commit(self, repo_id, repo_type, operations, commit_message):
        from gui_assets.core.atomic import sha256_file

        if self.fail_commits:
            self.fail_commits -= 1
            raise ConnectionResetError("the connection dropped mid-commit")
        self.commits.append([op.path_in_repo for op in operations])
        for op in operations:
            self.files[op.path_in_repo] = sha256_file(Path(op.path_or_fileobj))


def test_hub_uploads_batch_retry_and_skip_what_the_repo_holds(built, monkeypatch):
    monkeypatch.setattr(hub, "BATCH_FILES", 2)
    files = [(f"mind2web_train/{p.name}", p) for p in sorted((built / "mind2web_train").iterdir())]
    files += [(f"agentnet_ubuntu/{p.name}", p) for p in sorted((built / "agentnet_ubuntu").iterdir())]
    api = FakeHubApi(fail_commits=1)
    target = hub.HfHubTarget("org/gui-agent", token="hf_never_used_here", api=api)
    r = hub.upload(files, target, "upload", sleep=lambda s: None)
    assert r.retries == 1 and r.batches == 3 and all(len(c) <= 2 for c in api.commits)
    assert set(api.files) == {p for p, _ in files}
    again = hub.upload(files, target, "upload")
    assert again.uploaded == [] and api.commits[-1] != []  # nothing re-sent


def _read_back_as(orig: GuiEpisode) -> list[tuple[GuiStep, str]]:
    """The steps the Lite.CUAGym adapter reads back from an episode's cua-lite row, each with the
    text it reads: a key sequence is a call of several key actions, one step each; goto() is a
    standalone tool the adapter skips (non_gui_tool); a STOP is the final "Done." turn (no call)
    unless it answers (response), a FAIL only others.terminate_status; a grounded TYPE is a click at
    its point, then the typing. The row ends before a pointer step whose point was never located
    (only a click recorded with no point, `no_point`, is a click where the pointer is)."""
    back: list[tuple[GuiStep, str]] = []
    pointers = (ActionType.CLICK, ActionType.SELECT, ActionType.HOVER, ActionType.DRAG, ActionType.SCROLL)
    for s in orig.steps:
        if s.action_type in pointers and not s.grounded and s.ungrounded_reason != "no_point":
            break
        if s.action_type in (ActionType.STOP, ActionType.FAIL):
            back += [(s, s.text)] if s.action_type == ActionType.STOP and s.text else []
            break
        if s.action_type == ActionType.PRESS_KEY:
            back += [(s, chord) for chord in s.text.split(" ")]
        elif s.action_type == ActionType.TYPE and s.grounded:  # a click where it typed, then the typing
            click = dataclasses.replace(s, action_type=ActionType.CLICK, params=(*s.params[:2], 0.0, 0.0))
            back += [(click, ""), (s, s.text)]
        elif s.action_type != ActionType.GOTO:
            back.append((s, s.text))
    return back


def test_the_cua_lite_export_round_trips_into_the_ir(built, tmp_path):
    r = cua_lite.write_export(built)
    root = Path(r["root"])
    assert set(r["files"]) == {
        "cua-lite/GuiAgent/browser/use/train/mind2web_train.parquet",
        "cua-lite/GuiAgent/browser/use/validation/mind2web_test_task.parquet",  # a benchmark test split
        "cua-lite/GuiAgent/browser/use/validation/weblinx_valid.parquet",
        "cua-lite/GuiAgent/desktop/use/train/agentnet_ubuntu.parquet",
        "cua-lite/GuiAgent/desktop/use/validation/agentnet_ubuntu.parquet",  # the holdout
    }
    table = pq.read_table(root / "cua-lite/GuiAgent/browser/use/train/mind2web_train.parquet").to_pylist()
    for row in table:
        assert all((root / p).is_file() for p in row["images"])
        msgs = json.loads(row["messages"])
        for m in msgs:
            for call in m.get("tool_calls", []):
                for a in call["function"]["arguments"].get("actions", []):
                    for key in ("coordinate", "start_coordinate"):
                        if key in a:
                            assert all(isinstance(c, int) and 0 <= c <= 1000 for c in a[key])
    originals = {}
    layout = OutLayout(built)
    for d in ("mind2web_train", "mind2web_test_task", "agentnet_ubuntu", "weblinx_valid"):
        originals.update({e.episode_id: e for e in iter_episodes(layout.episodes(d))})
    rows = {
        json.loads(row["metadata"])["others"]["id"]: row
        for f in r["files"]
        for row in pq.read_table(root / f).to_pylist()
    }
    back = []
    export = dataclasses.replace(CUAGYM, repo_id="cua-lite/GuiAgent")
    for partition in ("browser_use", "desktop_use"):
        back += run_adapter(export, root, partition, tmp_path / "readback")[0]
    exported = {e for e, orig in originals.items() if _read_back_as(orig)}  # the others: no_action
    assert {e.attrs["task_id"] for e in back} == exported == set(rows)
    assert r["left_out"]["episodes"].get("no_action", 0) >= len(originals) - len(exported) > 0
    for ep in back:
        orig = originals[ep.attrs["task_id"]]
        expected = _read_back_as(orig)
        assert len(ep.steps) == len(expected), ep.attrs["task_id"]
        for (a, text), b in zip(expected, ep.steps, strict=True):
            want = {ActionType.SELECT: ActionType.CLICK}.get(a.action_type, a.action_type)
            assert b.action_type == (ActionType.PRESS_ENTER if text == "enter" else want)
            assert b.thought == a.thought  # dataset reasoning travels as inline_reasoning
            if a.action_type == ActionType.SCROLL and a.grounded:
                # cua-lite scrolls in whole amounts (0.05 of the frame each): same start, same view
                # direction, the travel within half a unit
                assert b.params[:2] == pytest.approx(a.params[:2], abs=1e-3)
                assert view_direction(b.params) == view_direction(a.params)
                travel = max(abs(a.params[2] - a.params[0]), abs(a.params[3] - a.params[1]))
                back_travel = max(abs(b.params[2] - b.params[0]), abs(b.params[3] - b.params[1]))
                assert abs(back_travel - travel) <= 0.025 + 1e-3
            elif a.grounded and a.action_type != ActionType.TYPE:
                assert b.params == pytest.approx(a.params, abs=1e-3)
            if a.action_type in (ActionType.TYPE, ActionType.PRESS_KEY):
                assert b.text == text
        # what the adapter does not read back is in the row: the urls, how the episode ended
        row = rows[orig.episode_id]
        calls = [c["function"] for m in json.loads(row["messages"]) for c in m.get("tool_calls", [])]
        urls = [s.text for s in orig.steps if s.action_type == ActionType.GOTO]
        assert [c["arguments"]["url"] for c in calls if c["name"] == "goto"] == urls
        last = orig.steps[-1].action_type
        status = {ActionType.STOP: "success", ActionType.FAIL: "failure"}.get(last)
        assert json.loads(row["metadata"])["others"].get("terminate_status") == status
        # the first observation read back is the very window the IR pointed at
        o, r0 = expected[0][0].observation, ep.steps[0].observation
        window = decode_rgb(ImageStore(layout.image_store).get(o.image_sha256, o.image_ext))[
            o.top : o.top + o.height, o.left : o.left + o.width
        ]
        assert np.array_equal(
            window,
            decode_rgb(ImageStore(tmp_path / "readback" / "images").get(r0.image_sha256, r0.image_ext)),
        )
    assert sum(len(_read_back_as(o)) for o in originals.values()) == sum(len(e.steps) for e in back) > 40
    shutil.rmtree(root)


def test_every_directory_gets_a_sample_page_the_card_links(built, tmp_path):
    from gui_assets.viewer.samples import SAMPLES_DIR, write_sample_pages

    out = tmp_path / "out"
    shutil.copytree(built, out, symlinks=True)
    (out / SAMPLES_DIR).mkdir()
    (out / SAMPLES_DIR / "gone_directory.html").write_text("an old page")  # no longer built
    directories = [i.directory for i in card.built_directories(out)]
    pages = write_sample_pages(out, directories)
    assert set(pages) == set(directories)
    assert sorted(p.name for p in (out / SAMPLES_DIR).iterdir()) == sorted(f"{d}.html" for d in directories)
    for directory, page in pages.items():
        html = page.read_text(encoding="utf-8")
        data = json.loads(
            html.split('<script type="application/json" id="viewer-data">')[1].split("</script>")[0]
        )
        assert json.dumps(data).count(directory) > 0 and "/static/" not in html  # self-contained
    r = card.write_card(out, "owner/name", set(pages))
    text = Path(r["path"]).read_text(encoding="utf-8")
    assert "## See a demonstration" in text
    for directory in directories:
        assert f"(samples/{directory}.html)" in text
    assert "## See a demonstration" not in card.card_text(card.built_directories(out), "owner/name")


def test_a_connection_error_wrapped_by_the_client_is_retried_and_others_are_not(built, tmp_path):
    """huggingface_hub gives up with a RuntimeError whose cause is the dropped connection."""
    files = [(p.relative_to(built).as_posix(), p) for p in sorted(built.glob("*/dataset_info.json"))]

    class WrappedDrops(hub.LocalHubTarget):
        failures = 2

        def send(self, batch, message):
            if self.failures:
                self.failures -= 1
                try:
                    raise ConnectionResetError("peer dropped the upload")
                except ConnectionResetError as e:
                    raise RuntimeError("the upload failed after its retries") from e
            super().send(batch, message)

    target = WrappedDrops(tmp_path / "repo")
    r = hub.upload(files, target, "up", sleep=lambda s: None)
    assert r.retries == 2 and sorted(r.uploaded) == sorted(p for p, _ in files)
    for path, local in files:
        assert (tmp_path / "repo" / path).read_bytes() == local.read_bytes()

    class Refused(hub.LocalHubTarget):
        def send(self, batch, message):
            raise RuntimeError("bad request: the repo refused the commit")

    with pytest.raises(hub.UploadError, match="after 1 attempts"):
        hub.upload(files, Refused(tmp_path / "other"), "up", sleep=lambda s: None)
