"""Upstream observation and the opt-in rebuild when it moves.

`S_upstream` (one per source, on the source's partitions) is an observable source asset upstream
of the raw asset `S`: observing it asks the hub API (or lists the mirror) what each partition's
files are now, and reports per partition the same version the raw asset records when it builds
them. When a partition's version changes, Dagster marks `S` of that partition, and only it,
stale ("S_upstream[P] has a new data version"); rebuilding it moves what reads it, one hop at a
time.

Dagster judges a dependency by the observation a materialization recorded as its input. A build
of `S[P]` made before `S_upstream[P]` was ever observed (or after the files moved past the last
observation) would record none that matches what it read, so the raw asset first records, as an
observation of `S_upstream[P]`, the version of the files it is about to build from
(`record_built_from`). Observation then works in any order: build, switch observation on, and the
first change after that marks the partition stale.

Switches, both off by default (Automation in the UI, or `dagster sensor start`):
    observe_upstream        observes every source's upstream, every partition, every 6 hours
                            (one run per source: `<S>_observe_upstream`, also runnable alone)
    upstream_auto_rebuild   rebuilds what a moved upstream made stale, in partitions that were
                            built before: it never starts a partition's first build
"""

from collections.abc import Sequence

import dagster as dg

from gui_assets.core.layout import OutLayout
from gui_assets.defs.metadata import fail
from gui_assets.defs.partitions import source_partitions
from gui_assets.defs.resources import GuiAssetsPaths, HubResource
from gui_assets.pipeline.upstream import observe
from gui_assets.sources.mirror import HashCache, RawInputError
from gui_assets.sources.spec import SourceSpec

OBSERVE_EVERY_S = 6 * 3600
DATA_VERSION_TAG = "dagster/data_version"  # where an observation carries its data version


def upstream_key(spec: SourceSpec) -> dg.AssetKey:
    return dg.AssetKey(f"{spec.name}_upstream")


def upstream_kinds(spec: SourceSpec) -> set[str]:
    """Where the observed files live: a hub repo, or (not_on_hub sources) files mirrored by hand."""
    return {"filesystem" if spec.not_on_hub else "huggingface", "python"}


def upstream_asset(spec: SourceSpec) -> dg.SourceAsset:
    partitions = source_partitions(spec)

    @dg.observable_source_asset(
        key=upstream_key(spec),
        group_name=spec.name,
        partitions_def=partitions,
        required_resource_keys={"paths", "hub"},
        # an observable source asset takes its kinds as tags
        tags={f"dagster/kind/{kind}": "" for kind in upstream_kinds(spec)},
        description=f"What {spec.repo_id} holds now for each partition, observed without downloading "
        "its data (the hub's file tree, or the mirror's files): its version is what the raw asset "
        f"`{spec.name}` records when it builds the same files, so a change marks that partition stale.",
    )
    def upstream(context: dg.OpExecutionContext) -> dg.DataVersionsByPartition:
        # A partitioned run observes its partition; a job or schedule run observes all of them.
        keys = [context.partition_key] if context.has_partition_key else partitions.get_partition_keys()
        paths: GuiAssetsPaths = context.resources.paths
        hub: HubResource = context.resources.hub
        cache = HashCache(OutLayout(paths.out_dir()).hash_cache)
        try:
            seen = observe(spec, keys, hub.raw_settings(paths, spec), cache)
        except RawInputError as e:
            raise fail(e) from None
        for key, o in seen.items():
            context.log.info(
                f"{spec.name}[{key}]: {o.files} files, {o.bytes} bytes at {o.revision}: {o.version}"
            )
        return dg.DataVersionsByPartition({key: o.version for key, o in seen.items()})

    return upstream


def record_built_from(
    context: dg.AssetExecutionContext, spec: SourceSpec, key: str, version: str, revision: str
) -> bool:
    """Make the raw materialization's recorded input the files it is built from: unless the
    latest observation of `S_upstream[key]` already has `version`, log one that has (the build
    did look at upstream), and drop the step's cached input record so Dagster reads it again
    when it records the materialization's provenance. Returns whether an observation of that
    version was already there."""
    up = upstream_key(spec)
    latest = context.instance.fetch_observations(
        dg.AssetRecordsFilter(asset_key=up, asset_partitions=[key]), limit=1
    ).records
    observation = latest[0].event_log_entry.asset_observation if latest else None
    if observation is not None and observation.tags.get(DATA_VERSION_TAG) == version:
        return True
    context.log_event(
        dg.AssetObservation(
            asset_key=up,
            partition=key,
            tags={DATA_VERSION_TAG: version},
            metadata={"observed_by": f"the build of {spec.name}[{key}]", "revision": revision},
        )
    )
    # Dagster fetched the input records before the step ran. Its step context (which it reserves
    # for framework authors) can drop that cached record; test_staleness_walk fails if it stops.
    context.get_step_execution_context().wipe_input_asset_version_info(up)
    return False


def maintain_condition() -> dg.AutomationCondition:
    """Rebuild a partition when something it reads was updated, never to build it a first time:
    a partition that was never materialized, or one whose parents are missing, is left alone."""
    return (
        dg.AutomationCondition.any_deps_updated().since_last_handled()
        & ~dg.AutomationCondition.missing()
        & ~dg.AutomationCondition.any_deps_missing()
        & ~dg.AutomationCondition.any_deps_in_progress()
        & ~dg.AutomationCondition.in_progress()
    ).with_label("maintain")


def rebuild_condition() -> dg.AutomationCondition:
    """Request the raw asset of a partition when its upstream observation has a new version
    (not on every observation), unless a run of it is in progress or the partition was never
    built (switching the automation on starts no first builds)."""
    return (
        dg.AutomationCondition.any_deps_match(
            dg.AutomationCondition.data_version_changed()
        ).since_last_handled()
        & ~dg.AutomationCondition.missing()
        & ~dg.AutomationCondition.in_progress()
    ).with_label("upstream_moved")


def observe_job_name(spec: SourceSpec) -> str:
    return f"{spec.name}_observe_upstream"


def observation_defs(sources: Sequence[SourceSpec]) -> dg.Definitions:
    """One observation job per source (a job spans one partitions definition), one sensor that
    runs them all, and the auto-rebuild sensor: the two switches, off by default."""
    jobs = [
        dg.define_asset_job(observe_job_name(s), selection=dg.AssetSelection.assets(upstream_key(s)))
        for s in sources
    ]

    @dg.sensor(
        name="observe_upstream",
        jobs=jobs,
        minimum_interval_seconds=OBSERVE_EVERY_S,
        default_status=dg.DefaultSensorStatus.STOPPED,
        description="Observes every source's upstream (every partition) without downloading data.",
    )
    def observe_upstream(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        return dg.SensorResult(run_requests=[dg.RunRequest(job_name=job.name) for job in jobs])

    chains = dg.AssetSelection.groups(*(s.name for s in sources)) - dg.AssetSelection.assets(
        *(upstream_key(s) for s in sources)
    )
    auto_rebuild = dg.AutomationConditionSensorDefinition(
        "upstream_auto_rebuild",
        target=chains,
        default_status=dg.DefaultSensorStatus.STOPPED,
        minimum_interval_seconds=60,
        description="Rebuilds a partition's chain when its upstream observation moved (opt-in).",
    )
    return dg.Definitions(jobs=jobs, sensors=[observe_upstream, auto_rebuild])
