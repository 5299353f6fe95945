"""The screen-overlap audit at full scale: a simulated build of 453,264 fingerprinted steps.

    python -m benchmarks.screen_overlap                    # simulate, then time the audit
    python -m benchmarks.screen_overlap --steps 100000 --work /tmp/overlap-bench

No frames: the build is simulated at the level the audit reads, each directory's
dataset_info.json (its split role) and `_work/<dir>/fingerprints.parquet`. The audit
(gui_assets.publish.screen_overlap.audit: load every table, the exact join, the parquet, the
summary) then runs in a process of its own, timed, its peak RSS measured (benchmarks.peak_rss).

The fingerprints imitate real GUI data, not uniform noise, because the join's cost is in its
collisions: each directory draws its screens from sites; a site is a random 512-bit template
with about 40% of its bits 0 (flat areas, where the margin gives 0 bits), and a page of a site
re-draws a quarter of the template's bits (different pages of one site are about 60 bits apart,
each band of the join shares much of them). An episode stays on a page for a few steps
(0-4 bits flipped: typing, the pointer), 10% of steps repeat the previous frame exactly, 3% of
all frames are near-blank (a loading screen: at most 3 bits set) shared by every directory.
Evaluation frames are 12% copies of training frames (0-12 bits flipped; one in five of another
source) and otherwise new pages of the training sites (Mind2Web's test_task shape). The planted
copies are counted and the audit must report at least them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.peak_rss import run_measured
from gui_assets.core.fingerprint import FINGERPRINT_BITS
from gui_assets.core.layout import DatasetInfo, OutLayout
from gui_assets.pipeline.fingerprints import DIRECTORY_SCHEMA, directory_table

STEPS = 453_264
# (directory, source, split role, share of the steps, share of them in a _val_ holdout)
DIRECTORIES = (
    ("web_train", "web", "train", 0.22, 0.0),
    ("web_test_task", "web", "validation", 0.012, 0.0),
    ("web_test_website", "web", "validation", 0.012, 0.0),
    ("web_test_domain", "web", "validation", 0.012, 0.0),
    ("desktop_win_mac", "desktop", "train", 0.40, 0.02),
    ("desktop_ubuntu", "desktop", "train", 0.17, 0.02),
    ("mobile_train", "mobile", "train", 0.12, 0.0),
    ("mobile_test", "mobile", "validation", 0.024, 0.0),
    ("browser_use", "gym", "train", 0.03, 0.05),
)
SITES_PER_SOURCE = 400
COPY_SHARE, BLANK_SHARE, REPEAT_SHARE = 0.12, 0.03, 0.10
BLANK_VARIANTS = 64  # --blank-variants: distinct near-blank screens (pixel-identical repeats otherwise)


def _flip(bits: np.ndarray, rng: np.random.Generator, n: int) -> np.ndarray:
    out = bits.copy()
    out[rng.choice(FINGERPRINT_BITS, n, replace=False)] ^= 1
    return out


class Screens:
    """Site templates per source and pages drawn from them, as bit arrays."""

    def __init__(self, rng: np.random.Generator, sources: list[str], blank_variants: int) -> None:
        self.rng = rng
        self.blank_variants = blank_variants
        self.sites = {
            s: (rng.random((SITES_PER_SOURCE, FINGERPRINT_BITS)) < 0.6).astype(np.uint8) for s in sources
        }

    def page(self, source: str) -> np.ndarray:
        template = self.sites[source][self.rng.integers(SITES_PER_SOURCE)]
        redraw = self.rng.random(FINGERPRINT_BITS) < 0.25
        fresh = (self.rng.random(FINGERPRINT_BITS) < 0.6).astype(np.uint8)
        return np.where(redraw, fresh, template)

    def blank(self) -> np.ndarray:
        """One of the loading screens (a spinner here or there: at most 3 bits set); with no
        variants given, every near-blank frame is a distinct one (the costliest cluster)."""
        variant = (
            np.random.default_rng(int(self.rng.integers(self.blank_variants)))
            if self.blank_variants
            else self.rng
        )
        out = np.zeros(FINGERPRINT_BITS, np.uint8)
        out[variant.choice(FINGERPRINT_BITS, variant.integers(0, 4), replace=False)] = 1
        return out


def _episode_frames(
    screens: Screens, source: str, steps: int, copies: list[np.ndarray]
) -> tuple[list[np.ndarray], list[int]]:
    """An episode's fingerprints (pages held for a few steps, exact repeats, blanks, copies)
    and the steps that are planted copies of a training frame."""
    rng = screens.rng
    frames: list[np.ndarray] = []
    planted = []
    page = screens.page(source)
    for t in range(steps):
        roll = rng.random()
        if copies and roll < COPY_SHARE:
            frames.append(_flip(copies[rng.integers(len(copies))], rng, int(rng.integers(0, 13))))
            planted.append(t)
        elif roll < COPY_SHARE + BLANK_SHARE:
            frames.append(screens.blank())
        elif frames and roll < COPY_SHARE + BLANK_SHARE + REPEAT_SHARE:
            frames.append(frames[-1])
        else:
            if rng.random() < 0.3:
                page = screens.page(source)
            frames.append(_flip(page, rng, int(rng.integers(0, 5))))
    return frames, planted


def simulate(
    out: Path, steps: int, blank_variants: int = BLANK_VARIANTS, seed: int = 0
) -> set[tuple[str, int]]:
    """Write the simulated build under `out`; returns the planted copies (episode id, step)."""
    rng = np.random.default_rng(seed)
    screens = Screens(rng, sorted({d[1] for d in DIRECTORIES}), blank_variants)
    training: dict[str, list[np.ndarray]] = {}
    planted: set[tuple[str, int]] = set()
    counts = [round(steps * d[3]) for d in DIRECTORIES]
    counts[0] += steps - sum(counts)
    # Training directories first, so evaluation frames can copy them.
    for (name, source, role, _, holdout), n in sorted(
        zip(DIRECTORIES, counts, strict=True), key=lambda x: x[0][2] != "train"
    ):
        rows = []
        made = 0
        while made < n:
            length = min(n - made, int(rng.integers(3, 25)))
            val = role == "train" and rng.random() < holdout
            evaluation = role != "train" or val
            pool: list[np.ndarray] = []
            if evaluation:
                other = [s for s in training if s != source]
                pick = other[rng.integers(len(other))] if other and rng.random() < 0.2 else source
                pool = training.get(pick, [])
            before = len(rows)
            frames, copies = _episode_frames(screens, source, length, pool)
            rows += [(f"{name}/e{made}", t, bits, val) for t, bits in enumerate(frames)]
            planted |= {(f"{name}/e{made}", t) for t in copies}
            if not evaluation:
                training.setdefault(source, []).extend(r[2] for r in rows[before:])
            made += length
        _write(out, name, source, role, rows)
    return planted


Row = tuple[str, int, np.ndarray, bool]  # episode, step, fingerprint bits, in a _val_ holdout


def _write(out: Path, name: str, source: str, role: str, rows: list[Row]) -> None:
    layout = OutLayout(out)
    info = DatasetInfo(name, source, name, {"source": {"name": source, "split_role": role}}, {}, [])
    info.write(layout.dataset_info(name))
    bits = np.stack([r[2] for r in rows])
    packed = np.packbits(bits, axis=1)
    adler = np.frombuffer(np.ascontiguousarray(packed[:, :4]).tobytes(), ">u4").astype(np.uint32)
    table = pa.table(
        {
            "shard": pa.array([f"{name}_0000.hdf5"] * len(rows)),
            "holdout": pa.array([r[3] for r in rows]),
            "demo": pa.array([f"demo_{i}" for i in range(len(rows))]),
            "episode_id": pa.array([r[0] for r in rows]),
            "step": pa.array([r[1] for r in rows], pa.int32()),
            "fingerprint": pa.FixedSizeBinaryArray.from_buffers(
                pa.binary(packed.shape[1]), len(rows), [None, pa.py_buffer(packed.tobytes())]
            ),
            "pixels_adler32": pa.array(adler, pa.uint32()),
        },
        schema=DIRECTORY_SCHEMA,
    )
    path = directory_table(layout, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=STEPS)
    ap.add_argument("--work", type=Path, default=Path("/tmp/gui-assets-overlap-bench"))
    ap.add_argument(
        "--blank-variants",
        type=int,
        default=BLANK_VARIANTS,
        help="distinct near-blank screens; 0: every near-blank frame distinct (the worst cluster)",
    )
    args = ap.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    started = time.perf_counter()
    planted = simulate(args.work, args.steps, args.blank_variants)
    print(f"simulated {args.steps:,} steps in {time.perf_counter() - started:.1f} s under {args.work}")
    code = (
        "import sys; from pathlib import Path; from gui_assets.publish.screen_overlap import audit; "
        "audit(Path(sys.argv[1]))"
    )
    started = time.perf_counter()
    status, peak_mb = run_measured(
        [sys.executable, "-c", code, str(args.work)], Path.cwd(), dict(os.environ), None, timeout=600
    )
    took = time.perf_counter() - started
    if status != 0:
        raise SystemExit(f"the audit failed (exit {status})")
    summary = json.loads((args.work / "screen_overlap.json").read_text(encoding="utf-8"))
    print(
        f"audit of {summary['evaluation_frames']:,} evaluation against {summary['training_frames']:,} "
        f"training frames: {took:.1f} s, peak RSS {peak_mb:.0f} MB, {summary['matched_frames']:,} "
        "evaluation frames with a near-duplicate"
    )
    found = pq.read_table(args.work / "screen_overlap.parquet", columns=["eval_episode_id", "eval_step"])
    listed = set(zip(*(found.column(c).to_pylist() for c in found.column_names), strict=True))
    missed = planted - listed
    print(f"planted copies: {len(planted):,}, found {len(planted) - len(missed):,}, missed {len(missed)}")
    if missed:
        raise SystemExit(f"the audit missed planted copies, e.g. {sorted(missed)[:5]}")
    for s in summary["evaluation_sets"]:
        print(f"  {s['directory']} ({s['part']}): {s['frames']:,} frames, {s['frame_share_any']:.1%} matched")


if __name__ == "__main__":
    main()
