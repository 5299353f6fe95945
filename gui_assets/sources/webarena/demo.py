"""A small WebArena mirror: `webarena/human_trajectories/<task_id>.zip` + `config_files/test.raw.json`.

The two traces are real Playwright recordings shipped in `data/` beside this module (see its NOTICE);
the config holds their real task rows. A copy under a task_id the config does not know, and a
trace cut short, exercise the adapter's drop reasons.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from gui_assets.sources.webarena.adapter import REPO_ID

DATA = Path(__file__).parent / "data"


def write_mirror(root: Path) -> Path:
    repo = root / REPO_ID
    traces = repo / "human_trajectories"
    traces.mkdir(parents=True, exist_ok=True)
    (repo / "config_files").mkdir(exist_ok=True)
    shutil.copy(DATA / "test.raw.subset.json", repo / "config_files" / "test.raw.json")
    for task_id in ("274", "275"):
        shutil.copy(DATA / f"{task_id}.zip", traces / f"{task_id}.zip")
    shutil.copy(DATA / "274.zip", traces / "9999.zip")  # not a WebArena task: task_not_in_config
    (traces / "276.zip").write_bytes((DATA / "275.zip").read_bytes()[:4000])  # cut short: truncated_archive
    return repo
