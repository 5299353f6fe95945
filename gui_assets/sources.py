"""The registry: one declaration per source, and everything else follows from it: the asset
chain and its checks, the demo mirror (each spec's `demo`), the run config (each spec's
`options`), the docs pages and the README's sources table (`python -m gui_assets.source_docs`).

Adding a source is its adapter module, its demo generator, its tests and one declaration here.
Imported by the code location (`definitions.py` and the resources), `backfill.py`, the demo
command, the docs command and tests; everything else is handed the specs it needs
(`gui_assets.source_spec`).
"""

from __future__ import annotations

from gui_assets.adapters import agentnet, cuagym, mind2web, pango, webarena, weblinx
from gui_assets.demo import (
    agentnet_mirror,
    cuagym_mirror,
    mind2web_mirror,
    pango_mirror,
    webarena_mirror,
    weblinx_mirror,
)
from gui_assets.source_spec import SourceOption, SourceSpec
from gui_assets.splits import hash_holdout, shipped_split, shipped_validation

MIND2WEB_OPTIONS = (
    SourceOption(
        "viewport_width",
        int,
        1280,
        "width of the capture viewport (CSS px): the frame is this window of the full page",
        "a positive number of pixels",
        lambda v, _: v > 0,
    ),
    SourceOption(
        "viewport_height",
        int,
        1080,
        "height of the capture viewport (CSS px); targets below it are reached by SCROLL steps",
        "a positive number of pixels",
        lambda v, _: v > 0,
    ),
    SourceOption(
        "scroll_step_fraction",
        float,
        0.75,
        "share of the viewport height one wheel step moves the view",
        "in (0, 1]",
        lambda v, _: 0 < v <= 1,
    ),
    SourceOption(
        "scroll_bottom_margin",
        float,
        0.10,
        "a target closer than this share of the viewport to its bottom edge is scrolled past it",
        "in [0, 1 - scroll_step_fraction), so a step never carries the target past the top",
        lambda v, o: 0 <= v < 1 - o["scroll_step_fraction"] + 1e-9,
    ),
)

MIND2WEB = SourceSpec(
    name="mind2web",
    title="Mind2Web",
    repo_id=mind2web.REPO_ID,
    partition_keys=mind2web.SPLITS,
    file_patterns=mind2web.file_patterns,
    adapter=mind2web.episodes,
    split_rule=shipped_split,
    description="Multimodal-Mind2Web: human web demonstrations, full-page screenshots sliced into "
    "1280x1080 viewports, with SCROLL steps to targets below the fold.",
    license="openrail",
    platform="browser",
    scrolls=True,
    # Full pages: 1280 px wide and more (up to about 11.8k in the viewer), up to about 85k tall.
    max_image=(12_000, 90_000),
    # The benchmark's test splits: never training data (cua-lite maps them to validation too).
    split_role={
        "train": "train",
        "test_task": "validation",
        "test_website": "validation",
        "test_domain": "validation",
    },
    demo=mind2web_mirror.write_mirror,
    options=MIND2WEB_OPTIONS,
)

AGENTNET = SourceSpec(
    name="agentnet",
    title="AgentNet",
    repo_id=agentnet.REPO_ID,
    partition_keys=agentnet.PARTITIONS,
    file_patterns=agentnet.file_patterns,
    adapter=agentnet.episodes,
    split_rule=hash_holdout(agentnet.HOLDOUT_SALT, "task_id", agentnet.HOLDOUT_FRACTION),
    description="AgentNet (OpenCUA): human desktop demonstrations on Windows, macOS and Ubuntu as "
    "PyAutoGUI code, parsed with ast; a 2% task_id hash holdout written as _val_ shards.",
    license="cc-by-4.0",
    platform="desktop",
    scrolls=True,
    notes="AgentNet ships no split: a deterministic 2% holdout by task_id hash is written as "
    "`<directory>_val_NNNN.hdf5` beside the main shards (the rule and its counts are "
    "`build.holdout_rule` in the directory's dataset_info.json); repeats of a task_id share a side.",
    demo=agentnet_mirror.write_mirror,
)

WEBLINX = SourceSpec(
    name="weblinx",
    title="WebLINX",
    repo_id=weblinx.REPO_ID,
    partition_keys=weblinx.PARTITIONS,
    file_patterns=weblinx.file_patterns,
    adapter=weblinx.episodes,
    split_rule=shipped_split,
    description="WebLINX: conversational web navigation demonstrations read from each demo's "
    "replay.json, splits taken from the dataset's own splits.json.",
    license="cc-by-nc-sa-4.0",
    platform="browser",
    scrolls=True,
    resolve_patterns=weblinx.resolve_patterns,
    split_role={"train": "train", "valid": "validation"},
    demo=weblinx_mirror.write_mirror,
)

WEBARENA = SourceSpec(
    name="webarena",
    title="WebArena",
    repo_id=webarena.REPO_ID,
    partition_keys=webarena.PARTITIONS,
    file_patterns=webarena.file_patterns,
    adapter=webarena.episodes,
    split_rule=shipped_split,
    description="WebArena human demonstrations of the WebArena EVAL tasks: Playwright traces joined "
    "to config_files/test.raw.json. Training on a task_id and scoring it is training on the test set.",
    license="apache-2.0",
    platform="browser",
    scrolls=False,
    notes="`webarena_human/` demonstrates the WebArena evaluation tasks. Training on a task_id and "
    "then scoring that same task_id is training on the test set. Each episode carries `task_id` and "
    "`intent_template_id`, and `webarena_human/dataset_info.json` lists them under `heldout_ids` so "
    "an evaluation can hold them out, or their whole templates.",
    not_on_hub="the human traces are published as <task_id>.zip files outside the hub (see the WebArena "
    "repository's resources/README.md); mirror them as <mirror>/webarena/human_trajectories/",
    heldout_attrs=("task_id", "intent_template_id"),
    split_role="evaluation",
    demo=webarena_mirror.write_mirror,
)

CUAGYM = SourceSpec(
    name="cuagym",
    title="Lite.CUAGym",
    repo_id=cuagym.REPO_ID,
    partition_keys=cuagym.PARTITIONS,
    file_patterns=cuagym.file_patterns,
    adapter=cuagym.episodes,
    split_rule=shipped_validation,
    description="Lite.CUAGym: agent rollouts on browser and desktop tasks as chat messages with batched "
    "computer tool calls; batched actions after the first are flagged obs_stale.",
    license="apache-2.0",
    platform={"browser_use": "browser", "desktop_use": "desktop"},
    scrolls=False,
    notes="Upstream `validation` rows and `eval` rows (a benchmark evaluation split some cua-lite "
    "datasets ship) are written as `<directory>_val_NNNN.hdf5` beside the main shards, never as "
    "training data; each episode's `upstream_split` attr says which. A row is never kept twice: a "
    "train or validation row identical to an eval row is dropped (`benchmark_overlap`), a validation "
    "row identical to a train row likewise (`duplicate_across_splits`).",
    demo=cuagym_mirror.write_mirror,
)

PANGO = SourceSpec(
    name="pango",
    title="Pango",
    repo_id=pango.REPO_ID,
    partition_keys=pango.PARTITIONS,
    file_patterns=pango.file_patterns,
    adapter=pango.episodes,
    split_rule=shipped_split,
    description="Pango sample: real work sessions in Sheets, Slides, Figma and Canva recorded as raw "
    "browser events, aggregated into steps.",
    license="other",
    platform="browser",
    scrolls=False,
    # The rows name their events documents (and those their screenshots) by URL on the
    # collector's storage bucket; in hub mode the raw stage fetches them. The bucket's host is
    # not known from any public source yet, so no host is allowed: hub mode stops in the raw
    # stage with the hosts the rows name, to be checked and written here.
    remote_files=pango.remote_files,
    remote_hosts=(),
    demo=pango_mirror.write_mirror,
    options=(
        SourceOption(
            "hover",
            bool,
            False,
            "keep mouseover_start/_end pairs as HOVER steps instead of dropping them as `mouseover`",
        ),
    ),
)

SOURCES: tuple[SourceSpec, ...] = (MIND2WEB, AGENTNET, WEBLINX, WEBARENA, PANGO, CUAGYM)
