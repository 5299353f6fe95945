"""Code versions move exactly when the code an asset runs moves.

In a copy of the package, each module gets a statement added in turn; the assets whose
code_version moves must be exactly those whose stage imports that module (directly or through
others). Which modules a stage imports is found here independently of gui_assets.pipeline.lineage: by
importing the stage in a fresh interpreter and listing what got loaded. A comment, a docstring
or a reformat moves nothing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gui_assets.core.code_version import PACKAGE_DIR
from gui_assets.pipeline import lineage
from gui_assets.pipeline.lineage import STAGE_MODULES, stage_version
from gui_assets.sources.registry import SOURCES

PACKAGE = PACKAGE_DIR
SOURCE_STAGES = ("raw", "episodes", "splits", "shards", "dataset_info", "upload")
REPO_STAGES = (
    "preview",
    "screen_overlap",
    "dataset_card",
    "hub_card",
    "cua_lite_export",
    "lerobot_export",
    "hub_lerobot",
)

# Imports `roots` from the copy (a package module whose __path__ is the copy, so the installed
# package is never read), then prints every gui_assets module that got loaded.
_PROBE = textwrap.dedent(
    """
    import importlib, json, sys, types
    pkg = types.ModuleType("gui_assets")
    pkg.__path__ = [sys.argv[1]]
    sys.modules["gui_assets"] = pkg
    for root in json.loads(sys.argv[2]):
        importlib.import_module(root)
    print(json.dumps(sorted(m for m in sys.modules if m.startswith("gui_assets."))))
    """
)


def asset_roots() -> dict[str, tuple[str, ...]]:
    """Every asset and the modules its code_version starts from (what its body calls)."""
    out: dict[str, tuple[str, ...]] = {}
    for spec in SOURCES:
        for stage in SOURCE_STAGES:
            extra, _ = lineage._spec_roots_and_data(stage, spec)
            out[f"{spec.name}_{stage}"] = (*STAGE_MODULES[stage], *extra)
    for stage in REPO_STAGES:
        out[stage] = STAGE_MODULES[stage]
    return out


def versions(package_dir: Path) -> dict[str, str]:
    out = {f"{s.name}_{st}": stage_version(st, s, package_dir) for s in SOURCES for st in SOURCE_STAGES}
    out.update({st: stage_version(st, None, package_dir) for st in REPO_STAGES})
    return out


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dst = tmp_path_factory.mktemp("pkg") / "gui_assets"
    shutil.copytree(PACKAGE, dst, ignore=shutil.ignore_patterns("__pycache__", "data"))
    return dst


@pytest.fixture(scope="module")
def loaded(copy: Path) -> dict[str, set[str]]:
    """asset -> the gui_assets modules importing its roots really loads (a fresh interpreter each)."""
    out: dict[str, set[str]] = {}
    cache: dict[tuple[str, ...], set[str]] = {}
    for asset, roots in asset_roots().items():
        if roots not in cache:
            r = subprocess.run(
                [sys.executable, "-c", _PROBE, str(copy), json.dumps(roots)],
                capture_output=True,
                text=True,
                check=True,
            )
            cache[roots] = set(json.loads(r.stdout))
        out[asset] = cache[roots]
    return out


def edited(path: Path, text: str) -> str:
    before = path.read_text(encoding="utf-8")
    path.write_text(text, encoding="utf-8")
    return before


@pytest.mark.slow
def test_an_edit_moves_exactly_the_assets_that_run_the_module(copy, loaded):
    base = versions(copy)
    modules = sorted(p for p in copy.rglob("*.py") if p != copy / "__init__.py")
    checked = 0
    for path in modules:
        name = ".".join(("gui_assets", *path.relative_to(copy).with_suffix("").parts)).removesuffix(
            ".__init__"
        )
        expected = {a for a, mods in loaded.items() if name in mods}
        before = edited(path, path.read_text(encoding="utf-8") + "\n_LINEAGE_PROBE = 1\n")
        try:
            moved = {a for a, v in versions(copy).items() if v != base[a]}
        finally:
            path.write_text(before, encoding="utf-8")
        assert moved == expected, (name, sorted(moved ^ expected))
        checked += bool(expected)
    assert checked >= 30  # most of the package runs in some stage


def test_one_sources_adapter_leaves_the_other_sources_alone(copy):
    base = versions(copy)
    path = copy / "sources" / "agentnet" / "adapter.py"
    before = edited(
        path, path.read_text(encoding="utf-8").replace("SCROLL_UNIT = {", "SCROLL_UNIT = {**{}, ")
    )
    try:
        moved = {a for a, v in versions(copy).items() if v != base[a]}
    finally:
        path.write_text(before, encoding="utf-8")
    assert moved == {"agentnet_raw", "agentnet_episodes"}  # the adapter module runs in both


@pytest.mark.parametrize(
    ("source", "old", "new"),
    [
        # file_patterns itself
        ("mind2web", 'f"data/{split}-*.parquet",', 'f"data/{split}-*.parquet", "extra/*.parquet",'),
        # a module-level name resolve_patterns reaches through demo_ids
        ("weblinx", 'SPLITS_FILE = "', 'SPLITS_FILE = "x'),
    ],
)
def test_an_edit_of_what_the_raw_stage_calls_moves_raw(copy, source, old, new):
    base = versions(copy)
    path = copy / "sources" / source / "adapter.py"
    text = path.read_text(encoding="utf-8")
    assert old in text
    before = edited(path, text.replace(old, new, 1))
    try:
        moved = {a for a, v in versions(copy).items() if v != base[a]}
    finally:
        path.write_text(before, encoding="utf-8")
    assert {f"{source}_raw", f"{source}_episodes"} <= moved
    assert not {a for a in moved if a.endswith("_raw")} - {f"{source}_raw"}


def test_comments_docstrings_and_formatting_move_nothing(copy):
    base = versions(copy)
    path = copy / "sources" / "mind2web" / "adapter.py"
    text = path.read_text(encoding="utf-8")
    noise = (
        text.replace('"""Multimodal-Mind2Web', '"""Multimodal Mind2Web, reworded')
        .replace(
            "def parse_index(value: Any) -> int:", "def parse_index(  value: Any  ) -> int:  # a comment"
        )
        .replace("\n\n\ndef parse_bbox", "\n\n\n# a comment between functions\n\n\ndef parse_bbox")
    )
    assert noise != text
    before = edited(path, noise)
    try:
        assert versions(copy) == base
    finally:
        path.write_text(before, encoding="utf-8")


def test_the_card_template_moves_the_card_only(copy):
    base = versions(copy)
    path = copy / "publish" / "templates" / "dataset_card.md"
    before = edited(
        path, path.read_text(encoding="utf-8").replace("Do not train on it.", "Never train on it.")
    )
    try:
        moved = {a for a, v in versions(copy).items() if v != base[a]}
    finally:
        path.write_text(before, encoding="utf-8")
    assert moved == {"dataset_card"}


def test_the_declaration_data_a_stage_reads_moves_it():
    import dataclasses

    spec = SOURCES[0]
    renamed = dataclasses.replace(spec, repo_id="someone/else")
    assert stage_version("raw", renamed) != stage_version("raw", spec)
    assert stage_version("episodes", renamed) == stage_version("episodes", spec)
    noted = dataclasses.replace(spec, notes="new card prose")
    assert stage_version("dataset_info", noted) != stage_version("dataset_info", spec)
    assert stage_version("shards", noted) == stage_version("shards", spec)
