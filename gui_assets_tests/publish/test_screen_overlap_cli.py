"""The screen-overlap audit finds every planted copy of a training screen and nothing else.

A Mind2Web mirror is built through the CLI (`dagster asset materialize`, a process of its own):
`train` holds six pages of one site; `test_task` holds copies of four of them (the same bytes,
re-encoded as JPEG, with the pointer drawn on it, with a character typed into it) among four
other pages of the same site. The audit's parquet must list exactly the four copies, each with
the training step it copies, and the check must carry the table.
"""

from __future__ import annotations

import io
import json

import pyarrow.parquet as pq
import pytest
from PIL import Image, ImageDraw, ImageFont

from gui_assets_tests.conftest import clean_env, dagster_materialize, m2w_row, page_bytes

PAGE = (800, 600)
TRAINING_SEEDS = (1, 2, 3, 4, 5, 6)
OTHER_SEEDS = (101, 102, 103, 104)  # different pages of the same site: never a match
# Each step's target in another corner, so the eye-in-hand crop (on the previous target) never
# holds the next one (alignment_leakage would block the build).
CORNERS = ("40,40,120,40", "640,520,120,40", "40,520,120,40", "640,40,120,40")


def _edited(png: bytes, edit: str) -> bytes:
    im = Image.open(io.BytesIO(png)).convert("RGB")
    out = io.BytesIO()
    if edit == "jpeg":
        im.save(out, format="JPEG", quality=75)
        return out.getvalue()
    draw = ImageDraw.Draw(im)
    if edit == "pointer":
        arrow = [(0, 0), (0, 17), (4, 13), (7, 20), (10, 19), (7, 12), (12, 12)]
        draw.polygon([(500 + x, 300 + y) for x, y in arrow], fill=(0, 0, 0), outline=(255, 255, 255))
    else:  # a typed character
        draw.text((420, 150), "k", fill=(20, 20, 20), font=ImageFont.load_default(18))
    im.save(out, format="PNG")
    return out.getvalue()


@pytest.mark.slow
def test_every_planted_copy_is_found_and_no_other_page_matches(tmp_path, write_m2w):
    pages = {seed: page_bytes(*PAGE, seed=seed) for seed in (*TRAINING_SEEDS, *OTHER_SEEDS)}
    train = [
        m2w_row(f"train-{i}", str(t), rect=CORNERS[t], screenshot=pages[seed], page=PAGE, task=f"train {i}")
        for i, seeds in enumerate([TRAINING_SEEDS[:3], TRAINING_SEEDS[3:]])
        for t, seed in enumerate(seeds)
    ]
    # (eval episode, step) -> the training screen it copies
    planted = {("eval-0", 0): 1, ("eval-0", 2): 3, ("eval-1", 1): 4, ("eval-1", 3): 6}
    edits = dict(zip(planted, ("same bytes", "jpeg", "pointer", "typed"), strict=True))
    others = iter(OTHER_SEEDS)
    evaluation = []
    for episode in ("eval-0", "eval-1"):
        for t in range(4 if episode == "eval-1" else 3):
            seed = planted.get((episode, t))
            shot = pages[next(others)] if seed is None else pages[seed]
            if seed is not None and edits[(episode, t)] != "same bytes":
                shot = _edited(shot, edits[(episode, t)])
            evaluation.append(
                m2w_row(episode, str(t), rect=CORNERS[t], screenshot=shot, page=PAGE, task=episode)
            )
    write_m2w([train], split="train")
    mirror = write_m2w([evaluation], split="test_task")
    env = clean_env(GUI_ASSETS_MIRROR=str(mirror), GUI_ASSETS_OUT=str(tmp_path / "out"))
    for partition, select in (
        ("train", "*mind2web_dataset_info"),
        ("test_task", "*mind2web_dataset_info,screen_overlap"),
    ):
        r = dagster_materialize(["--select", select, "--partition", partition], tmp_path, env)
        assert r.returncode == 0, r.stderr[-3000:]

    out = tmp_path / "out"
    rows = pq.read_table(out / "screen_overlap.parquet").to_pylist()
    found = {(r["eval_episode_id"].split("/")[-1], r["eval_step"]): r for r in rows}
    assert set(found) == set(planted), rows  # every copy, and no different page
    train_step = {
        seed: (f"train-{i}", t)
        for i, s in enumerate([TRAINING_SEEDS[:3], TRAINING_SEEDS[3:]])
        for t, seed in enumerate(s)
    }
    for key, seed in planted.items():
        r = found[key]
        assert (r["train_episode_id"].split("/")[-1], r["train_step"]) == train_step[seed], (key, r)
        assert r["eval_directory"] == "mind2web_test_task" and r["train_directory"] == "mind2web_train"
        assert 0 <= r["distance"] <= 12
    assert found[("eval-0", 0)]["distance"] == 0  # the same bytes
    summary = json.loads((out / "screen_overlap.json").read_text(encoding="utf-8"))
    (test_task,) = summary["evaluation_sets"]
    assert (test_task["frames"], test_task["frames_same"], test_task["frames_other"]) == (7, 4, 0)
    assert (out / "screen_overlap.png").is_file()
    # 4 of 7 frames seen in training is over the check's share: a WARN, alerted like the others
    alerts = [json.loads(line) for line in (out / "alerts.jsonl").read_text(encoding="utf-8").splitlines()]
    (alert,) = [a for a in alerts if a.get("check") == "screen_overlap_share"]
    assert alert["severity"] == "WARN" and alert["figures"]["worst_share"] == round(4 / 7, 4)
