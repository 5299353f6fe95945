"""The audit over a build's fingerprint tables: which frames are evaluation and training, the
nearest match per evaluation frame, the shares per evaluation set, exact duplicates, and what
the check and the card make of them."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gui_assets.checks.screen_overlap import MAX_SHARE, screen_overlap
from gui_assets.core.fingerprint import FINGERPRINT_BYTES
from gui_assets.core.layout import DatasetInfo, OutLayout
from gui_assets.pipeline.fingerprints import DIRECTORY_SCHEMA, directory_table
from gui_assets.publish import screen_overlap as audit_module
from gui_assets.publish.card import screen_overlap_section

RNG = np.random.default_rng(7)
SCREENS = {name: RNG.integers(0, 256, FINGERPRINT_BYTES, dtype=np.uint8) for name in "ABCDEFGH"}


def _near(name: str, bits: int) -> bytes:
    """Screen `name` with its first `bits` bits flipped."""
    raw = np.unpackbits(SCREENS[name].copy())
    raw[:bits] ^= 1
    return np.packbits(raw).tobytes()


def _directory(
    out, name: str, source: str, role: str | None, frames: list[tuple[str, int, bytes, bool, int]]
):
    """frames: (episode, step, fingerprint, holdout, pixel checksum)."""
    record = {"name": source} if role is None else {"name": source, "split_role": role}
    DatasetInfo(name, source, name, {"source": record}, {}, []).write(OutLayout(out).dataset_info(name))
    rows = [
        {
            "shard": f"{name}_0000.hdf5",
            "holdout": holdout,
            "demo": f"demo_{i}",
            "episode_id": f"{source}/{episode}",
            "step": step,
            "fingerprint": fp,
            "pixels_adler32": adler,
        }
        for i, (episode, step, fp, holdout, adler) in enumerate(frames)
    ]
    path = directory_table(OutLayout(out), name)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=DIRECTORY_SCHEMA), path)


@pytest.fixture
def build(tmp_path):
    a = SCREENS["A"].tobytes()
    _directory(  # a training directory with a _val_ holdout (AgentNet's shape)
        tmp_path,
        "web_train",
        "web",
        "train",
        [
            ("t1", 0, a, False, 1),
            ("t1", 1, a, False, 1),
            ("t2", 0, SCREENS["B"].tobytes(), False, 2),
            ("h1", 0, _near("B", 3), True, 3),
            ("h1", 1, SCREENS["C"].tobytes(), True, 4),
            ("t3", 0, SCREENS["F"].tobytes(), False, 12),
        ],
    )
    _directory(
        tmp_path,
        "desk_train",
        "desk",
        "train",
        [
            ("d1", 0, _near("A", 2), False, 5),
            ("d1", 1, _near("D", 1), False, 6),
            ("d2", 0, SCREENS["F"].tobytes(), False, 13),
        ],
    )
    _directory(  # the evaluation split of the web source
        tmp_path,
        "web_test",
        "web",
        "validation",
        [
            ("e1", 0, _near("A", 2), False, 7),
            ("e1", 1, SCREENS["E"].tobytes(), False, 8),
            ("e2", 0, _near("D", 12), False, 9),
            ("e2", 1, _near("D", 13), False, 10),
            ("e3", 0, SCREENS["F"].tobytes(), False, 14),
        ],
    )
    _directory(tmp_path, "odd", "odd", None, [("o1", 0, a, False, 11)])  # no split role recorded
    DatasetInfo("old", "web", "old", {"source": {"name": "web", "split_role": "train"}}, {}, []).write(
        OutLayout(tmp_path).dataset_info("old")
    )  # built before fingerprints were kept
    return tmp_path


def test_each_evaluation_frame_gets_its_nearest_training_frame_same_source_first(build):
    summary = audit_module.audit(build)
    rows = {
        (r["eval_episode_id"], r["eval_step"]): r
        for r in pq.read_table(build / "screen_overlap.parquet").to_pylist()
    }
    assert list(pq.read_schema(build / "screen_overlap.parquet").names) == [
        "eval_directory",
        "eval_episode_id",
        "eval_step",
        "train_directory",
        "train_episode_id",
        "train_step",
        "distance",
    ]
    # A with 2 bits flipped: 2 from web_train's A (t1 step 0, the first of two), 0 from desk's
    # identical copy: the nearest wins, whatever the source
    assert rows[("web/e1", 0)]["train_episode_id"] == "desk/d1" and rows[("web/e1", 0)]["distance"] == 0
    # D 12 bits off its desk copy (11 bits apart): in; 13 bits off (12 apart): in; E: no match
    assert rows[("web/e2", 0)]["distance"] == 11 and rows[("web/e2", 1)]["distance"] == 12
    assert ("web/e1", 1) not in rows
    # F in both training directories: at equal distance, the same source's (web_train comes
    # after desk_train in build order)
    assert rows[("web/e3", 0)]["train_directory"] == "web_train" and rows[("web/e3", 0)]["distance"] == 0
    # the holdout of a training directory is evaluation: B 3 bits off t2
    assert (
        rows[("web/h1", 0)]["train_episode_id"] == "web/t2"
        and rows[("web/h1", 0)]["eval_directory"] == "web_train"
    )
    assert len(rows) == 5
    sets = {(s["directory"], s["part"]): s for s in summary["evaluation_sets"]}
    test = sets[("web_test", "main")]
    assert (test["frames"], test["frames_any"], test["frames_same"], test["frames_other"]) == (5, 4, 2, 4)
    assert (test["episodes"], test["episodes_any"], test["episode_share_any"]) == (3, 3, 1.0)
    assert sets[("web_train", "holdout")]["frames_any"] == 1
    assert summary["exact_duplicates"]["web_train"] == {"frames": 6, "exact_duplicates": 1, "share": 0.1667}
    assert summary["unclassified_directories"] == ["odd"]
    assert summary["directories_without_fingerprints"] == ["old"]
    # published beside the card: names only, so two builds in two folders write the same bytes
    assert str(build) not in (build / "screen_overlap.json").read_text(encoding="utf-8")


def test_the_check_warns_above_the_share_and_on_a_directory_without_fingerprints(build):
    summary = audit_module.read_summary(build) or audit_module.audit(build)
    verdict = screen_overlap({k: v for k, v in summary.items() if k != "table"})
    assert not verdict.passed and verdict.severity == "WARN"
    assert verdict.figures["worst_share"] == 0.8 and verdict.figures["max_share"] == MAX_SHARE
    assert any("old: no fingerprints" in e for e in verdict.examples)
    clean = {**summary, "directories_without_fingerprints": [], "evaluation_sets": []}
    assert screen_overlap(clean).passed
    assert not screen_overlap(None).passed


def test_the_card_gets_the_table_and_how_to_use_the_parquet(build):
    summary = audit_module.audit(build)
    text = screen_overlap_section(summary)
    assert "| `web_test/` | 5 | 4 (80.0%) | 40.0% | 80.0% | 3 of 3 (100.0%) |" in text
    assert "`web_train/` (`_val_` holdout)" in text
    assert "screen_overlap.parquet" in text and "drop or down-weight" in text
    assert screen_overlap_section(None) == ""
