"""Peak memory of a real CLI build over forged-size screenshots.

A Multimodal-Mind2Web mirror partition whose screenshots are forged: PNG headers claiming
30000x30000, 12000x90000 (inside Mind2Web's max_image, over a few KB of data) and
200000x200000, JPEG headers claiming 30000x30000 and 65000x65000, three of each, plus one real
1280x20000 page whose views need only its top rows. `dagster asset materialize` builds it in its
own process (the in-process executor: every stage in that process) and the kernel's account of
that process (`os.wait4`'s ru_maxrss, taken by a small launcher: `benchmarks.peak_rss`) is its
peak RSS. The forged images must be dropped by
reason, counted in dataset_info.json, and the tall page's episode built, under PEAK_LIMIT_MB.

Images inside the source's own limit that are no 8-bit RGB(A) PNG (a JPEG, a palette PNG) can
only be decoded whole: the budget is asked for all of it (`images.decode_cost`), so a page too
big for it is left out by name (frame_over_budget), never decoded.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from benchmarks.peak_rss import run_measured
from gui_assets.core import shard_reader
from gui_assets.core.layout import OutLayout
from gui_assets_tests.conftest import WriteMirror, candidate, clean_env, m2w_row, page_bytes
from gui_assets_tests.fuzz_damage import blank_png, forged_jpeg, forged_png

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parents[2]
PEAK_LIMIT_MB = 1000  # under 1 GB for the CLI's whole process
CHAIN = "mind2web,mind2web_episodes,mind2web_splits,mind2web_shards,mind2web_dataset_info"
TALL = "tall-page"


def _noise(i: int, n: int = 4096) -> bytes:
    """Incompressible bytes, different per i: a forged image's "pixel data"."""
    return bytes((j * 2654435761 + i * 40503) >> 7 & 0xFF for j in range(n))


# (task id, screenshot bytes, the drop reason it must be counted under)
FORGED: list[tuple[str, bytes, str]] = [
    *[
        (f"png-30000x30000-{i}", forged_png(30_000, 30_000 + i, _noise(i)), "image_too_large")
        for i in range(3)
    ],
    *[
        (f"png-12000x90000-{i}", forged_png(12_000, 90_000 - i, _noise(i)), "undecodable_image")
        for i in range(3)
    ],
    *[
        (f"png-200000sq-{i}", forged_png(200_000, 200_000 + i, _noise(i)), "undecodable_image")
        for i in range(3)
    ],
    *[(f"jpeg-30000x30000-{i}", forged_jpeg(30_000, 30_000 + i), "image_too_large") for i in range(3)],
    *[(f"jpeg-65000x65000-{i}", forged_jpeg(65_000, 65_000 - i), "undecodable_image") for i in range(3)],
]


def _tall_rows() -> list[dict[str, Any]]:
    """A real 1280x20000 page, two steps: a target near the top, one 5000 px down (scrolled to)."""
    page = page_bytes(1280, 20_000, seed=7)
    return [
        m2w_row(TALL, index=str(i), screenshot=page, pos_candidates=[candidate(rect)])
        for i, rect in enumerate(["100,100,200,50", "300,5000,200,50"])
    ]


def materialize_measured(
    args: list[str], env: dict[str, str], timeout: float = 900
) -> tuple[int, str, float]:
    """`dagster asset materialize -m gui_assets <args>` in its own process: (exit code, output,
    the process's own peak RSS in MB, measured by benchmarks.peak_rss)."""
    cmd = [sys.executable, "-m", "dagster", "asset", "materialize", "-m", "gui_assets", *args]
    with tempfile.TemporaryFile() as out:
        code, peak = run_measured(cmd, REPO_ROOT, env, out, timeout)
        out.seek(0)
        text = out.read().decode("utf-8", errors="replace")
    return code, text, peak


def _build(mirror: Path, tmp: Path) -> tuple[int, str, float, dict[str, Any], Path]:
    home = tmp / "home"
    home.mkdir()
    out = tmp / "out"
    env = clean_env(GUI_ASSETS_MIRROR=str(mirror), GUI_ASSETS_OUT=str(out), DAGSTER_HOME=str(home))
    code, text, peak = materialize_measured(["--select", CHAIN, "--partition", "train"], env)
    info_path = out / "mind2web_train" / "dataset_info.json"
    info = json.loads(info_path.read_text(encoding="utf-8")) if info_path.is_file() else {}
    return code, text, peak, info, OutLayout(out).directory("mind2web_train")


def _tall_episode_steps(directory: Path) -> int:
    shards = shard_reader.shard_files(directory, "mind2web_train")
    steps = [
        int(demo.attrs["num_samples"])
        for _, demo in shard_reader.demos(shards)
        if demo.attrs["episode_id"] == f"mind2web/{TALL}"
    ]
    assert len(steps) == 1, steps
    return steps[0]


def test_a_partition_of_forged_sizes_builds_by_the_cli_under_1_gb(
    write_m2w: WriteMirror, tmp_path: Path, record_property: Any
) -> None:
    forged = [m2w_row(task, screenshot=data) for task, data, _ in FORGED]
    mirror = write_m2w([forged[: len(forged) // 2] + _tall_rows(), forged[len(forged) // 2 :]])
    code, text, peak, info, directory = _build(mirror, tmp_path)
    assert code == 0, text[-4000:]
    drops = info["stats"]["drops"]
    expected: dict[str, int] = {}
    for _, _, reason in FORGED:
        expected[reason] = expected.get(reason, 0) + 1
    assert {r: drops.get(r, 0) for r in expected} == expected, drops
    assert drops.get("empty_episode") == len(FORGED), drops  # each forged task had that one step
    assert info["stats"]["episodes_out"] == 1, info["stats"]
    assert _tall_episode_steps(directory) >= 2  # both steps, and the scroll to the second
    record_property("cli_peak_rss_mb", round(peak))
    assert peak < PEAK_LIMIT_MB, f"the CLI's peak RSS was {peak:.0f} MB (limit {PEAK_LIMIT_MB} MB)"


def test_plausible_forged_sizes_decode_only_what_the_budget_granted(
    write_m2w: WriteMirror, tmp_path: Path
) -> None:
    """Inside Mind2Web's max_image: a JPEG header claiming 6000x30000 over 824 bytes, and a real
    12000x10000 palette PNG of ~120 KB. Neither decodes partially, and whole each needs more than
    the 512 MB budget: both are left out by name before a buffer is allocated."""
    rows = [m2w_row("jpeg-6000x30000", screenshot=forged_jpeg(6_000, 30_000))]
    rows += [m2w_row("palette-12000x10000", screenshot=blank_png(12_000, 10_000))]
    mirror = write_m2w([rows + _tall_rows()])
    code, text, peak, info, directory = _build(mirror, tmp_path)
    assert code == 0, text[-4000:]
    stats = info["stats"]
    # Each plausible page is either built (decoded only as far as needed) or left out by a reason.
    assert stats["episodes_out"] + sum(stats["drops_by_unit"].get("episode", {}).values()) == 3, stats
    assert stats["drops"].get("frame_over_budget") == 2, stats["drops"]
    assert _tall_episode_steps(directory) >= 2
    assert peak < PEAK_LIMIT_MB, f"the CLI's peak RSS was {peak:.0f} MB (limit {PEAK_LIMIT_MB} MB)"
