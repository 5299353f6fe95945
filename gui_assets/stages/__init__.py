"""The stages of one partition, one module each, as plain functions over paths (no Dagster).

    raw.fetch_raw            upstream files -> _work/<dir>/raw_manifest.json (sizes, sha256, revision)
    episodes.build_episodes  raw files -> GuiEpisode IR (_work/<dir>/episodes/, _work/images/)
    split.assign_splits      IR -> _work/<dir>/splits.parquet (main/val per episode, content hash)
    shards.write_shards      IR + splits -> <out>/<dir>/<dir>_NNNN.hdf5 (+ _work/<dir>/shards.json)
    info.write_info          everything above -> <out>/<dir>/dataset_info.json

Each stage reads only what the previous one persisted, so a Dagster asset runs exactly one
stage, and each module imports only what its stage runs: an asset's code_version is derived
from its stage module's imports (gui_assets.lineage). `gui_assets.pipeline.build_directory`
chains them in process for tests and debugging.
"""
