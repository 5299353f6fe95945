"""TFRecord files and `tf.train.Example` records, without TensorFlow.

A TFRecord file is a sequence of records, each framed as

    uint64 length (little-endian) | uint32 masked CRC-32C of those 8 bytes |
    `length` bytes of data        | uint32 masked CRC-32C of the data

optionally inside one GZIP stream (AndroidControl ships its twenty shards that way, with no file
extension). `iter_records` streams a file one record at a time and checks both CRCs of every
record; anything wrong with the file is a `TFRecordError` naming the file and the byte offset.
`TFRecordWriter` writes the same framing (deterministic gzip, for demo mirrors and fixtures).

`Example` decoding uses the protobuf runtime (already installed: dagster depends on it) with the
Example schema declared here once, in a private descriptor pool. The runtime's C parser handles
every legal encoding of a repeated scalar (packed and unpacked), unknown fields and map entries,
which a hand-written wire decoder would have to re-implement and test; the private pool means a
process that also imports TensorFlow gets no clash over `tensorflow.Example`.
"""

from __future__ import annotations

import gzip
import os
import struct
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Literal, Self

import google_crc32c
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError, Message

Compression = Literal["auto", "gzip", "none"]

_LENGTH = struct.Struct("<Q")
_CRC = struct.Struct("<I")
_HEADER_BYTES = _LENGTH.size + _CRC.size  # 12
_FOOTER_BYTES = _CRC.size  # 4
_MASK_DELTA = 0xA282EAD8
_GZIP_MAGIC = b"\x1f\x8b"
# Record data is read in slices of this size, so a length field that passed its CRC but is
# still absurd (a 2^-32 chance per record) fails as a truncated record instead of allocating.
_READ_SLICE = 16 * 1024 * 1024


class TFRecordError(Exception):
    """A TFRecord file that cannot be read: bad CRC, truncated, bad gzip, empty, unreadable."""

    def __init__(self, path: str | os.PathLike[str], offset: int | None, problem: str) -> None:
        self.path = os.fspath(path)
        self.offset = offset
        self.problem = problem
        where = "" if offset is None else f" at byte {offset}"
        super().__init__(f"{self.path}{where}: {problem}")


class ExampleError(ValueError):
    """A record that is not a usable tf.train.Example (unparsable, or a feature missing/mistyped).

    Separate from TFRecordError on purpose: a framing error breaks the whole file, while a bad
    Example is one record an adapter can count as a drop.
    """


def masked_crc32c(data: bytes | bytearray | memoryview) -> int:
    """TFRecord's masked CRC-32C: rotate right by 15 bits, then add a constant (mod 2^32).

    The mask exists because a CRC of data that itself contains CRCs is weak; the TFRecord format
    stores only masked values."""
    crc = google_crc32c.value(data if isinstance(data, bytes) else bytes(data))
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + _MASK_DELTA) & 0xFFFFFFFF


@dataclass(frozen=True, slots=True)
class TFRecord:
    """One record: its 0-based index in the file, where its header starts in the (uncompressed)
    stream, and its data."""

    index: int
    offset: int
    data: bytes


def _looks_like_raw_tfrecord(head: bytes) -> bool:
    """True when the first 12 bytes are a length with its valid masked CRC. This decides
    between raw and gzip better than the gzip magic alone: a raw file whose first length happens
    to start with 1f 8b still carries a matching CRC, a gzip header almost never does."""
    if len(head) < _HEADER_BYTES:
        return False
    (length_crc,) = _CRC.unpack_from(head, _LENGTH.size)
    return masked_crc32c(head[: _LENGTH.size]) == length_crc


def detect_compression(path: str | os.PathLike[str]) -> Literal["gzip", "none"]:
    """Whether a TFRecord file is GZIP-compressed ("gzip") or raw ("none"), from its first bytes;
    TFRecordError when it is neither."""
    try:
        with open(path, "rb") as raw:
            head = raw.read(_HEADER_BYTES)
    except OSError as err:
        raise TFRecordError(path, None, f"cannot open: {err.strerror or err}") from err
    if not head:
        raise TFRecordError(path, 0, "empty file (0 bytes): no TFRecord stream, not even a gzip header")
    if _looks_like_raw_tfrecord(head):
        return "none"
    if head.startswith(_GZIP_MAGIC):
        return "gzip"
    raise TFRecordError(
        path, 0, f"neither a gzip stream nor a TFRecord (first bytes {head[:4].hex()}, no valid length CRC)"
    )


def _read_exactly(stream: BinaryIO, size: int) -> bytes:
    """Up to `size` bytes (fewer only at the end of the stream), read in bounded slices."""
    if size <= _READ_SLICE:
        return stream.read(size)
    parts: list[bytes] = []
    remaining = size
    while remaining:
        part = stream.read(min(remaining, _READ_SLICE))
        if not part:
            break
        parts.append(part)
        remaining -= len(part)
    return b"".join(parts)


def iter_records(
    path: str | os.PathLike[str],
    compression: Compression = "auto",
    allow_empty: bool = False,
) -> Iterator[TFRecord]:
    """The records of one TFRecord file, lazily, each checked against both of its CRCs.

    `compression` "auto" sniffs the file (see `detect_compression`). A 0-byte file is an error
    unless `allow_empty`: TensorFlow reads it as zero records, but no GZIP writer produces one, so
    for a downloaded shard it means a failed download. Every failure is a TFRecordError whose
    offset is in the uncompressed record stream (for gzip files: the decompressed bytes).
    """
    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError as err:
        raise TFRecordError(path, None, f"cannot open: {err.strerror or err}") from err
    if size == 0:
        if allow_empty:
            return
        raise TFRecordError(path, 0, "empty file (0 bytes)")
    kind = detect_compression(path) if compression == "auto" else compression
    try:
        raw = open(path, "rb")  # noqa: SIM115 - closed in the finally below, after the generator ends
    except OSError as err:
        raise TFRecordError(path, None, f"cannot open: {err.strerror or err}") from err
    stream: BinaryIO = raw
    if kind == "gzip":
        # filename/mtime are read only from the header; the stream is the decompressed bytes.
        stream = gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[assignment]
    elif kind != "none":
        raw.close()
        raise ValueError(f"compression must be 'auto', 'gzip' or 'none', not {compression!r}")
    try:
        yield from _records(path, stream)
    finally:
        stream.close()
        raw.close()


def _records(path: Path, stream: BinaryIO) -> Iterator[TFRecord]:
    offset = 0
    index = 0
    while True:
        try:
            header = _read_exactly(stream, _HEADER_BYTES)
            if not header:
                return
            if len(header) < _HEADER_BYTES:
                raise TFRecordError(
                    path, offset, f"truncated record #{index}: header has {len(header)} of 12 bytes"
                )
            (length,) = _LENGTH.unpack_from(header)
            (length_crc,) = _CRC.unpack_from(header, _LENGTH.size)
            if masked_crc32c(header[: _LENGTH.size]) != length_crc:
                raise TFRecordError(
                    path, offset, f"bad length CRC in record #{index} (length field {length})"
                )
            # Data and its CRC are read separately so the (possibly large) data is never copied.
            data = _read_exactly(stream, length)
            footer = _read_exactly(stream, _FOOTER_BYTES) if len(data) == length else b""
            if len(footer) < _FOOTER_BYTES:
                raise TFRecordError(
                    path,
                    offset,
                    f"truncated record #{index}: {length} data bytes + 4 CRC bytes expected, "
                    f"{len(data) + len(footer)} present",
                )
            (data_crc,) = _CRC.unpack(footer)
            if masked_crc32c(data) != data_crc:
                raise TFRecordError(path, offset, f"bad data CRC in record #{index} ({length} data bytes)")
        except TFRecordError:
            raise
        except (gzip.BadGzipFile, EOFError, zlib.error) as err:
            # EOFError: the gzip stream stopped before its end marker (a truncated download).
            what = "truncated gzip stream" if isinstance(err, EOFError) else "bad gzip stream"
            raise TFRecordError(path, offset, f"{what} in record #{index}: {err}") from err
        except OSError as err:
            raise TFRecordError(path, offset, f"read error in record #{index}: {err}") from err
        yield TFRecord(index, offset, data)
        offset += _HEADER_BYTES + length + _FOOTER_BYTES
        index += 1


def frame_record(data: bytes) -> bytes:
    """One record's bytes in TFRecord framing (header, data, data CRC)."""
    length = _LENGTH.pack(len(data))
    return b"".join((length, _CRC.pack(masked_crc32c(length)), data, _CRC.pack(masked_crc32c(data))))


class TFRecordWriter:
    """Writes records into a TFRecord file, GZIP-compressed by default as AndroidControl ships.

    The gzip header carries no file name and mtime 0, so the same records give the same bytes
    (demo mirrors are generated deterministically). Use as a context manager."""

    def __init__(self, path: str | os.PathLike[str], compression: Literal["gzip", "none"] = "gzip") -> None:
        self.path = Path(path)
        self._raw = open(self.path, "wb")  # noqa: SIM115 - closed by close()
        self._stream: BinaryIO = self._raw
        if compression == "gzip":
            self._stream = gzip.GzipFile(filename="", mode="wb", fileobj=self._raw, mtime=0)  # type: ignore[assignment]
        elif compression != "none":
            self._raw.close()
            raise ValueError(f"compression must be 'gzip' or 'none', not {compression!r}")
        self.records_written = 0

    def write(self, data: bytes) -> None:
        self._stream.write(frame_record(data))
        self.records_written += 1

    def close(self) -> None:
        if self._stream is not self._raw:
            self._stream.close()
        self._raw.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def write_records(
    path: str | os.PathLike[str], records: Sequence[bytes], compression: Literal["gzip", "none"] = "gzip"
) -> None:
    """Write `records` as one TFRecord file."""
    with TFRecordWriter(path, compression) as writer:
        for data in records:
            writer.write(data)


# --- tf.train.Example -------------------------------------------------------------------------


def _example_file_descriptor() -> descriptor_pb2.FileDescriptorProto:
    """The schema of tensorflow/core/example/{example,feature}.proto (field numbers and types are
    the wire contract; names only matter for our own access)."""
    fdp = descriptor_pb2.FileDescriptorProto(
        name="gui_assets_tf_example.proto", package="tensorflow", syntax="proto3"
    )
    F = descriptor_pb2.FieldDescriptorProto
    repeated = F.LABEL_REPEATED
    optional = F.LABEL_OPTIONAL

    def add_list(name: str, scalar: int, packed: bool) -> None:
        message = fdp.message_type.add(name=name)
        field = message.field.add(name="value", number=1, label=repeated, type=scalar)
        if packed:
            field.options.packed = True

    add_list("BytesList", F.TYPE_BYTES, packed=False)
    add_list("FloatList", F.TYPE_FLOAT, packed=True)
    add_list("Int64List", F.TYPE_INT64, packed=True)

    feature = fdp.message_type.add(name="Feature")
    feature.oneof_decl.add(name="kind")
    for number, (field_name, type_name) in enumerate(
        (("bytes_list", "BytesList"), ("float_list", "FloatList"), ("int64_list", "Int64List")), start=1
    ):
        feature.field.add(
            name=field_name,
            number=number,
            label=optional,
            type=F.TYPE_MESSAGE,
            type_name=f".tensorflow.{type_name}",
            oneof_index=0,
        )

    features = fdp.message_type.add(name="Features")
    entry = features.nested_type.add(name="FeatureEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, label=optional, type=F.TYPE_STRING)
    entry.field.add(
        name="value", number=2, label=optional, type=F.TYPE_MESSAGE, type_name=".tensorflow.Feature"
    )
    features.field.add(
        name="feature",
        number=1,
        label=repeated,
        type=F.TYPE_MESSAGE,
        type_name=".tensorflow.Features.FeatureEntry",
    )

    example = fdp.message_type.add(name="Example")
    example.field.add(
        name="features", number=1, label=optional, type=F.TYPE_MESSAGE, type_name=".tensorflow.Features"
    )
    return fdp


_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_example_file_descriptor())
_ExampleMessage = message_factory.GetMessageClass(_POOL.FindMessageTypeByName("tensorflow.Example"))

FeatureValues = list[bytes] | list[int] | list[float]
FeatureKind = Literal["bytes_list", "int64_list", "float_list"]


class Example:
    """A decoded tf.train.Example: feature name -> (kind, values), with typed accessors that
    raise ExampleError naming the feature when it is missing or of another kind."""

    __slots__ = ("features",)

    def __init__(self, features: dict[str, tuple[FeatureKind | None, FeatureValues]]) -> None:
        self.features = features

    @classmethod
    def parse(cls, data: bytes) -> Example:
        message: Message = _ExampleMessage()
        try:
            message.ParseFromString(data)
        except DecodeError as err:
            raise ExampleError(f"not a tf.train.Example ({len(data)} bytes): {err}") from err
        features: dict[str, tuple[FeatureKind | None, FeatureValues]] = {}
        for name, feature in message.features.feature.items():  # type: ignore[attr-defined]
            kind = feature.WhichOneof("kind")
            values: FeatureValues = list(getattr(feature, kind).value) if kind else []
            features[name] = (kind, values)
        return cls(features)

    def __contains__(self, name: str) -> bool:
        return name in self.features

    def names(self) -> list[str]:
        return sorted(self.features)

    def _values(self, name: str, kind: FeatureKind) -> FeatureValues:
        if name not in self.features:
            raise ExampleError(f"feature {name!r} missing (present: {', '.join(self.names()) or 'none'})")
        found, values = self.features[name]
        # A feature with no kind set, or an empty list of any kind, reads as zero values of any
        # kind: TensorFlow's own parser treats both as an empty feature.
        if found is not None and found != kind and values:
            raise ExampleError(f"feature {name!r} is a {found}, not a {kind}")
        return values

    def bytes_list(self, name: str) -> list[bytes]:
        return self._values(name, "bytes_list")  # type: ignore[return-value]

    def int64_list(self, name: str) -> list[int]:
        return self._values(name, "int64_list")  # type: ignore[return-value]

    def float_list(self, name: str) -> list[float]:
        return self._values(name, "float_list")  # type: ignore[return-value]

    def text_list(self, name: str) -> list[str]:
        """A bytes feature as UTF-8 strings; undecodable bytes are an ExampleError."""
        try:
            return [value.decode("utf-8") for value in self.bytes_list(name)]
        except UnicodeDecodeError as err:
            raise ExampleError(f"feature {name!r} holds bytes that are not UTF-8: {err}") from err

    def single_int(self, name: str) -> int:
        values = self.int64_list(name)
        if len(values) != 1:
            raise ExampleError(f"feature {name!r} holds {len(values)} integers, expected one")
        return values[0]

    def single_text(self, name: str) -> str:
        values = self.text_list(name)
        if len(values) != 1:
            raise ExampleError(f"feature {name!r} holds {len(values)} strings, expected one")
        return values[0]


def parse_example(data: bytes) -> Example:
    """A serialized tf.train.Example; ExampleError when the bytes are not one."""
    return Example.parse(data)


ExampleInput = Mapping[
    str, Sequence[bytes] | Sequence[str] | Sequence[int] | Sequence[float] | bytes | str | int | float
]


def _kind_of(name: str, values: Sequence[object]) -> FeatureKind:
    kinds = set()
    for value in values:
        if isinstance(value, bytes | str):
            kinds.add("bytes_list")
        elif isinstance(value, bool):
            raise TypeError(f"feature {name!r}: bool is ambiguous; pass 0/1")
        elif isinstance(value, int):
            kinds.add("int64_list")
        elif isinstance(value, float):
            kinds.add("float_list")
        else:
            raise TypeError(f"feature {name!r}: cannot store a {type(value).__name__}")
    if len(kinds) > 1:
        raise TypeError(f"feature {name!r} mixes {sorted(kinds)}")
    # An empty list is written as an empty bytes_list: every kind reads back as zero values.
    return kinds.pop() if kinds else "bytes_list"  # type: ignore[return-value]


def serialize_example(features: ExampleInput) -> bytes:
    """A tf.train.Example from name -> values (bytes/str -> bytes_list, int -> int64_list,
    float -> float_list; a bare scalar is a one-value list). Keys are written in sorted order so
    the same features give the same bytes."""
    message: Message = _ExampleMessage()
    feature_map = message.features.feature  # type: ignore[attr-defined]
    for name in sorted(features):
        raw = features[name]
        values: Sequence[object] = [raw] if isinstance(raw, bytes | str | int | float) else raw
        kind = _kind_of(name, values)
        target = getattr(feature_map[name], kind)
        if kind == "bytes_list":
            target.value.extend(v.encode("utf-8") if isinstance(v, str) else v for v in values)
        else:
            target.value.extend(values)
        if not values:
            target.SetInParent()  # keep the empty feature present, with its kind set
    return message.SerializeToString(deterministic=True)


def iter_examples(
    path: str | os.PathLike[str], compression: Compression = "auto"
) -> Iterator[tuple[TFRecord, Example | ExampleError]]:
    """Each record of a file with its Example, or the ExampleError that record raised (framing
    errors still raise TFRecordError: they end the file)."""
    for record in iter_records(path, compression):
        try:
            yield record, Example.parse(record.data)
        except ExampleError as err:
            yield record, err


__all__ = [
    "Example",
    "ExampleError",
    "TFRecord",
    "TFRecordError",
    "TFRecordWriter",
    "detect_compression",
    "frame_record",
    "iter_examples",
    "iter_records",
    "masked_crc32c",
    "parse_example",
    "serialize_example",
    "write_records",
]
