"""A run's closing summary: what was built (directory, demos, steps), the checks passed and
failed, and what was written and published where, printed when the run's last step ends.

Dagster's own output ends with its events. Every asset of the location carries the hook below
(success and failure): after each step it reads the run's records from the instance, and the
step after which no step of the run's plan is left to run (ended, or never to run because an
upstream step failed) prints the summary to stderr, where the CLI prints the events, and keeps
it as `<out>/_work/run_summary.json` (`gui-assets demo` sums a whole demo build from it). It
reads the instance, never the command line, so it is the same for the CLI, the UI and workers.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import dagster as dg

from gui_assets.core.layout import WORK_DIR
from gui_assets.pipeline.run_summary import BuiltDirectory, Published, RunSummary, keep_summary
from gui_assets.publish.hub import LocalHubTarget

SUMMED = {
    dg.DagsterEventType.STEP_FAILURE,
    dg.DagsterEventType.ASSET_MATERIALIZATION,
    dg.DagsterEventType.ASSET_CHECK_EVALUATION,
}
ENDED = (dg.DagsterEventType.STEP_SUCCESS, dg.DagsterEventType.STEP_FAILURE, dg.DagsterEventType.STEP_SKIPPED)


def _value(entry: dg.MetadataValue | Any) -> Any:
    return getattr(entry, "value", entry)


def summarize(run_id: str, records: Iterable[dg.EventLogEntry], out: Path) -> RunSummary:
    """The summary of a run from its event log entries; `out` is the output folder it wrote to."""
    summary = RunSummary(run_id, succeeded=False)
    for record in records:
        event = record.dagster_event
        if event is None:
            continue
        if event.event_type == dg.DagsterEventType.STEP_FAILURE and event.step_key:
            summary.failed_steps.append(event.step_key)
        elif event.event_type == dg.DagsterEventType.ASSET_MATERIALIZATION:
            m = event.event_specific_data.materialization  # type: ignore[union-attr]
            summary.partition = m.partition or summary.partition
            meta = {k: _value(v) for k, v in m.metadata.items()}
            _add_materialization(summary, m.asset_key.to_user_string(), meta, out)
        elif event.event_type == dg.DagsterEventType.ASSET_CHECK_EVALUATION:
            e = event.event_specific_data
            if e.passed:  # type: ignore[union-attr]
                summary.checks_passed += 1
            else:
                summary.checks_failed.append(f"{e.asset_key.to_user_string()}:{e.check_name}")  # type: ignore[union-attr]
    summary.succeeded = not summary.failed_steps
    return summary


def _add_materialization(summary: RunSummary, asset: str, meta: dict[str, Any], out: Path) -> None:
    if asset.endswith("_dataset_info") and "path" in meta:
        info = Path(str(meta["path"]))
        built = BuiltDirectory(
            info.parent.name, str(info.parent), int(meta.get("episodes_out", 0)), int(meta.get("steps", 0))
        )
        summary.built.append(built)
    elif "target" in meta:
        # A local target is `<out>/hub/`, laid out as the dataset repo (HubResource.target).
        target = str(out / "hub") if meta["target"] == LocalHubTarget.name else str(meta["target"])
        summary.published.append(
            Published(asset, target, int(meta.get("uploaded", 0)), int(meta.get("skipped", 0)))
        )
    elif "path" in meta and _output(asset, Path(str(meta["path"])), out):
        summary.wrote[asset] = str(meta["path"])


def _output(asset: str, path: Path, out: Path) -> bool:
    """A written path worth a line: not pipeline state under `_work`, nor the shards' folder
    (the built line names it)."""
    return not asset.endswith("_shards") and not path.is_relative_to(out / WORK_DIR)


def steps_left(
    plan: Any, wanted: Iterable[str] | None, events: list[dg.EventLogEntry], now_ended: str, now_failed: bool
) -> set[str]:
    """Steps of the run's plan that may still run: neither ended nor downstream of a failure.
    Mapped steps (`unit[?]` in the plan) count by the concrete steps that started."""
    upstream = {s.key: {h.step_key for i in s.inputs for h in i.upstream_output_handles} for s in plan.steps}
    planned = {k for k in upstream if "[?]" not in k and (wanted is None or k in wanted)}
    started, ended, failed = set(), {now_ended}, {now_ended} if now_failed else set()
    for record in events:
        event = record.dagster_event
        if event is None or not event.step_key:
            continue
        if event.event_type == dg.DagsterEventType.STEP_START:
            started.add(event.step_key)
        elif event.event_type in ENDED:
            ended.add(event.step_key)
            if event.event_type == dg.DagsterEventType.STEP_FAILURE:
                failed.add(event.step_key)
    # A failed unit (`write[u0]`) fails what waits on its mapped step (`write[?]`), so by base key.
    failed_bases = {k.split("[", 1)[0] for k in failed}
    doomed: set[str] = set()
    while grown := {
        k
        for k, ups in upstream.items()
        if k not in doomed and any(u in doomed or u.split("[", 1)[0] in failed_bases for u in ups)
    }:
        doomed |= grown
    return {k for k in planned | started if k not in ended | doomed}


@functools.lru_cache(maxsize=8)
def _run_plan(instance: dg.DagsterInstance, run_id: str) -> tuple[Any, list[str] | None, str | None] | None:
    """A run's plan, the steps it was asked to run and its partition, read once per process: they
    never change during the run, and the hook asks after every step."""
    run = instance.get_run_by_id(run_id)
    if run is None or run.execution_plan_snapshot_id is None:
        return None
    plan = instance.get_execution_plan_snapshot(run.execution_plan_snapshot_id)
    return plan, run.step_keys_to_execute, run.tags.get("dagster/partition")


def report(context: dg.HookContext, now_failed: bool) -> RunSummary | None:
    """The summary, printed and kept, when this step was the run's last; else None."""
    instance = context.instance
    known = _run_plan(instance, context.run_id)
    if known is None:
        return None
    plan, wanted, partition = known
    # After every step: only the step events, so a run of many unit steps stays cheap to check.
    steps = list(instance.all_logs(context.run_id, of_type={dg.DagsterEventType.STEP_START, *ENDED}))
    if steps_left(plan, wanted, steps, context.step_key, now_failed):
        return None
    out = Path(context.resources.paths.out_dir()).resolve()
    summary = summarize(context.run_id, instance.all_logs(context.run_id, of_type=SUMMED), out)
    summary.partition = summary.partition or partition  # a run that built nothing
    if now_failed and context.step_key not in summary.failed_steps:  # its event may not be logged yet
        summary.failed_steps.append(context.step_key)
        summary.succeeded = False
    print("\n".join(summary.lines()), file=sys.stderr, flush=True)
    try:
        keep_summary(out, summary)
    except OSError as e:  # the summary was printed; a read-only output folder fails nothing
        context.log.warning(f"run summary not kept: {e}")
    return summary


@dg.success_hook(name="gui_assets_run_summary_ok", required_resource_keys={"paths"})
def summary_on_success(context: dg.HookContext) -> None:
    report(context, now_failed=False)


@dg.failure_hook(name="gui_assets_run_summary_failed", required_resource_keys={"paths"})
def summary_on_failure(context: dg.HookContext) -> None:
    report(context, now_failed=True)


RUN_SUMMARY_HOOKS = {summary_on_success, summary_on_failure}
