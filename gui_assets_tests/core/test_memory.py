"""The allocator settings of a build process (gui_assets.core.memory): environment variables that
glibc and Arrow read when a process starts, never set by the package in a running process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gui_assets.core.memory import BUILD_PROCESS_ENV, build_process_env

REPO = Path(__file__).resolve().parents[2]


def _arrow_pool(env: dict[str, str]) -> str:
    code = "import pyarrow as pa; print(pa.default_memory_pool().backend_name)"
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout.strip()


def test_a_process_started_with_the_settings_allocates_arrow_through_malloc():
    unset = {k: v for k, v in os.environ.items() if k not in BUILD_PROCESS_ENV}
    assert _arrow_pool(build_process_env(unset)) == "system"


def test_a_value_the_user_chose_stands():
    env = build_process_env({"MALLOC_ARENA_MAX": "4", "PATH": "/bin"})
    assert env["MALLOC_ARENA_MAX"] == "4" and env["PATH"] == "/bin"
    assert env["ARROW_DEFAULT_MEMORY_POOL"] == BUILD_PROCESS_ENV["ARROW_DEFAULT_MEMORY_POOL"]


def test_loading_the_definitions_leaves_the_allocators_and_the_collector_alone():
    """The code location's load changes no process setting: Arrow's pool is the one the process
    started with, the collector is on and freezes nothing, no exit hook of ours is registered."""
    probe = (
        "import atexit, gc, json\n"
        "hooks = []\n"
        "register = atexit.register\n"
        "def recording(fn, *args, **kwargs):\n"
        "    hooks.append(f\"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', '')}\")\n"
        "    return register(fn, *args, **kwargs)\n"
        "atexit.register = recording\n"
        "import gui_assets.definitions\n"
        "import pyarrow as pa\n"
        "ours = [h for h in hooks if h.startswith(('gui_assets', 'gc.'))]\n"
        "pool = pa.default_memory_pool().backend_name\n"
        "print(json.dumps([pool, gc.isenabled(), gc.get_freeze_count(), ours]))\n"
    )
    unset = {k: v for k, v in os.environ.items() if k not in BUILD_PROCESS_ENV}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=unset)
    assert json.loads(out.stdout) == [_arrow_pool(unset), True, 0, []]


@pytest.mark.parametrize("path", ["deploy/Dockerfile"])
def test_the_container_image_starts_build_processes_with_the_settings(path):
    text = (REPO / path).read_text(encoding="utf-8")
    for name, value in BUILD_PROCESS_ENV.items():
        assert f"{name}={value}" in text, (path, name)
