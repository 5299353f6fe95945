"""A source really is one folder (and one folder of tests).

The package and its tests are copied to a temp folder; a new source is added there by creating
only `gui_assets/sources/newsrc/` (its declaration, adapter and demo generator) and
`gui_assets_tests/sources/newsrc/`. `gui-assets docs` then generates its page and the README's
row, and nothing else in the copy differs from the checkout. In that copy the structural tests
(asset graph, checks per asset, layering, the toy source, the generated docs, the adapter's
documented drops, the fuzz targets) pass with the new source among them, and the CLI builds its
partition from the demo mirror the resources generate (which now has its part).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gui_assets_tests.conftest import clean_env

ROOT = Path(__file__).resolve().parents[2]
REPO = "newsrc-org/newsrc"

ADAPTER = '''"""A new source (`newsrc-org/newsrc`, `data/<key>.jsonl`): one episode per line,
{id, instruction, steps: [{image, click}]}, screenshots under `images/`, clicks normalized.

Drop reasons:
    malformed_json            a line that is not JSON
    missing_screenshot        a step whose image is not there
    empty_episode             a line none of whose steps survived
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from gui_assets.sources.assembly import AdapterRun, Steps
from gui_assets.core.drops import Drop, DropReason
from gui_assets.core.ir import POINT_MASK, ActionType, GuiEpisode, SourceRef, step_builder

REPO_ID = "newsrc-org/newsrc"
PARTITIONS = ("alpha",)
DROPS = {DropReason.MALFORMED_JSON, DropReason.MISSING_SCREENSHOT, DropReason.EMPTY_EPISODE}


def file_patterns(key: str) -> list[str]:
    return [f"data/{key}.jsonl", "images/"]


def episodes(run: AdapterRun) -> Iterator[GuiEpisode]:
    (lines,) = run.raw.find("data/*.jsonl")
    for row_no, line in run.candidates(enumerate(Path(lines.local).read_text().splitlines())):
        try:
            rec = json.loads(line)
        except ValueError:
            run.drop(DropReason.MALFORMED_JSON)
            continue
        steps = Steps()
        for i, s in enumerate(rec["steps"]):
            try:
                image = run.raw.root / "images" / s["image"]
                if not image.is_file():
                    raise Drop(DropReason.MISSING_SCREENSHOT, s["image"])
                obs = run.observe(image.read_bytes())
            except Drop as e:
                run.drop(e.reason)
                continue
            ref = SourceRef(run.raw.repo_id, lines.path, row=row_no, member=f"steps[{i}]")
            steps.add(step_builder(obs, ref)(ActionType.CLICK, tuple(s["click"]), POINT_MASK))
        episode = run.episode(rec["id"], rec["instruction"], steps, True, {"newsrc_id": rec["id"]})
        if episode is not None:
            yield episode
'''

DEMO = '''"""A small newsrc mirror: `newsrc-org/newsrc/data/alpha.jsonl` and its screenshots."""

from __future__ import annotations

import json
from pathlib import Path

from gui_assets.sources.demo_render import encode, render_page
from gui_assets.sources.newsrc.adapter import REPO_ID


def write_mirror(root: Path) -> Path:
    repo = root / REPO_ID
    (repo / "images").mkdir(parents=True, exist_ok=True)
    (repo / "data").mkdir(exist_ok=True)
    for i in range(3):
        (repo / "images" / f"s{i}.png").write_bytes(encode(render_page(i, 640, 480, [], "newsrc"), "png"))
    clicks = [[0.2, 0.3], [0.8, 0.7], [0.2, 0.75]]
    around = [{"image": f"s{i}.png", "click": c} for i, c in enumerate(clicks)]
    twice = [{"image": "s2.png", "click": [0.7, 0.2]}, {"image": "nope.png", "click": [0.1, 0.1]}]
    lines = [
        {"id": "e1", "instruction": "click around", "steps": around},
        {"id": "e2", "instruction": "click twice", "steps": twice},
        {"id": "e3", "instruction": "nothing", "steps": [{"image": "nope.png", "click": [0.5, 0.5]}]},
    ]
    (repo / "data" / "alpha.jsonl").write_text("\\n".join([*map(json.dumps, lines), "{not json"]) + "\\n")
    return repo
'''

TEST = '''"""The newsrc adapter over its demo part."""

from gui_assets.sources.newsrc import demo
from gui_assets.sources.newsrc.source import SPEC as NEWSRC
from gui_assets_tests.conftest import run_adapter


def test_newsrc_reads_its_demo_part_and_counts_what_it_drops(tmp_path):
    demo.write_mirror(tmp_path / "mirror")
    episodes, stats = run_adapter(NEWSRC, tmp_path / "mirror", "alpha", tmp_path)
    assert [e.episode_id for e in episodes] == ["newsrc/e1", "newsrc/e2"]
    assert stats.drops == {"empty_episode": 1, "malformed_json": 1, "missing_screenshot": 2}
'''

SOURCE = '''"""The newsrc declaration."""

from gui_assets.core.splits import shipped_split
from gui_assets.sources.newsrc import adapter, demo
from gui_assets.sources.spec import SourceSpec

SPEC = SourceSpec(
    name="newsrc",
    repo_id=adapter.REPO_ID,
    partition_keys=adapter.PARTITIONS,
    file_patterns=adapter.file_patterns,
    adapter=adapter.episodes,
    split_rule=shipped_split,
    description="A new source added by the registry test.",
    license="mit",
    platform="desktop",
    scrolls=False,
    demo=demo.write_mirror,
)
'''

# The structural tests, with what the new source must add to each (its parametrized ids).
STRUCTURAL = [
    "gui_assets_tests/defs/test_asset_graph.py",
    "gui_assets_tests/defs/test_toy_source.py",
    "gui_assets_tests/sources/newsrc/test_newsrc.py",
    "gui_assets_tests/test_layering.py",
    "gui_assets_tests/cli/test_source_docs.py",
    "gui_assets_tests/test_fuzz.py::test_every_registered_source_is_a_target_on_a_partition_it_has",
    # the new source's case only: it alone needs the new demo part (the others run in this suite)
    "gui_assets_tests/test_fuzz.py::test_every_registered_source_s_raw_files_can_be_damaged[newsrc]",
]
NEW_IDS = [
    "test_groups_partitions_kinds_owners_and_versions[newsrc] PASSED",
    "test_each_source_has_its_six_checks_on_the_assets_they_judge[newsrc] PASSED",
    "test_each_registered_source_is_selected_by_its_name_and_group[newsrc] PASSED",
    "test_each_adapter_docstring_lists_exactly_the_reasons_it_can_emit[newsrc] PASSED",
    "test_every_registered_source_s_raw_files_can_be_damaged[newsrc] PASSED",
]


def add_source(copy: Path) -> None:
    """The new source's folder and its tests folder: nothing else is written."""
    package = copy / "gui_assets" / "sources" / "newsrc"
    tests = copy / "gui_assets_tests" / "sources" / "newsrc"
    package.mkdir()
    tests.mkdir()
    files = {
        package / "__init__.py": '"""newsrc: a source added by the new-source test."""\n',
        package / "source.py": SOURCE,
        package / "adapter.py": ADAPTER,
        package / "demo.py": DEMO,
        tests / "__init__.py": "",
        tests / "test_newsrc.py": TEST,
    }
    for path, text in files.items():
        path.write_text(text, encoding="utf-8")


def changed_files(copy: Path) -> set[str]:
    """The copy's files that are new or differ from the checkout's (bytecode aside)."""
    changed = set()
    for path in copy.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts and ".pytest_cache" not in path.parts:
            rel = path.relative_to(copy)
            original = ROOT / rel
            if not original.is_file() or original.read_bytes() != path.read_bytes():
                changed.add(str(rel))
    return changed


def copy_project(dest: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
    for folder in ("gui_assets", "gui_assets_tests", "docs"):
        shutil.copytree(ROOT / folder, dest / folder, ignore=ignore)
    for file in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / file, dest / file)
    return dest


@pytest.mark.slow
def test_a_new_source_is_one_folder_and_one_folder_of_tests(tmp_path: Path) -> None:
    copy = copy_project(tmp_path / "copy")
    add_source(copy)
    env = clean_env(PYTHONPATH=str(copy), PYTHONDONTWRITEBYTECODE="1")
    docs = subprocess.run(
        [sys.executable, "-m", "gui_assets.cli.docs"], cwd=copy, env=env, capture_output=True, text=True
    )
    assert docs.returncode == 0, docs.stdout + docs.stderr
    assert changed_files(copy) == {
        "gui_assets/sources/newsrc/__init__.py",
        "gui_assets/sources/newsrc/source.py",
        "gui_assets/sources/newsrc/adapter.py",
        "gui_assets/sources/newsrc/demo.py",
        "gui_assets_tests/sources/newsrc/__init__.py",
        "gui_assets_tests/sources/newsrc/test_newsrc.py",
        "docs/sources/newsrc.md",  # generated from the folder
        "README.md",  # its row of the sources table, generated likewise
    }
    tests = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:warnings",
            "-n",
            "0",
            "-v",
            "-rf",
            *STRUCTURAL,
        ],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert tests.returncode == 0, tests.stdout[-4000:] + tests.stderr[-2000:]
    missing = [i for i in NEW_IDS if i not in tests.stdout]
    assert not missing, (missing, tests.stdout[-3000:])

    out = tmp_path / "out"
    materialize = ["asset", "materialize", "-m", "gui_assets.definitions", "--select", "newsrc*"]
    cli = subprocess.run(
        [sys.executable, "-m", "dagster", *materialize, "--partition", "alpha"],
        cwd=tmp_path,
        env={**env, "GUI_ASSETS_OUT": str(out)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert cli.returncode == 0, cli.stdout[-3000:] + cli.stderr[-3000:]
    assert (out / "_work" / "demo_mirror" / REPO / "data" / "alpha.jsonl").is_file()  # its demo part
    info = json.loads((out / "newsrc_alpha" / "dataset_info.json").read_text(encoding="utf-8"))
    shards = [s["file"] for s in info["shards"]]
    assert shards == ["newsrc_alpha_0000.hdf5"] and (out / "newsrc_alpha" / shards[0]).is_file()
    assert info["stats"]["episodes_out"] == 2 and info["stats"]["steps"] == 4
    assert (
        info["build"]["demo_mirror"] is True
        and info["build"]["adapter"] == "gui_assets.sources.newsrc.adapter"
    )
    assert info["build"]["upstream"]["repo_id"] == REPO
