"""Pango: the real layout (train.csv, bucket URLs), events aggregated into steps by rule,
sessions apart, thoughts on their steps, and every bad row, event or number dropped by name."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gui_assets.core.ir import NO_MASK, POINT_MASK, SPAN_MASK, ActionType
from gui_assets.sources.mirror import RawInputError
from gui_assets.sources.pango import adapter as pango
from gui_assets.sources.pango import demo as pango_mirror
from gui_assets.sources.pango.source import SPEC as PANGO
from gui_assets_tests.conftest import page_bytes, run_adapter

ROW0, ROW1, ROW2 = pango_mirror.IDS


def run(mirror: Path, tmp: Path, **cfg):
    return run_adapter(PANGO, mirror, "sample", tmp, **cfg)


def repo_of(tmp: Path) -> Path:
    repo = tmp / "m" / pango.REPO_ID
    (repo / "shots").mkdir(parents=True, exist_ok=True)
    (repo / "shots" / "a.png").write_bytes(page_bytes(1000, 500))
    return repo


def mirror_of(tmp: Path, events: list[dict], **row) -> Path:
    """A mirror whose one parquet row holds `events` inline (screenshots at shots/a.png)."""
    repo = repo_of(tmp)
    for e in events:
        e.setdefault("screenshot_url", "shots/a.png")
    rec = {"id": "s1", "input_metadata": json.dumps({"actions": events}), **row}
    pq.write_table(pa.Table.from_pylist([rec]), repo / "rows.parquet")
    return tmp / "m"


def click(**kw) -> dict:
    return {"type": "click", "x": 10.0, "y": 10.0, "relative_timestamp_ms": 1, **kw}


def test_the_real_layout_builds_every_step_and_drop_by_rule(demo_mirror, tmp_path):
    eps, stats = run(demo_mirror, tmp_path)
    assert [e.episode_id for e in eps] == [
        "pango/pango-legacy-0",  # data/...parquet sorts before train.csv
        f"pango/{ROW0}",
        f"pango/{ROW1}/a",
        f"pango/{ROW1}/b",
    ]
    ep = eps[1]
    assert [(s.action_type.name, s.text) for s in ep.steps] == [
        ("CLICK", ""),
        ("TYPE", "Revenue"),
        ("PRESS_ENTER", "Enter"),
        ("PRESS_KEY", "ControlLeft+KeyC"),
        ("CLICK", ""),
        ("PRESS_KEY", "Escape"),
        ("CLICK", ""),
        ("TYPE", "12"),
        ("DRAG", ""),
        ("SCROLL", ""),
        ("CLICK", ""),
    ]
    assert ep.steps[4].desc.startswith("right_click(") and ep.steps[6].desc.startswith("double_click(")
    assert ep.steps[0].params[:2] == pytest.approx((420 / 1280, 176 / 800))
    assert ep.instruction == "In sheets, label the revenue column and fill it."
    assert ep.attrs["task_description"] == 'Quarterly numbers in sheets, "Q3" first\nthen the totals'
    assert (ep.attrs["quest_type"], ep.attrs["duration_ms"], ep.attrs["pango_id"]) == ("sheets", "7250", ROW0)
    assert ep.steps[0].ref.member == "input_metadata.actions@250"
    assert len(eps[3].steps) == 2  # session b: its own three events (an input run is one step), never mixed
    assert stats.episodes_in == 5  # 4 sessions and the row whose document is not there
    assert stats.drops == {
        "missing_input_metadata": 1,
        **{
            r: 3
            for r in (
                "drag_without_coordinates",
                "missing_coordinates",
                "missing_screenshot",
                "mouseover",
                "unknown_action_verb",
                "unpaired_drag",
            )
        },
    }


def test_inline_url_bare_list_and_repo_path_documents_read_alike(demo_mirror, tmp_path):
    eps, _ = run(demo_mirror, tmp_path)
    shapes = [[(s.action_type, s.text, s.params) for s in e.steps] for e in eps[:3]]
    assert shapes[0] == shapes[1] == shapes[2]  # inline (parquet), {"actions"} by URL, bare list by URL
    assert eps[0].steps[0].thought.startswith("Label the first column")
    assert eps[0].steps[3].thought.startswith("Copy") and eps[1].steps[0].thought == ""
    repo = repo_of(tmp_path)
    (repo / "docs").mkdir()
    (repo / "docs" / "s1.json").write_text(json.dumps([click(screenshot_url="shots/a.png")]))
    pq.write_table(pa.Table.from_pylist([{"id": "s1", "input_metadata": "docs/s1.json"}]), repo / "r.parquet")
    (ep,), _ = run(tmp_path / "m", tmp_path / "o")
    assert ep.steps[0].params[:2] == pytest.approx((0.01, 0.02))


def test_a_url_in_a_mirror_reads_the_file_its_path_names(tmp_path):
    repo = repo_of(tmp_path)
    doc = repo / "finalized" / "a b" / "actions_v3.json"
    doc.parent.mkdir(parents=True)
    doc.write_text(json.dumps({"actions": [click(screenshot_url="https://cdn.example/shots/a.png?sig=1")]}))
    url = "https://bucket.example/finalized/a%20b/actions_v3.json"
    pq.write_table(pa.Table.from_pylist([{"id": "s1", "input_metadata": url}]), repo / "r.parquet")
    (ep,), stats = run(tmp_path / "m", tmp_path)
    assert [s.action_type for s in ep.steps] == [ActionType.CLICK] and stats.drops == {}


def write_csv(repo: Path, text: str, name: str = "train.csv") -> None:
    (repo / name).write_bytes(text.encode("utf-8"))


def test_csv_quoted_fields_embedded_newlines_and_utf8(tmp_path):
    repo = repo_of(tmp_path)
    doc = json.dumps({"actions": [click(screenshot_url="shots/a.png")]})
    quoted = '"' + doc.replace('"', '""') + '"'
    write_csv(
        repo,
        "\ufeffid,task_description,input_metadata,synthetically_generated_instruction\r\n"
        f'r1,"Umsatz, Übersicht ✓\r\nzweite ""Zeile""",{quoted},"Trage die Summe ein"\r\n'
        "\r\n"  # a blank line is no row
        f"r2,plain,{quoted},Sum it\r\n",
    )
    eps, stats = run(tmp_path / "m", tmp_path)
    assert [e.episode_id for e in eps] == ["pango/r1", "pango/r2"] and stats.drops == {}
    assert eps[0].attrs["task_description"] == 'Umsatz, Übersicht ✓\r\nzweite "Zeile"'
    assert eps[0].instruction == "Trage die Summe ein"
    assert eps[0].steps[0].ref.file == "train.csv" and eps[1].steps[0].ref.row == 1


def test_csv_rows_with_a_wrong_field_count_or_not_utf8_are_dropped_by_name(tmp_path):
    repo = repo_of(tmp_path)
    doc = '"' + json.dumps([click(screenshot_url="shots/a.png")]).replace('"', '""') + '"'
    text = f"id,input_metadata,quest_type\nr1,{doc},sheets\nr2,{doc}\nr3,{doc},sheets,extra\n"
    (repo / "train.csv").write_bytes(text.encode() + b"r4," + doc.encode() + b",sh\xffets\n")
    eps, stats = run(tmp_path / "m", tmp_path)
    assert [e.episode_id for e in eps] == ["pango/r1"]
    assert stats.drops == {"malformed_record": 3} and stats.episodes_in == 4


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('id,input_metadata\nr1,"[never closed\nr2,x\n', "not readable as CSV"),
        ("", "no CSV header"),
        ("id,id\nr1,r2\n", "named twice"),
    ],
)
def test_a_csv_that_cannot_be_read_fails_the_partition_naming_it(tmp_path, text, why):
    write_csv(repo_of(tmp_path), text)
    with pytest.raises(RawInputError, match=f"train.csv.*{why}|{why}.*train.csv"):
        run(tmp_path / "m", tmp_path)


def test_a_row_repeated_in_another_export_is_dropped_once(tmp_path):
    repo = repo_of(tmp_path)
    doc = json.dumps([click(screenshot_url="shots/a.png")])
    with open(repo / "train.csv", "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([["id", "input_metadata"], ["r1", doc]])
    (repo / "train.jsonl").write_text(json.dumps({"id": "r1", "input_metadata": doc}) + "\n[1]\n{oops\n")
    eps, stats = run(tmp_path / "m", tmp_path)
    assert [e.episode_id for e in eps] == ["pango/r1"]
    assert stats.drops == {"duplicate_id": 1, "malformed_record": 1, "malformed_json": 1}


BAD_EVENTS = [
    (click(x=math.nan), "malformed_step"),
    (click(x="12"), "malformed_step"),
    (click(y=None), "malformed_step"),  # x without y
    (click(x=-1.0), "coordinate_out_of_range"),
    (click(x=1e300), "coordinate_out_of_range"),
    (click(x=10**400), "malformed_step"),
    (click(relative_timestamp_ms=math.nan), "malformed_timestamp"),
    (click(relative_timestamp_ms=-5), "malformed_timestamp"),
    (click(relative_timestamp_ms=10**13), "malformed_timestamp"),
    (click(relative_timestamp_ms=True), "malformed_timestamp"),
    ({"type": "click", "x": 1.0, "y": 1.0}, "malformed_timestamp"),
    (click(click_count=0), "malformed_step"),
    (click(click_count=2.5), "malformed_step"),
    (click(click_count="2"), "malformed_step"),
    (click(click_count=True), "malformed_step"),
    (click(button=7), "malformed_step"),
    (click(button="button_middle"), "no_action_equivalent"),
    (
        {"type": "scroll", "x": 1.0, "y": 1.0, "delta_y": math.inf, "relative_timestamp_ms": 1},
        "malformed_step",
    ),
    ({"type": "scroll", "delta_y": 1e9, "relative_timestamp_ms": 1}, "malformed_step"),
    ({"type": "input", "input_data": 5, "relative_timestamp_ms": 1}, "malformed_step"),
    ({"type": "input", "relative_timestamp_ms": 1}, "no_action_equivalent"),
    ({"type": "key_press", "key_code": {"k": 1}, "relative_timestamp_ms": 1}, "malformed_step"),
    ({"x": 1.0, "y": 1.0, "relative_timestamp_ms": 1}, "unknown_action_verb"),  # no type
    ({"type": ["click"], "relative_timestamp_ms": 1}, "unknown_action_verb"),
    ({"type": "zoom", "relative_timestamp_ms": 1}, "unknown_action_verb"),
]


@pytest.mark.parametrize(
    ("event", "reason"), BAD_EVENTS, ids=[f"{i}-{r}" for i, (_, r) in enumerate(BAD_EVENTS)]
)
def test_a_bad_field_drops_its_step_or_event_by_name_and_nothing_else(tmp_path, event, reason):
    eps, stats = run(mirror_of(tmp_path, [event, click(relative_timestamp_ms=9)]), tmp_path)
    assert [len(e.steps) for e in eps] == [1]  # the good click after it is kept
    assert stats.drops == {reason: 1}


@pytest.mark.parametrize("rid", [True, "", "  ", 1.5, None])
def test_a_row_without_a_usable_id_is_dropped_by_name(tmp_path, rid):
    eps, stats = run(mirror_of(tmp_path, [click()], id=rid), tmp_path)
    assert eps == [] and stats.drops == {"malformed_record": 1}


def test_an_integer_id_and_a_numeric_duration_are_kept_as_text(tmp_path):
    (ep,), stats = run(mirror_of(tmp_path, [click()], id=7, duration_ms=1234.0), tmp_path)
    assert ep.episode_id == "pango/7" and ep.attrs["duration_ms"] == "1234" and stats.drops == {}


@pytest.mark.parametrize("duration", ["-5", "nan", "abc", "1e20", True])
def test_a_bad_duration_drops_its_row_by_name(tmp_path, duration):
    eps, stats = run(mirror_of(tmp_path, [click()], duration_ms=duration), tmp_path)
    assert eps == [] and stats.drops == {"malformed_record": 1}


@pytest.mark.parametrize(
    ("metadata", "reason"),
    [
        ("", "malformed_record"),
        ('{"actions": 3}', "malformed_record"),
        ("[" * 100_000, "malformed_json"),  # nested past the parser's recursion limit
        ("docs/none.json", "missing_input_metadata"),
        ("../../../etc/passwd", "unsafe_reference"),
        ("https://bucket.example/%2e%2e/%2e%2e/etc/passwd", "unsafe_reference"),
        ("a\x00b", "unsafe_reference"),
    ],
)
def test_a_row_whose_document_cannot_be_had_is_one_candidate_dropped_by_name(tmp_path, metadata, reason):
    repo = repo_of(tmp_path)
    pq.write_table(pa.Table.from_pylist([{"id": "s1", "input_metadata": metadata}]), repo / "r.parquet")
    eps, stats = run(tmp_path / "m", tmp_path)
    assert eps == [] and stats.drops == {reason: 1} and stats.episodes_in == 1


def test_scroll_runs_sum_their_deltas_in_the_dom_convention(tmp_path):
    events = [
        {"type": "scroll", "x": 500.0, "y": 250.0, "delta_y": 100, "relative_timestamp_ms": 1},
        {"type": "scroll", "x": 500.0, "y": 250.0, "deltaY": 50, "relative_timestamp_ms": 2},
        {"type": "click", "x": 10.0, "y": 10.0, "relative_timestamp_ms": 3},
        {"type": "scroll", "x": 500.0, "y": 250.0, "deltaX": -300, "relative_timestamp_ms": 4},
        {"type": "scroll", "x": 500.0, "y": 250.0, "relative_timestamp_ms": 5, "screenshot_url": "x.png"},
        {"type": "click", "x": 10.0, "y": 10.0, "relative_timestamp_ms": 6},
        {"type": "scroll", "x": 500.0, "y": 250.0, "delta_y": 0, "relative_timestamp_ms": 7},
    ]
    (ep,), stats = run(mirror_of(tmp_path, events), tmp_path)
    down, click_, left, _ = ep.steps
    assert down.desc == "scroll(down)" and down.params == pytest.approx((0.5, 0.5, 0.5, 0.2))  # 150 px of 500
    assert left.desc == "scroll(left)" and left.params == pytest.approx((0.5, 0.5, 0.8, 0.5))
    assert down.mask == left.mask == SPAN_MASK and click_.mask == POINT_MASK
    assert stats.drops == {"empty_scroll": 1}  # the last run moved nothing; x.png is read by no step


def test_mouseover_pairs_are_hover_steps_when_switched_on(tmp_path):
    events = [
        {"type": "mouseover_start", "x": 100.0, "y": 100.0, "relative_timestamp_ms": 1},
        {"type": "mouseover_end", "x": 120.0, "y": 100.0, "relative_timestamp_ms": 2},
    ]
    mirror = mirror_of(tmp_path, events)
    (ep,), _ = run(mirror, tmp_path, options={"hover": True})
    assert [(s.action_type, s.params[:2]) for s in ep.steps] == [
        (ActionType.HOVER, pytest.approx((0.1, 0.2)))
    ]
    eps, stats = run(mirror, tmp_path / "off")
    assert eps == [] and stats.drops == {"mouseover": 1, "empty_episode": 1}


def test_incremental_input_concatenates_and_key_press_and_chords(tmp_path):
    events = [
        {"type": "input", "input_data": "a", "relative_timestamp_ms": 1},
        {"type": "input", "input_data": "b", "relative_timestamp_ms": 2},
        {"type": "key_down", "key_code": "ShiftLeft", "relative_timestamp_ms": 3},
        {"type": "key_down", "key_code": "ControlLeft", "relative_timestamp_ms": 4},
        {"type": "key_down", "key_code": "KeyZ", "relative_timestamp_ms": 5},
        {"type": "key_up", "key_code": "KeyZ", "relative_timestamp_ms": 6},
        {"type": "key_up", "key_code": "ControlLeft", "relative_timestamp_ms": 7},
        {"type": "key_up", "key_code": "ShiftLeft", "relative_timestamp_ms": 8},
        {"type": "key_press", "key_code": "Tab", "relative_timestamp_ms": 9},
    ]
    (ep,), _ = run(mirror_of(tmp_path, events), tmp_path)
    assert [(s.action_type, s.text, s.mask) for s in ep.steps] == [
        (ActionType.TYPE, "ab", NO_MASK),
        (ActionType.PRESS_KEY, "ControlLeft+ShiftLeft+KeyZ", NO_MASK),
        (ActionType.PRESS_KEY, "Tab", NO_MASK),
    ]


def test_a_key_run_releasing_a_key_never_pressed_is_one_malformed_step(tmp_path):
    events = [
        {"type": "key_down", "key_code": "Enter", "relative_timestamp_ms": 1},
        {"type": "key_up", "key_code": "KeyQ", "relative_timestamp_ms": 2},  # never pressed
        {"type": "key_down", "key_code": "KeyA", "relative_timestamp_ms": 3},
        {"type": "key_up", "key_code": "KeyA", "relative_timestamp_ms": 4},
        {"type": "key_up", "key_code": "KeyA", "relative_timestamp_ms": 5},  # a run of its own
    ]
    (ep,), stats = run(mirror_of(tmp_path, events), tmp_path)
    assert [s.text for s in ep.steps] == ["KeyA"] and stats.drops == {"malformed_step": 2}


@pytest.mark.parametrize(
    ("shot", "reason"),
    [
        ("../../etc/passwd", "unsafe_screenshot_reference"),
        ("https://cdn.example/../../etc/passwd", "unsafe_screenshot_reference"),
        ("x" * 300, "unsafe_screenshot_reference"),
        ("shots/none.png", "missing_screenshot"),
        ({"url": "shots/a.png"}, "missing_screenshot"),
    ],
)
def test_screenshot_references_cannot_leave_the_repo(tmp_path, shot, reason):
    eps, stats = run(mirror_of(tmp_path, [click(screenshot_url=shot)]), tmp_path)
    assert eps == [] and stats.drops == {reason: 1, "empty_episode": 1}


def test_the_hook_names_documents_then_the_screenshots_of_the_steps_they_make(demo_mirror, tmp_path):
    from gui_assets.core.layout import OutLayout
    from gui_assets.pipeline.chain import RawSettings, fetch_raw

    part = fetch_raw(PANGO, "sample", OutLayout(tmp_path), RawSettings("mirror", demo_mirror))
    first = pango.remote_files(part, {})
    docs = [f"{pango_mirror.BUCKET}finalized/{r}/actions_v3.json" for r in (ROW0, ROW1, ROW2)]
    assert set(docs) <= set(first)
    assert "screenshots/legacy/001.png" in first  # the inline document's, by repo path
    assert not any(r.startswith(pango_mirror.BUCKET + "finalized/" + ROW0 + "/screenshots") for r in first)
    fetched = {docs[0]: part.root / "finalized" / ROW0 / "actions_v3.json"}
    second = set(pango.remote_files(part, fetched)) - set(first)
    shots = {r.rsplit("/", 1)[1] for r in second}
    # the first event's screenshot of each step candidate (hovers included), nothing else
    assert second and all(r.startswith(f"{pango_mirror.BUCKET}finalized/{ROW0}/screenshots/") for r in second)
    steps = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 15, 17}  # unpaired drag 13, unknown type 16: none
    assert shots == {f"{n:04d}.png" for n in steps}
