"""The fuzz suite's damage vocabulary: one thing broken in one raw file of a demo mirror.

Used by `fuzz_cases.run_case` (the CI suite and `fuzz_explore`), by the Pango events fuzz and by
`test_memory_bounds` (the forged-size screenshots). Every function is deterministic given its
`random.Random`, so a case replays from its seed.

- records: a JSON value anywhere in a record deleted, nulled, retyped, NaN or infinite, out of
  range, empty, huge, with a lone surrogate or a NUL, or the line made non-UTF-8;
- images: truncated, a flipped byte, empty, text, JPEG garbage, or a forged size: a zero-size
  or huge PNG header, a 30000x30000 PNG header over too little data, a JPEG header claiming
  12000x60000 over a few KB, a real (valid, all-blank) 12000x20000 palette PNG of ~200 KB;
- archives: a member renamed to an absolute or `..` path, turned into a symlink, a
  thousandfold-compressible bomb, a zip nested under the member's name, or 64 MB of zeros whose
  headers declare the member's own small size;
- CSV tables: a cell's value damaged as above, a field too many or too few, a quote never closed;
- parts of a file cut in pieces (`screenshots_01`, `x.z01`): a flipped, inserted or deleted run
  of bytes, or the part gone;
- gzip-compressed TFRecord files (`name-00000-of-00020`): one record's payload damaged and framed
  again with valid checksums, or the framing or the compressed stream damaged;
- files: truncated at a random byte.

A file gets the damage of its format (`damage_route`: by suffix, by the name of a part or of a
sharded record file, or by content for an image under another name); a file of no known format
is refused by name (`UndamageableFile`), never left alone, and `test_fuzz` checks every
registered source's raw files have a route.
"""

from __future__ import annotations

import csv
import functools
import gzip
import io
import json
import math
import random
import re
import struct
import zipfile
import zlib
from pathlib import Path
from typing import Any

import google_crc32c
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

# --- damage to JSON values ---------------------------------------------------------------

VALUE_DAMAGE = (
    "delete",
    "null",
    "int",
    "float",
    "str",
    "list",
    "dict",
    "bool",
    "nan",
    "inf",
    "-inf",
    "huge",
    "negative",
    "empty",
    "long",
    "surrogate",
    "nul",
)


def _paths(obj: Any, prefix: tuple = (), out: list | None = None, limit: int = 4000) -> list[tuple]:
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.append((*prefix, k))
            _paths(v, (*prefix, k), out, limit)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.append((*prefix, i))
            _paths(v, (*prefix, i), out, limit)
    return out


def _damaged_value(kind: str, old: Any, rng: random.Random) -> Any:
    return {
        "null": None,
        "int": rng.choice([0, -1, 7, 2**63]),
        "float": rng.choice([0.5, -3.25, 1e300]),
        "str": rng.choice(["", "x", "12", "[1, 2]", "{}", "CLICK"]),
        "list": [old, old] if rng.random() < 0.5 else [],
        "dict": {"value": old},
        "bool": rng.random() < 0.5,
        "nan": math.nan,
        "inf": math.inf,
        "-inf": -math.inf,
        "huge": 10**30,
        "negative": -abs(old) - 1 if isinstance(old, int | float) and not isinstance(old, bool) else -1,
        "empty": type(old)() if isinstance(old, str | list | dict) else "",
        "long": "w" * 100_000,
        "surrogate": "abc\ud800def",
        "nul": "a\x00b",
    }[kind]


def damage_tree(doc: Any, kind: str, rng: random.Random) -> tuple[Any, str]:
    """Apply one damage at a random path of a JSON document; returns (doc, what was done)."""
    paths = _paths(doc)
    if not paths:
        return _damaged_value(kind if kind != "delete" else "null", doc, rng), f"{kind} at root"
    path = rng.choice(paths)
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    key = path[-1]
    if kind == "delete" and isinstance(parent, dict):
        del parent[key]
    elif kind in ("delete", "empty") and isinstance(parent, list):
        # Fewer list items is different data, not damage: damage the item instead.
        parent[key] = None
    else:
        parent[key] = _damaged_value(kind, parent[key], rng)
    return doc, f"{kind} at {'/'.join(map(str, path))[:80]}"


def _dumps(doc: Any) -> str:
    return json.dumps(doc)  # NaN/Infinity as JS tokens, lone surrogates as \\ud800 escapes


def _non_utf8(text: str, rng: random.Random) -> bytes:
    raw = text.encode("utf-8", "surrogatepass")
    quotes = [i for i, b in enumerate(raw) if b == 0x22] or [0]
    at = rng.choice(quotes) + 1
    return raw[:at] + b"\xc3\x28\xff" + raw[at:]


# --- damage to images --------------------------------------------------------------------

IMAGE_DAMAGE = (
    "truncate",
    "flip",
    "empty",
    "zero_png",
    "huge_png",
    "big_png",
    "big_jpeg",
    "tall_png",
    "jpeg_garbage",
    "text",
)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _png_header(width: int, height: int, colour: int = 2) -> bytes:
    """A PNG signature and IHDR (8-bit, non-interlaced) claiming width x height."""
    return PNG_SIGNATURE + png_chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, colour, 0, 0, 0))


def forged_png(width: int, height: int, payload: bytes = b"") -> bytes:
    """A well-formed PNG (every CRC right) claiming width x height over `payload` as its only
    IDAT: far too little data for the size, which only the data-size check can tell."""
    idat = png_chunk(b"IDAT", zlib.compress(payload)) if payload else b""
    return _png_header(width, height) + idat + png_chunk(b"IEND", b"")


@functools.cache
def _small_jpeg() -> bytes:
    pixels = (np.arange(16 * 16 * 3, dtype=np.uint32) * 37 % 251).astype(np.uint8).reshape(16, 16, 3)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "JPEG", quality=90)
    return out.getvalue()


def forged_jpeg(width: int, height: int) -> bytes:
    """A real 16x16 baseline JPEG whose frame header (SOF0) claims width x height: a few KB that
    every decoder accepts (the missing scan lines come out grey)."""
    data = bytearray(_small_jpeg())
    pos = 2
    while pos + 4 <= len(data) and data[pos] == 0xFF:
        marker, length = data[pos + 1], struct.unpack(">H", data[pos + 2 : pos + 4])[0]
        if marker == 0xC0:
            data[pos + 5 : pos + 9] = struct.pack(">HH", height, width)
            return bytes(data)
        pos += 2 + length
    raise AssertionError("the encoder wrote no SOF0 marker")


@functools.cache
def blank_png(width: int, height: int) -> bytes:
    """A real, valid 8-bit palette PNG of width x height, every pixel palette entry 0: it
    deflates about 1000:1, so a page-sized image is a few hundred KB that passes every header
    and data-size check. (A palette PNG is not the RGB/RGBA fast path of the decoder.)"""
    deflate = zlib.compressobj(9)
    row = bytes(1 + width)  # the filter byte and one index per pixel
    idat = b"".join(deflate.compress(row) for _ in range(height)) + deflate.flush()
    return (
        _png_header(width, height, colour=3)
        + png_chunk(b"PLTE", b"\xff\xff\xff" * 2)
        + png_chunk(b"IDAT", idat)
        + png_chunk(b"IEND", b"")
    )


def damage_image(data: bytes, kind: str, rng: random.Random) -> bytes:
    if kind == "truncate":
        return data[: rng.randrange(1, max(2, len(data)))]
    if kind == "flip":
        b = bytearray(data)
        if b:
            i = rng.randrange(len(b) // 4, len(b)) if len(b) > 4 else 0
            b[i] ^= 0xFF
        return bytes(b)
    if kind == "empty":
        return b""
    if kind == "zero_png":
        return _png_header(0, 1080) + data[33:]
    if kind == "huge_png":  # over the pixel limit: refused from the header alone
        return _png_header(200_000, 200_000) + data[33:]
    if kind == "big_png":  # within the limit, but the pixel data is far too short
        return _png_header(30_000, 30_000) + data[33:]
    if kind == "big_jpeg":  # a size only Mind2Web's full pages reach, over a few KB of data
        return forged_jpeg(12_000, 60_000)
    if kind == "tall_png":  # a real image of a size only Mind2Web's full pages reach
        return blank_png(12_000, 20_000)
    if kind == "jpeg_garbage":
        return b"\xff\xd8\xff\xe0" + bytes(rng.randrange(256) for _ in range(256))
    return b"this is not an image"


def _is_image(data: bytes) -> bool:
    return data.startswith((b"\x89PNG", b"\xff\xd8\xff", b"RIFF"))


# --- damage to files ---------------------------------------------------------------------


def damage_parquet(path: Path, rng: random.Random, value_kind: str, image_kind: str) -> str:
    table = pq.read_table(path)
    rows = table.to_pylist()
    if not rows:
        return "empty table left alone"
    i = rng.randrange(len(rows))
    col = rng.choice(table.column_names)
    cell = rows[i][col]
    what = f"row {i} column {col}: "
    if isinstance(cell, dict) and isinstance(cell.get("bytes"), bytes) and cell["bytes"]:
        cell = {**cell, "bytes": damage_image(cell["bytes"], image_kind, rng)}
        what += f"image {image_kind}"
    elif isinstance(cell, bytes) and _is_image(cell):
        cell = damage_image(cell, image_kind, rng)
        what += f"image {image_kind}"
    elif isinstance(cell, str) and cell[:1] in "[{":
        try:
            doc, how = damage_tree(json.loads(cell), value_kind, rng)
            cell = _dumps(doc)
            what += f"json {how}"
        except ValueError:
            cell, what = "", what + "blanked"
    elif isinstance(cell, list) and cell and isinstance(cell[0], str) and cell[0][:1] == "{":
        j = rng.randrange(len(cell))
        doc, how = damage_tree(json.loads(cell[j]), value_kind, rng)
        cell = [*cell[:j], _dumps(doc), *cell[j + 1 :]]
        what += f"list item json {how}"
    else:
        cell = None
        what += "nulled"
    rows[i][col] = cell
    try:
        pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)
    except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeEncodeError):
        rows[i][col] = None
        pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)
        what += " (unencodable: nulled)"
    return what


def damage_json_lines(path: Path, rng: random.Random, value_kind: str) -> str:
    lines = path.read_bytes().split(b"\n")
    idx = [i for i, ln in enumerate(lines) if ln.strip()]
    if not idx:
        return "no lines"
    i = rng.choice(idx)
    try:
        doc = json.loads(lines[i])
    except ValueError:  # a line the demo already breaks: cut it further
        lines[i] = lines[i][: len(lines[i]) // 2]
        path.write_bytes(b"\n".join(lines))
        return f"line {i}: broken line cut"
    if rng.random() < 0.15:
        lines[i] = _non_utf8(lines[i].decode("utf-8"), rng)
        how = "non-UTF-8 line"
    else:
        doc, how = damage_tree(doc, value_kind, rng)
        lines[i] = _dumps(doc).encode("utf-8", "surrogatepass")
    path.write_bytes(b"\n".join(lines))
    return f"line {i}: {how}"


def damage_json_bytes(raw: bytes, rng: random.Random, value_kind: str) -> tuple[bytes, str]:
    doc = json.loads(raw)  # ValueError for a document that is not JSON: callers cut it instead
    if rng.random() < 0.1:
        return _non_utf8(raw.decode("utf-8"), rng), "non-UTF-8"
    doc, how = damage_tree(doc, value_kind, rng)
    return _dumps(doc).encode("utf-8", "surrogatepass"), how


ARCHIVE_DAMAGE = ("member", "member", "member", "absolute", "dotdot", "symlink", "bomb", "liar", "nested")
LIAR_BYTES = 64 << 20  # what a lying member really inflates to (its headers say far less)


def _nested(name: str, data: bytes) -> bytes:
    """A zip holding the member: an archive inside the archive, under the member's own name."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as inner:
        inner.writestr(name.rsplit("/", 1)[-1], data)
    return buf.getvalue()


def _understate(path: Path, name: str, declared: int) -> None:
    """Patch both headers of member `name` to declare `declared` uncompressed bytes."""
    raw = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as z:
        local = z.getinfo(name).header_offset
    raw[local + 22 : local + 26] = declared.to_bytes(4, "little")
    encoded = name.encode("utf-8")
    at = raw.find(b"PK\x01\x02")
    while at != -1:
        n = int.from_bytes(raw[at + 28 : at + 30], "little")
        if raw[at + 46 : at + 46 + n] == encoded:
            raw[at + 24 : at + 28] = declared.to_bytes(4, "little")
            break
        at = raw.find(b"PK\x01\x02", at + 46)
    path.write_bytes(bytes(raw))


def damage_zip(path: Path, rng: random.Random, value_kind: str, image_kind: str) -> str:
    try:
        with zipfile.ZipFile(path) as z:
            infos = [i for i in z.infolist() if not i.is_dir()]
            members = [(i, z.read(i)) for i in infos]
    except (zipfile.BadZipFile, OSError, zlib.error):  # already broken (a demo edge case): break more
        path.write_bytes(damage_image(path.read_bytes(), "flip", rng))
        return "broken archive: a byte flipped"
    if not members:
        return "empty archive left alone"
    j = rng.randrange(len(members))
    info, data = members[j]
    kind = rng.choice(ARCHIVE_DAMAGE)
    new = zipfile.ZipInfo(info.filename, info.date_time)
    new.compress_type = info.compress_type
    new.external_attr = info.external_attr
    what = f"{info.filename}: "
    if kind == "member":
        if _is_image(data):
            data, what = damage_image(data, image_kind, rng), what + f"image {image_kind}"
        elif info.filename.endswith((".trace", ".network", ".jsonl")):
            lines = data.split(b"\n")
            k = rng.randrange(len(lines))
            try:
                doc, how = damage_tree(json.loads(lines[k]), value_kind, rng)
                lines[k] = _dumps(doc).encode("utf-8", "surrogatepass")
            except ValueError:
                lines[k], how = b"{not json", "line broken"
            data, what = b"\n".join(lines), what + f"line {k} {how}"
        else:
            try:
                data, how = damage_json_bytes(data, rng, value_kind)
                what += how
            except ValueError:
                data, what = data[: len(data) // 2], what + "cut in half"
    elif kind in ("absolute", "dotdot"):
        name = info.filename.rsplit("/", 1)[-1]
        new.filename = f"/tmp/{name}" if kind == "absolute" else f"../../{name}"
        what += f"renamed {new.filename}"
    elif kind == "symlink":
        new.create_system = 3
        new.external_attr = 0o120777 << 16
        data, what = b"/etc/passwd", what + "made a symlink to /etc/passwd"
    elif kind == "nested":
        data, what = _nested(info.filename, data), what + "replaced by a zip holding it"
    elif kind == "liar":  # 64 MB of zeros whose headers claim the member's own size
        declared = max(len(data), 70_000)  # above a thousandth of what it compresses to
        new.compress_type = zipfile.ZIP_DEFLATED
        data, what = b"\0" * LIAR_BYTES, what + f"inflates to 64 MB, headers say {declared} B"
    else:  # a bomb under the member's name: 4 MB of zeros in a few KB
        new.compress_type = zipfile.ZIP_DEFLATED
        data, what = b"\0" * (4 << 20), what + "replaced by a 1000:1 bomb"
    members[j] = (new, data)
    with zipfile.ZipFile(path, "w") as z:
        for i, d in members:
            z.writestr(i, d)
    if kind == "liar":
        _understate(path, new.filename, declared)
    return what


CSV_DAMAGE = ("cell", "cell", "cell", "extra_field", "missing_field", "open_quote")


def _encoded(text: str) -> bytes:
    """Text back to bytes: bytes that were not UTF-8 stay as they were, a lone surrogate that
    damage put in becomes the invalid bytes a broken writer would leave."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def damage_csv(path: Path, rng: random.Random, value_kind: str) -> str:
    """One data row of a CSV table (quoted fields, embedded newlines) damaged: a cell's value
    (JSON inside it damaged as JSON), a field added or removed, or a quote left open to the end."""
    rows = list(csv.reader(io.StringIO(path.read_bytes().decode("utf-8", "surrogateescape"), newline="")))
    if len(rows) < 2:  # no data row: the header is all there is to break
        path.write_bytes(damage_image(path.read_bytes(), "flip", rng))
        return "no data row: a byte flipped"
    i = rng.randrange(1, len(rows))
    row, kind = rows[i], rng.choice(CSV_DAMAGE)
    if not row and kind != "open_quote":  # a blank line has no cell to damage or remove
        kind = "extra_field"
    if kind == "cell":
        j = rng.randrange(len(row))
        column = rows[0][j] if j < len(rows[0]) else str(j)
        try:
            doc, how = damage_tree(json.loads(row[j]), value_kind, rng) if row[j][:1] in "[{" else (None, "")
        except ValueError:
            doc, how = None, ""
        if how:
            row[j], how = _dumps(doc), f"json {how}"
        else:
            new = _damaged_value(value_kind if value_kind != "delete" else "empty", row[j], rng)
            row[j], how = new if isinstance(new, str) else _dumps(new), f"value {value_kind}"
        what = f"row {i} column {column}: {how}"
    elif kind == "extra_field":
        row.append("surplus")
        what = f"row {i}: a field too many"
    elif kind == "missing_field":
        row.pop()
        what = f"row {i}: a field too few"
    else:
        what = f"row {i}: a quote never closed"
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerows(rows[:i] if kind == "open_quote" else rows)
    if kind == "open_quote":
        out.write('"' + ",".join(row) + "\n")
        writer.writerows(rows[i + 1 :])
    path.write_bytes(_encoded(out.getvalue()))
    return what


def _damage_json_file(path: Path, rng: random.Random, value_kind: str, image_kind: str) -> str:
    try:
        raw, how = damage_json_bytes(path.read_bytes(), rng, value_kind)
    except ValueError:
        raw, how = path.read_bytes()[:-7], "broken JSON cut"
    path.write_bytes(raw)
    return how


def _damage_image_file(path: Path, rng: random.Random, value_kind: str, image_kind: str) -> str:
    path.write_bytes(damage_image(path.read_bytes(), image_kind, rng))
    return f"image {image_kind}"


# The damage of each format a raw file can have: (path, rng, value_kind, image_kind) -> what.
# Files without a suffix named for what they are: a part of a file cut in byte ranges or volumes,
# and one shard of a sharded record file.
_PART_NAME = re.compile(r"(_\d+|\.z\d+)$")
_SHARD_NAME = re.compile(r"-\d{5}-of-\d{5}$")
_GZIP_MAGIC = b"\x1f\x8b"


def _damage_bytes(raw: bytes, rng: random.Random) -> tuple[bytes, str]:
    """One run of bytes flipped, inserted or deleted at a random offset."""
    at = rng.randrange(0, max(1, len(raw)))
    n = rng.randint(1, 64)
    kind = rng.choice(["flipped", "inserted", "deleted"])
    if kind == "flipped":
        run = bytes(b ^ 0xFF for b in raw[at : at + n])
        return raw[:at] + run + raw[at + len(run) :], f"{len(run)} byte(s) flipped at {at}"
    if kind == "inserted":
        return raw[:at] + rng.randbytes(n) + raw[at:], f"{n} byte(s) inserted at {at}"
    return raw[:at] + raw[at + n :], f"{n} byte(s) deleted at {at}"


def _damage_part(path: Path, rng: random.Random, value_kind: str, image_kind: str) -> str:
    if rng.random() < 0.15:
        path.unlink()
        return "part missing"
    raw, label = _damage_bytes(path.read_bytes(), rng)
    path.write_bytes(raw)
    return f"part: {label}"


def _masked_crc32c(data: bytes) -> int:
    """TFRecord's checksum: CRC-32C rotated right by 15 bits plus a constant."""
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _framed(payload: bytes) -> bytes:
    length = struct.pack("<Q", len(payload))
    return (
        length
        + struct.pack("<I", _masked_crc32c(length))
        + payload
        + struct.pack("<I", _masked_crc32c(payload))
    )


def _records(stream: bytes) -> list[bytes]:
    """The payloads of a TFRecord stream (framing as written, checksums not judged here)."""
    payloads, at = [], 0
    while at + 12 <= len(stream):
        (n,) = struct.unpack_from("<Q", stream, at)
        payloads.append(stream[at + 12 : at + 12 + n])
        at += 12 + n + 4
    return payloads


def _damage_gzip_records(path: Path, rng: random.Random, value_kind: str, image_kind: str) -> str:
    """Mostly one record's payload damaged and framed again with valid checksums, so the damage
    reaches the record's decoding; else the framing or the compressed stream itself."""
    compressed = path.read_bytes()
    if rng.random() < 0.2:
        raw, label = _damage_bytes(compressed, rng)
        path.write_bytes(raw)
        return f"gzip stream: {label}"
    stream = gzip.decompress(compressed)
    payloads = _records(stream)
    if not payloads or rng.random() < 0.25:
        damaged, label = _damage_bytes(stream, rng)
        path.write_bytes(gzip.compress(damaged, mtime=0))
        return f"records: {label}"
    i = rng.randrange(len(payloads))
    payloads[i], label = _damage_bytes(payloads[i], rng)
    path.write_bytes(gzip.compress(b"".join(map(_framed, payloads)), mtime=0))
    return f"record {i}, checksums valid: {label}"


ROUTES = {
    ".parquet": damage_parquet,
    ".zip": damage_zip,
    ".jsonl": lambda path, rng, value_kind, image_kind: damage_json_lines(path, rng, value_kind),
    ".json": _damage_json_file,
    ".csv": lambda path, rng, value_kind, image_kind: damage_csv(path, rng, value_kind),
    ".png": _damage_image_file,
    ".jpg": _damage_image_file,
    ".jpeg": _damage_image_file,
    "part": _damage_part,
    "gzip records": _damage_gzip_records,
}


class UndamageableFile(ValueError):
    """A raw file of a format the fuzz vocabulary has no damage for."""


def damage_route(path: Path) -> str | None:
    """The ROUTES key of the damage `path` gets: its suffix, the name of a part or of a gzip
    shard of records, or `.png` for an image under another name; None when no damage fits it."""
    suffix = path.suffix.lower()
    if suffix in ROUTES:
        return suffix
    with path.open("rb") as f:
        head = f.read(16)
    if _PART_NAME.search(path.name):
        return "part"
    if _SHARD_NAME.search(path.name) and head.startswith(_GZIP_MAGIC):
        return "gzip records"
    return ".png" if _is_image(head) else None


def damage_file(path: Path, rng: random.Random, value_kind: str, image_kind: str) -> str:
    route = damage_route(path)
    if route is None:
        raise UndamageableFile(f"{path}: no damage for this format (fuzz_damage.ROUTES): add one")
    if rng.random() < 0.12:  # the whole file: truncated at a random byte
        raw = path.read_bytes()
        path.write_bytes(raw[: rng.randrange(0, max(1, len(raw)))])
        return "file truncated"
    return ROUTES[route](path, rng, value_kind, image_kind)
