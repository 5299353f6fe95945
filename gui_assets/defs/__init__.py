"""The Dagster shell: the only folder (with definitions.py) that imports dagster.

`factory` turns each registered SourceSpec into its chain of assets and checks
(`source_assets`, `shard_graph`, `upstream_assets`, `checks`), on one partitions definition per
source (`partitions`); `repo_assets` holds the repo-level assets (preview, card, cua-lite,
LeRobot, hub); `resources`, `executors`, `sensors`, `metadata` and `run_summary` are the rest of
the location's plumbing, assembled by `location`. Asset bodies are short: they call one function
of the pipeline, publish or checks layers and turn its result into metadata.

Modules here may import every layer below: core, sources, pipeline, publish, checks, validate,
viewer.
"""
