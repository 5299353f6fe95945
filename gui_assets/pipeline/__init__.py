"""The pipeline of one partition: the stages, as plain functions over paths (no Dagster).

    raw.fetch_raw            upstream files -> _work/<dir>/raw_manifest.json (sizes, sha256, revision)
    episodes.build_episodes  raw files -> GuiEpisode IR (_work/<dir>/episodes/, _work/images/)
    split.assign_splits      IR -> _work/<dir>/splits.parquet (main/val per episode, content hash)
    shards.write_shards      IR + splits -> <out>/<dir>/<dir>_NNNN.hdf5 (+ _work/<dir>/shards.json)
    info.write_info          everything above -> <out>/<dir>/dataset_info.json

Each stage reads only what the previous one persisted, so a Dagster asset runs exactly one
stage, and each module imports only what its stage runs: an asset's code_version is derived
from its stage module's imports (`lineage`). Beside the stages: the shard plan and its units
(`sharding`, `shard_records`, `unit_reuse`), the LIBERO writer (`libero_hdf5`, `frames`,
`preview_frames`), what changed upstream (`upstream`, `changes`), the run lease, the settings
and the run summary. `chain.build_directory` chains the stages in process for tests and
debugging.

Modules here import the core and `gui_assets.sources` (the contract and the shared helpers,
never a source's folder or the registry: a stage is handed the SourceSpec it runs).
"""
