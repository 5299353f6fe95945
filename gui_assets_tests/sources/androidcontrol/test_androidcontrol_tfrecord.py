"""The androidcontrol TFRecord reader: framing, corruption handling, and tf.train.Example coding
without TensorFlow."""

from __future__ import annotations

import gzip
import json
import struct
from pathlib import Path

import pytest

from gui_assets.sources.androidcontrol import tfrecord
from gui_assets.sources.androidcontrol.tfrecord import (
    ExampleError,
    TFRecordError,
    TFRecordWriter,
    detect_compression,
    iter_records,
    masked_crc32c,
    parse_example,
    serialize_example,
    write_records,
)

RECORDS = [b"", b"a", b"hello world" * 100, bytes(range(256)) * 50]


def raw_file(tmp_path: Path, records: list[bytes] = RECORDS) -> Path:
    path = tmp_path / "plain.tfrecord"
    write_records(path, records, compression="none")
    return path


def record_offsets(records: list[bytes]) -> list[int]:
    offsets, at = [], 0
    for data in records:
        offsets.append(at)
        at += 16 + len(data)
    return offsets


def flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x40
    path.write_bytes(bytes(data))


# --- CRC ----------------------------------------------------------------------------------------


def test_crc32c_check_value_and_mask() -> None:
    import google_crc32c

    # The standard CRC-32C check value, then the mask applied by hand.
    assert google_crc32c.value(b"123456789") == 0xE3069283
    crc = 0xE3069283
    expected = ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF
    assert masked_crc32c(b"123456789") == expected
    assert masked_crc32c(bytearray(b"123456789")) == expected


def test_frame_layout_is_length_crc_data_crc() -> None:
    framed = tfrecord.frame_record(b"xyz")
    assert framed[:8] == struct.pack("<Q", 3)
    assert framed[8:12] == struct.pack("<I", masked_crc32c(struct.pack("<Q", 3)))
    assert framed[12:15] == b"xyz"
    assert framed[15:] == struct.pack("<I", masked_crc32c(b"xyz"))


# --- round trips --------------------------------------------------------------------------------


@pytest.mark.parametrize("compression", ["gzip", "none"])
def test_round_trip(tmp_path: Path, compression: str) -> None:
    path = tmp_path / "shard"
    write_records(path, RECORDS, compression=compression)  # type: ignore[arg-type]
    assert detect_compression(path) == compression
    for mode in ("auto", compression):
        got = list(iter_records(path, compression=mode))  # type: ignore[arg-type]
        assert [r.data for r in got] == RECORDS
        assert [r.index for r in got] == list(range(len(RECORDS)))
        assert [r.offset for r in got] == record_offsets(RECORDS)


def test_gzip_output_is_deterministic_and_real_gzip(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    write_records(first, RECORDS)
    write_records(second, RECORDS)
    assert first.read_bytes() == second.read_bytes()
    # Any gzip reader sees the framed stream: the writer's output is plain gzip.
    assert gzip.decompress(first.read_bytes()) == b"".join(tfrecord.frame_record(r) for r in RECORDS)


def test_reads_concatenated_gzip_members(tmp_path: Path) -> None:
    # A shard written in several gzip members (e.g. appended batches) is one stream.
    path = tmp_path / "multi"
    path.write_bytes(
        gzip.compress(tfrecord.frame_record(b"one")) + gzip.compress(tfrecord.frame_record(b"two"))
    )
    assert [r.data for r in iter_records(path)] == [b"one", b"two"]


def test_large_record_read_in_slices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tfrecord, "_READ_SLICE", 1000)
    big = bytes(range(256)) * 40  # 10240 bytes, ten slices
    path = tmp_path / "big"
    write_records(path, [big, b"tail"])
    assert [r.data for r in iter_records(path)] == [big, b"tail"]


def test_records_are_streamed_lazily(tmp_path: Path) -> None:
    # The first record comes out before the damage in the second is reached.
    path = raw_file(tmp_path)
    flip(path, record_offsets(RECORDS)[2] + 12 + 5)
    records = iter_records(path)
    assert next(records).data == RECORDS[0]
    assert next(records).data == RECORDS[1]
    with pytest.raises(TFRecordError, match="bad data CRC in record #2"):
        next(records)


def test_writer_counts_and_closes(tmp_path: Path) -> None:
    with TFRecordWriter(tmp_path / "w", compression="none") as writer:
        writer.write(b"x")
        writer.write(b"y")
    assert writer.records_written == 2
    assert (tmp_path / "w").stat().st_size == 2 * 17


# --- corruption ---------------------------------------------------------------------------------


def test_flipped_data_byte(tmp_path: Path) -> None:
    path = raw_file(tmp_path)
    at = record_offsets(RECORDS)[3]
    flip(path, at + 12 + 100)
    with pytest.raises(TFRecordError) as caught:
        list(iter_records(path))
    err = caught.value
    assert err.path == str(path) and err.offset == at
    assert "bad data CRC in record #3" in str(err) and str(path) in str(err) and f"byte {at}" in str(err)


def test_flipped_data_crc_byte(tmp_path: Path) -> None:
    path = raw_file(tmp_path, [b"abc"])
    flip(path, 12 + 3 + 1)
    with pytest.raises(TFRecordError, match="bad data CRC in record #0"):
        list(iter_records(path))


@pytest.mark.parametrize("byte", [0, 3, 7, 9])
def test_flipped_length_or_length_crc_byte(tmp_path: Path, byte: int) -> None:
    path = raw_file(tmp_path)
    at = record_offsets(RECORDS)[2]
    flip(path, at + byte)
    with pytest.raises(TFRecordError, match=rf"at byte {at}: bad length CRC in record #2"):
        list(iter_records(path, compression="none"))


def test_flipped_length_in_first_record_fails_detection(tmp_path: Path) -> None:
    # With the first header broken, auto-detection cannot call it a TFRecord: a named error.
    path = raw_file(tmp_path)
    flip(path, 0)
    with pytest.raises(TFRecordError, match="neither a gzip stream nor a TFRecord"):
        list(iter_records(path))


def test_flipped_data_byte_inside_gzip(tmp_path: Path) -> None:
    path = tmp_path / "g"
    write_records(path, RECORDS)
    # Flip a byte in the middle of the deflate data: whatever notices first (deflate itself, the
    # record CRC or the gzip trailer CRC), it is a TFRecordError naming the file.
    flip(path, path.stat().st_size // 2)
    with pytest.raises(TFRecordError, match=str(path)):
        list(iter_records(path))


@pytest.mark.parametrize("cut", [5, 12, 12 + 2, 16 + 1 + 12 + 3])
def test_truncated_raw_record(tmp_path: Path, cut: int) -> None:
    path = raw_file(tmp_path, [b"a", b"hello"])
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - cut])
    with pytest.raises(TFRecordError, match="truncated record #"):
        list(iter_records(path, compression="none"))


def test_truncated_gzip_stream(tmp_path: Path) -> None:
    path = tmp_path / "g"
    write_records(path, RECORDS)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 30])
    with pytest.raises(TFRecordError, match=r"truncated gzip stream|truncated record") as caught:
        list(iter_records(path))
    assert str(path) in str(caught.value)


def test_gzip_with_bad_trailer_crc(tmp_path: Path) -> None:
    path = tmp_path / "g"
    write_records(path, [b"abc"])
    flip(path, path.stat().st_size - 6)  # inside the gzip trailer's CRC-32 of the stream
    with pytest.raises(TFRecordError, match="bad gzip stream"):
        list(iter_records(path))


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty"
    path.write_bytes(b"")
    with pytest.raises(TFRecordError, match=r"at byte 0: empty file"):
        list(iter_records(path))
    assert list(iter_records(path, allow_empty=True)) == []


def test_gzip_of_nothing_is_zero_records(tmp_path: Path) -> None:
    path = tmp_path / "g"
    write_records(path, [])
    assert path.stat().st_size > 0
    assert list(iter_records(path)) == []


def test_not_a_tfrecord(tmp_path: Path) -> None:
    path = tmp_path / "junk"
    path.write_bytes(b"this is not a record stream at all")
    with pytest.raises(TFRecordError, match="neither a gzip stream nor a TFRecord"):
        list(iter_records(path))


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TFRecordError, match="cannot open"):
        list(iter_records(tmp_path / "absent"))


# --- tf.train.Example ---------------------------------------------------------------------------


def android_control_like_episode() -> dict[str, object]:
    actions = [
        {"action_type": "open_app", "app_name": "Clock"},
        {"action_type": "click", "x": 540, "y": 1200},
        {"action_type": "scroll", "direction": "down"},
    ]
    return {
        "episode_id": [1234],
        "goal": ["Set an alarm for 7 am"],
        "screenshots": [b"\x89PNG-0", b"\x89PNG-1", b"\x89PNG-2", b"\x89PNG-3"],
        "accessibility_trees": [b"t0", b"t1", b"t2", b"t3"],
        "screenshot_widths": [1080, 1080, 2400, 1080],
        "screenshot_heights": [2400, 2400, 1080, 2400],
        "actions": [json.dumps(a) for a in actions],
        "step_instructions": ["Open the clock app", "Tap the alarm tab", "Scroll down"],
    }


def test_example_round_trip_through_a_gzip_shard(tmp_path: Path) -> None:
    features = android_control_like_episode()
    path = tmp_path / "android_control-00000-of-00020"
    write_records(path, [serialize_example(features)])  # type: ignore[arg-type]
    ((record, example),) = list(tfrecord.iter_examples(path))
    assert not isinstance(example, ExampleError)
    assert example.single_int("episode_id") == 1234
    assert example.single_text("goal") == "Set an alarm for 7 am"
    assert example.bytes_list("screenshots") == features["screenshots"]
    assert example.int64_list("screenshot_widths") == [1080, 1080, 2400, 1080]
    assert [json.loads(a)["action_type"] for a in example.text_list("actions")] == [
        "open_app",
        "click",
        "scroll",
    ]
    assert example.text_list("step_instructions")[2] == "Scroll down"
    assert record.index == 0


def test_example_hand_encoded_bytes() -> None:
    # Example{features{feature{key:"a" value{int64_list{value:[7]}}}}}, assembled byte by byte
    # from the protobuf wire format, so the schema is checked against the wire, not itself.
    int64_list = b"\x0a\x01\x07"  # field 1, packed: one varint 7
    feature = b"\x1a" + bytes([len(int64_list)]) + int64_list  # field 3: int64_list
    entry = b"\x0a\x01a" + b"\x12" + bytes([len(feature)]) + feature  # key "a", value
    features = b"\x0a" + bytes([len(entry)]) + entry
    example_bytes = b"\x0a" + bytes([len(features)]) + features
    assert parse_example(example_bytes).int64_list("a") == [7]
    assert serialize_example({"a": [7]}) == example_bytes


def test_example_unpacked_repeated_and_negative_values() -> None:
    # Int64List written unpacked (tag 0x08 per value), -1 as a ten-byte varint; FloatList unpacked.
    int64_list = b"\x08\x07" + b"\x08" + b"\xff" * 9 + b"\x01"
    float_list = b"\x0d" + struct.pack("<f", 0.5) + b"\x0d" + struct.pack("<f", -2.0)

    def entry(key: bytes, field: int, payload: bytes) -> bytes:
        feature = bytes([(field << 3) | 2, len(payload)]) + payload
        body = b"\x0a" + bytes([len(key)]) + key + b"\x12" + bytes([len(feature)]) + feature
        return b"\x0a" + bytes([len(body)]) + body

    features = entry(b"i", 3, int64_list) + entry(b"f", 2, float_list)
    example = parse_example(b"\x0a" + bytes([len(features)]) + features)
    assert example.int64_list("i") == [7, -1]
    assert example.float_list("f") == [0.5, -2.0]


def test_example_empty_features_and_unknown_fields() -> None:
    data = serialize_example({"actions": [], "goal": "g"})
    example = parse_example(data + b"\x10\x01")  # an unknown field 2 on Example is skipped
    assert example.text_list("actions") == []
    assert example.int64_list("actions") == []  # an empty feature reads as empty of any kind
    assert "actions" in example and example.names() == ["actions", "goal"]


def test_example_errors_name_the_feature() -> None:
    example = parse_example(serialize_example({"goal": "g", "ids": [1, 2]}))
    with pytest.raises(ExampleError, match="feature 'missing' missing"):
        example.bytes_list("missing")
    with pytest.raises(ExampleError, match="feature 'ids' is a int64_list, not a bytes_list"):
        example.bytes_list("ids")
    with pytest.raises(ExampleError, match="holds 2 integers"):
        example.single_int("ids")
    bad_text = parse_example(serialize_example({"t": [b"\xff\xfe"]}))
    with pytest.raises(ExampleError, match="not UTF-8"):
        bad_text.text_list("t")


def test_unparsable_example_is_an_example_error_per_record(tmp_path: Path) -> None:
    with pytest.raises(ExampleError, match=r"not a tf\.train\.Example"):
        parse_example(b"\x0a\xff")
    path = tmp_path / "mixed"
    write_records(path, [b"\x0a\xff", serialize_example({"goal": "ok"})])
    results = [example for _, example in tfrecord.iter_examples(path)]
    assert isinstance(results[0], ExampleError)
    assert not isinstance(results[1], ExampleError) and results[1].single_text("goal") == "ok"


def test_serialize_rejects_ambiguous_values() -> None:
    with pytest.raises(TypeError, match="mixes"):
        serialize_example({"x": [1, b"a"]})  # type: ignore[list-item]
    with pytest.raises(TypeError, match="bool"):
        serialize_example({"x": [True]})
    with pytest.raises(TypeError, match="cannot store"):
        serialize_example({"x": [None]})  # type: ignore[list-item]


def test_real_androidcontrol_values_survive_a_shard(tmp_path: Path) -> None:
    # The action strings and episode-0 values quoted from the release (samples/)
    # go through a gzip shard byte for byte, and every action is one of the README's eight types.
    samples = Path(__file__).parent / "samples"
    observed = json.loads((samples / "action_strings_observed.json").read_text())["actions"]
    episode0 = json.loads((samples / "episode_0_fragment.json").read_text())
    actions = [json.dumps(episode0["first_action"], separators=(",", ":")), *observed]
    features = {
        "episode_id": [episode0["episode_id"]],
        "goal": [episode0["goal"]],
        "screenshots": [b"png-%d" % i for i in range(len(actions) + 1)],
        "screenshot_widths": [1080] * (len(actions) + 1),
        "screenshot_heights": [2400] * (len(actions) + 1),
        "actions": actions,
        "step_instructions": [episode0["first_step_instruction"]] * len(actions),
    }
    path = tmp_path / "android_control-00000-of-00020"
    write_records(path, [serialize_example(features)])  # type: ignore[arg-type]
    ((_, example),) = list(tfrecord.iter_examples(path))
    assert not isinstance(example, ExampleError)
    assert example.single_text("goal") == "Open the Zoho Meet app , view the scheduled meetings ."
    assert example.text_list("actions") == actions
    assert actions[0] == '{"action_type":"open_app","app_name":"Zoho Meeting"}'
    readme_types = {
        "click",
        "long_press",
        "scroll",
        "open_app",
        "input_text",
        "navigate_home",
        "navigate_back",
        "wait",
    }
    assert {json.loads(a)["action_type"] for a in example.text_list("actions")} <= readme_types
    assert len(example.bytes_list("screenshots")) == len(example.text_list("actions")) + 1
