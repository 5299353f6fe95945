"""Small helpers every asset body shares: failures, digests, markdown tables, image metadata."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import dagster as dg

from gui_assets.core.layout import OutLayout
from gui_assets.pipeline.lease import PartitionBusy, claim

OWNERS = ["team:gui_assets"]


def fail(e: Exception) -> dg.Failure:
    """A whole input or partition that cannot be built: fail it with a message that names it."""
    return dg.Failure(description=str(e), allow_retries=False)


def digest(obj: Any) -> str:
    """A short content hash of a JSON-able value: a data_version."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def md_table(rows: dict[str, Any], head: tuple[str, str] = ("reason", "count")) -> str:
    if not rows:
        return "_none_"
    lines = [f"| {head[0]} | {head[1]} |", "|---|---|"] + [f"| {k} | {v} |" for k, v in sorted(rows.items())]
    return "\n".join(lines)


def inline_image(data: bytes, mime: str, alt: str, caption: str = "") -> dg.MetadataValue:
    """An image the UI shows inside a metadata entry (markdown with a data URL)."""
    text = f"{caption}\n\n" if caption else ""
    return dg.MetadataValue.md(f"{text}![{alt}](data:{mime};base64,{base64.b64encode(data).decode()})")


def change_metadata(change: dict[str, Any]) -> dict[str, Any]:
    """What changed since the previous build of the partition, as the UI shows it."""
    if change.get("first_build"):
        return {
            "changes": dg.MetadataValue.md(
                f"First build: {change['episodes']} episodes, {change['steps']} steps."
            )
        }
    lines = [
        f"- episodes added: **{len(change['episodes_added'])}**, "
        f"removed: **{len(change['episodes_removed'])}**, "
        f"changed (content hash): **{len(change['episodes_changed'])}**",
        f"- steps: {change['steps_before']} -> {change['steps']} ({change['steps_change']:+d})",
        f"- drops: {', '.join(f'{k} {v:+d}' for k, v in change['drops_change'].items()) or 'unchanged'}",
        f"- upstream revision: {change['revision_before']} -> {change['revision']}",
    ]
    examples = (change["episodes_added"] + change["episodes_removed"] + change["episodes_changed"])[:10]
    if examples:
        lines.append("- e.g. " + ", ".join(f"`{e}`" for e in examples))
    return {
        "episodes_added": len(change["episodes_added"]),
        "episodes_removed": len(change["episodes_removed"]),
        "episodes_changed": len(change["episodes_changed"]),
        "steps_change": change["steps_change"],
        "drops_change": dg.MetadataValue.json(change["drops_change"]),
        "revision_before": str(change["revision_before"]),
        "changes": dg.MetadataValue.md("\n".join(lines)),
    }


_FINISHED = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}


def claim_partition(
    context: dg.OpExecutionContext | dg.AssetExecutionContext, out_root: Path, directory: str
) -> OutLayout:
    """Claim the partition for this run before a stage writes (gui_assets.pipeline.lease) and return the
    output layout to write in; a partition another run is building fails this step at once,
    naming that run."""
    executor = context.job_def.executor_def.name
    # The process that lives as long as the run: this one in-process, the parent of a step
    # process under the multiprocess executor; none on an executor that spreads over machines.
    run_pid = {dg.in_process_executor.name: os.getpid(), dg.multiprocess_executor.name: os.getppid()}.get(
        executor
    )

    def finished(run_id: str) -> bool | None:
        run = context.instance.get_run_by_id(run_id)
        return None if run is None else run.status in _FINISHED

    out = OutLayout(out_root)
    try:
        claim(out.work(directory), directory, context.run_id, run_pid, finished)
    except PartitionBusy as e:
        raise fail(e) from None
    return out
