"""Fuzzing every adapter with mutations of its real-format demo mirror (Hypothesis).

Each case copies one source's demo mirror, damages one thing in one raw file, and builds the
partition end to end (adapter, IR, splits, shards, dataset_info). Damage is drawn from:

- records: a JSON value anywhere in a record (a parquet cell, a JSON string inside it, a
  JSON-lines row, a JSON file, a JSON member of a zip) deleted, nulled, retyped, NaN or
  infinite, out of range, empty, huge, with a lone surrogate or a NUL, or the line made
  non-UTF-8;
- images: truncated, a flipped byte, empty, a forged zero-size or huge PNG header, JPEG
  garbage, text; wherever the source keeps them (parquet bytes, zip members, files);
- archives: a member renamed to an absolute or `..` path, turned into a symlink, or a
  thousandfold-compressible bomb;
- files: truncated at a random byte.

What must hold: no crash (only a named RawInputError / EmptyPartitionError naming the damaged
file may fail the partition); a record that is lost is counted under a drop reason; at most
the damaged episode is lost to record damage; the shards that come out keep the mask table
(no NaN, nothing outside [0, 1], no invented coordinate); nothing is written outside the
build. The number of cases run per source is printed at the end of the test session.
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import struct
import zipfile
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gui_assets import invariants, shard_reader
from gui_assets.layout import OutLayout
from gui_assets.mirror import RawInputError
from gui_assets.pipeline import EmptyPartitionError, RawSettings, build_directory, fetch_raw
from gui_assets.sources import AGENTNET, CUAGYM, MIND2WEB, PANGO, WEBARENA, WEBLINX, SourceSpec

FUZZ_CASES: Counter[str] = Counter()  # printed by conftest.pytest_terminal_summary
FUZZ_OUTCOMES: Counter[str] = Counter()

TARGETS: list[tuple[SourceSpec, str]] = [
    (MIND2WEB, "train"),
    (AGENTNET, "ubuntu"),
    (WEBLINX, "train"),
    (WEBARENA, "human"),
    (PANGO, "sample"),
    (CUAGYM, "browser_use"),
]
# CI runs a fixed set of cases; GUI_ASSETS_FUZZ_EXAMPLES=N explores N fresh random ones per source.
EXAMPLES_PER_SOURCE = int(os.environ.get("GUI_ASSETS_FUZZ_EXAMPLES") or 30)
EXPLORE = bool(os.environ.get("GUI_ASSETS_FUZZ_EXAMPLES"))
# Episodes one damaged record can hold: a Pango row is a recording whose session_id splits it.
RECORD_SPAN = {"pango": 2}

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

IMAGE_DAMAGE = ("truncate", "flip", "empty", "zero_png", "huge_png", "big_png", "jpeg_garbage", "text")


def _png_header(width: int, height: int) -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + chunk + struct.pack(">I", zlib.crc32(chunk))


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


ARCHIVE_DAMAGE = ("member", "member", "member", "absolute", "dotdot", "symlink", "bomb")


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
    else:  # a bomb under the member's name: 4 MB of zeros in a few KB
        new.compress_type = zipfile.ZIP_DEFLATED
        data, what = b"\0" * (4 << 20), what + "replaced by a 1000:1 bomb"
    members[j] = (new, data)
    with zipfile.ZipFile(path, "w") as z:
        for i, d in members:
            z.writestr(i, d)
    return what


def damage_file(path: Path, rng: random.Random, value_kind: str, image_kind: str) -> str:
    if rng.random() < 0.12:  # the whole file: truncated at a random byte
        raw = path.read_bytes()
        path.write_bytes(raw[: rng.randrange(0, max(1, len(raw)))])
        return "file truncated"
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return damage_parquet(path, rng, value_kind, image_kind)
    if suffix == ".zip":
        return damage_zip(path, rng, value_kind, image_kind)
    if suffix == ".jsonl":
        return damage_json_lines(path, rng, value_kind)
    if suffix == ".json":
        try:
            raw, how = damage_json_bytes(path.read_bytes(), rng, value_kind)
        except ValueError:
            raw, how = path.read_bytes()[:-7], "broken JSON cut"
        path.write_bytes(raw)
        return how
    if suffix in (".png", ".jpg", ".jpeg"):
        path.write_bytes(damage_image(path.read_bytes(), image_kind, rng))
        return f"image {image_kind}"
    return "left alone"


# --- the harness -------------------------------------------------------------------------


def _raw_files(spec: SourceSpec, key: str, mirror: Path, out: Path) -> list[Path]:
    """Every file the partition reads (folders expanded): the build's own raw fetch lists them."""
    part = fetch_raw(spec, key, OutLayout(out), RawSettings("mirror", mirror))
    files: list[Path] = []
    for f in part.files:
        p = part.root / f.path
        files.extend(sorted(q for q in p.rglob("*") if q.is_file()) if p.is_dir() else [p])
    return files


def _acting_steps(stats: dict[str, Any]) -> int:
    return stats["steps"] - stats["action_type_counts"].get("SCROLL", 0)


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.fixture(scope="module")
def baselines(demo_mirror: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    out = tmp_path_factory.mktemp("fuzz-baseline")
    found = {}
    for spec, key in TARGETS:
        info = build_directory(spec, key, out, RawSettings("mirror", demo_mirror))
        found[spec.name] = info.stats
    return found


@pytest.mark.parametrize(("spec", "key"), TARGETS, ids=[s.name for s, _ in TARGETS])
def test_damaged_raw_data_is_counted_never_crashes(spec, key, demo_mirror, baselines, tmp_path_factory):
    base = baselines[spec.name]

    @settings(
        max_examples=EXAMPLES_PER_SOURCE,
        deadline=None,
        derandomize=not EXPLORE,  # the same cases on every CI run unless exploring
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(
        file_pick=st.integers(0, 10_000),
        value_kind=st.sampled_from(VALUE_DAMAGE),
        image_kind=st.sampled_from(IMAGE_DAMAGE),
        seed=st.integers(0, 2**32 - 1),
    )
    def case(file_pick: int, value_kind: str, image_kind: str, seed: int) -> None:
        work = tmp_path_factory.mktemp(f"fuzz-{spec.name}")
        mirror = work / "mirror"
        shutil.copytree(demo_mirror / spec.repo_id, mirror / spec.repo_id, symlinks=True)
        files = _raw_files(spec, key, mirror, work / "out")
        target = files[file_pick % len(files)]
        rng = random.Random(seed)
        what = damage_file(target, rng, value_kind, image_kind)
        label = f"{spec.name}: {target.relative_to(mirror)}: {what}"[:300]
        mirror_before = _tree(work)
        out = work / "out"
        FUZZ_CASES[spec.name] += 1
        try:
            info = build_directory(spec, key, out, RawSettings("mirror", mirror))
        except (RawInputError, EmptyPartitionError) as e:
            FUZZ_OUTCOMES["partition failed by name"] += 1
            names = {target.name, target.parent.name}
            assert any(n in str(e) for n in names) or isinstance(e, EmptyPartitionError), (label, str(e))
            return
        finally:
            created = _tree(work) - mirror_before
            outside = sorted(c for c in created if not c.startswith("out"))
            assert not outside, (label, outside)  # nothing written outside the build
            shutil.rmtree(mirror, ignore_errors=True)
        s = info.stats
        # Steps are compared without SCROLL: Mind2Web derives its wheel steps from where the
        # target sits, so a moved target changes their number without losing a record.
        lost = s["episodes_out"] < base["episodes_out"] or _acting_steps(s) < _acting_steps(base)
        if lost:
            FUZZ_OUTCOMES["records dropped and counted"] += 1
            # A silent loss would leave the drop table as it was (a lost episode can take the
            # step drops it used to have with it, so totals alone do not tell).
            assert s["drops"] != base["drops"] or s["episodes_in"] < base["episodes_in"], (
                label,
                s["drops"],
                base["drops"],
            )
        else:
            FUZZ_OUTCOMES["built whole"] += 1
        if "truncated" not in what and target.suffix != ".json":
            span = RECORD_SPAN.get(spec.name, 1)  # record damage: the episodes around it are kept
            assert s["episodes_out"] >= base["episodes_out"] - span, (
                label,
                s["episodes_out"],
                base["episodes_out"],
            )
        directory = spec.directory(key)
        shards = shard_reader.shard_files(OutLayout(out).directory(directory), directory)
        verdict = invariants.action_mask(shards)
        assert verdict.passed, (label, verdict.summary, verdict.examples)
        shutil.rmtree(work, ignore_errors=True)

    case()
