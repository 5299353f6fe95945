"""Upstream observation and the opt-in rebuild when it moves.

`S_upstream` (one per source, on the source's partitions) is an observable source asset upstream
of the raw asset `S`: observing it asks the hub API (or lists the mirror) what each partition's
files are now, and reports per partition the same version the raw asset records when it builds
them. When a partition's version changes, Dagster marks `S` of that partition, and only it,
stale ("S_upstream[P] has a new data version"); rebuilding it moves everything below it.

Switches, both off by default (Automation in the UI, or `dagster sensor start`):
    observe_upstream        observes every source's upstream, every partition, every 6 hours
                            (one run per source: `<S>_observe_upstream`, also runnable alone)
    upstream_auto_rebuild   rebuilds a partition's chain when its upstream observation moved
"""

from collections.abc import Sequence

import dagster as dg

from gui_assets.defs.metadata import fail
from gui_assets.defs.partitions import source_partitions
from gui_assets.defs.resources import GuiAssetsPaths, HubResource
from gui_assets.layout import OutLayout
from gui_assets.mirror import HashCache, RawInputError
from gui_assets.source_spec import SourceSpec
from gui_assets.upstream import observe

OBSERVE_EVERY_S = 6 * 3600


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
            seen = observe(spec, keys, hub.raw_settings(paths), cache)
        except RawInputError as e:
            raise fail(e) from None
        for key, o in seen.items():
            context.log.info(
                f"{spec.name}[{key}]: {o.files} files, {o.bytes} bytes at {o.revision}: {o.version}"
            )
        return dg.DataVersionsByPartition({key: o.version for key, o in seen.items()})

    return upstream


def rebuild_condition() -> dg.AutomationCondition:
    """Request the raw asset of a partition when its upstream observation has a new version
    (not on every observation), unless a run of it is in progress."""
    return (
        dg.AutomationCondition.any_deps_match(
            dg.AutomationCondition.data_version_changed()
        ).since_last_handled()
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
