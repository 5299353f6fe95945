"""The `preview` config: a few hundred steps sampled across every built directory, as Parquet the
Hugging Face viewer and `datasets` decode (`<out>/preview/sample-00000-of-00001.parquet`).

One row per step: the pre-action frame as JPEG 640 px wide, the eye-in-hand crop as JPEG, the
action (type name, params, mask, text, desc), the instruction, directory, episode and step
index. Image columns use the HF Image storage (a struct of `bytes` and `path`) and the file
carries the `huggingface` features metadata, so `load_dataset("parquet", ...)` returns images.
Sampling is seeded and proportional to each directory's steps, at least one step each; it
reads only the sampled frames. Directories never built are simply absent.
"""

from __future__ import annotations

import io
import itertools
import json
import random
from pathlib import Path
from typing import Any

import h5py
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

from gui_assets.atomic import atomic_path
from gui_assets.ir import ACTION_TYPE_NAMES
from gui_assets.layout import PREVIEW_DIR, built_directories

PREVIEW_FILE = "sample-00000-of-00001.parquet"
DEFAULT_COUNT = 665
DEFAULT_SEED = 0
FRAME_WIDTH = 640

_IMAGE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
SCHEMA = pa.schema(
    [
        ("frame", _IMAGE),
        ("eye_in_hand", _IMAGE),
        ("directory", pa.string()),
        ("episode_id", pa.string()),
        ("step", pa.int32()),
        ("num_steps", pa.int32()),
        ("instruction", pa.string()),
        ("action_type", pa.string()),
        ("action_params", pa.list_(pa.float32())),
        ("action_mask", pa.list_(pa.float32())),
        ("action_text", pa.string()),
        ("action_desc", pa.string()),
    ]
)
_VALUE = {pa.string(): "string", pa.int32(): "int32"}
FEATURES = {
    f.name: {"_type": "Image"}
    if f.type == _IMAGE
    else {"feature": {"dtype": "float32", "_type": "Value"}, "_type": "List"}
    if pa.types.is_list(f.type)
    else {"dtype": _VALUE[f.type], "_type": "Value"}
    for f in SCHEMA
}


def _jpeg(arr: Any, width: int | None = None) -> bytes:
    im = Image.fromarray(arr)
    if width and im.width != width:
        im = im.resize((width, round(im.height * width / im.width)), Image.Resampling.BICUBIC)
    buf = io.BytesIO()
    im.save(buf, format="JPEG", quality=85, optimize=True)
    return buf.getvalue()


def _text(x: Any) -> str:
    return x.decode("utf-8") if isinstance(x, bytes) else str(x)


def write_preview(out: Path, count: int = DEFAULT_COUNT, seed: int = DEFAULT_SEED) -> dict[str, Any]:
    infos = built_directories(out)
    rng = random.Random(seed)
    total = sum(i.stats.get("steps", 0) for i in infos)
    rows: list[dict[str, Any]] = []
    per_directory: dict[str, int] = {}
    for info in infos:
        steps = info.stats.get("steps", 0)
        if not steps:
            continue
        quota = min(steps, max(1, round(count * steps / total)))
        # (shard, demo, step) of every step, from the small arrays only
        index: list[tuple[str, str, int]] = []
        for shard in info.shards + info.val_shards:
            with h5py.File(out / info.directory / shard.file, "r") as f:
                for name in sorted(f["data"], key=lambda k: int(k[5:])):
                    index += [(shard.file, name, t) for t in range(int(f["data"][name].attrs["num_samples"]))]
        picked = sorted(rng.sample(index, quota))
        per_directory[info.directory] = quota
        for shard_file, group in itertools.groupby(picked, key=lambda pick: pick[0]):  # one open per shard
            with h5py.File(out / info.directory / shard_file, "r") as f:
                for _, name, t in group:
                    d = f["data"][name]
                    rows.append(
                        {
                            "frame": {"bytes": _jpeg(d["obs/agentview_rgb"][t], FRAME_WIDTH), "path": None},
                            "eye_in_hand": {"bytes": _jpeg(d["obs/eye_in_hand_rgb"][t]), "path": None},
                            "directory": info.directory,
                            "episode_id": _text(d.attrs["episode_id"]),
                            "step": t,
                            "num_steps": int(d.attrs["num_samples"]),
                            "instruction": _text(d.attrs["language_instruction"]),
                            "action_type": ACTION_TYPE_NAMES[int(d["action_type"][t])],
                            "action_params": [float(v) for v in d["action_params"][t]],
                            "action_mask": [float(v) for v in d["action_mask"][t]],
                            "action_text": _text(d["action_text"][t]),
                            "action_desc": _text(d["action_desc"][t]),
                        }
                    )
    table = pa.Table.from_pylist(rows, schema=SCHEMA).replace_schema_metadata(
        {"huggingface": json.dumps({"info": {"features": FEATURES}})}
    )
    path = out / PREVIEW_DIR / PREVIEW_FILE
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, row_group_size=100)
    return {
        "path": str(path),
        "rows": len(rows),
        "per_directory": per_directory,
        "seed": seed,
        "count": count,
    }
