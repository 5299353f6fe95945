"""Run-failure alerts. They need the daemon (`dagster dev` starts one); failed checks alert from
inside their own evaluation and need nothing running."""

import dagster as dg

from gui_assets.checks.alerts import Alert
from gui_assets.defs.resources import AlertsResource, GuiAssetsPaths


@dg.run_failure_sensor(
    name="run_failure_alerts",
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Sends an alert for every failed run of this code location: a partition whose raw input "
    "could not be read, or whose blocking alignment_leakage check stopped it before upload.",
)
def run_failure_alerts(
    context: dg.RunFailureSensorContext, paths: GuiAssetsPaths, alerts: AlertsResource
) -> None:
    run = context.dagster_run
    selection = sorted(k.to_user_string() for k in (run.asset_selection or []))
    alert = Alert(
        kind="run_failure",
        asset=", ".join(selection) or run.job_name,
        partition=run.tags.get("dagster/partition"),
        check="",
        severity="ERROR",
        summary=context.failure_event.message or "run failed",
        run_id=run.run_id,
    )
    alerts.send(alert, paths.out_dir(), context.log)
