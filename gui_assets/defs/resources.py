"""Resources: where inputs and outputs live, how the hub is reached, the byte-changing knobs.

Environment variables are read when a run starts, never at import, so the code location
loads with nothing set; a field set explicitly (tests, run config) wins over the environment.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dagster as dg

from gui_assets.alerts import Alert, Delivery, deliver
from gui_assets.config import DEFAULT_SHARD_CAP_BYTES, BuildConfig, default_frame_codec
from gui_assets.demo import ensure_demo_mirror
from gui_assets.layout import WORK_DIR
from gui_assets.stages.raw import RawSettings
from gui_assets.writers.hub import HfHubTarget, LocalHubTarget, Target

DEMO_MIRROR_DIR = "demo_mirror"


class GuiAssetsPaths(dg.ConfigurableResource):
    """GUI_ASSETS_OUT, GUI_ASSETS_MIRROR and GUI_ASSETS_SOURCE.

    With no mirror set, the bundled demo mirror is generated under <out>/_work/demo_mirror.
    """

    out: str | None = None
    mirror: str | None = None
    source: str | None = None

    def out_dir(self) -> Path:
        return Path(self.out or os.environ.get("GUI_ASSETS_OUT") or "build").resolve()

    def source_mode(self) -> str:
        mode = (self.source or os.environ.get("GUI_ASSETS_SOURCE") or "mirror").strip().lower()
        if mode not in ("mirror", "hub"):
            raise dg.Failure(f"GUI_ASSETS_SOURCE must be 'mirror' or 'hub', not {mode!r}")
        return mode

    def mirror_dir(self) -> Path:
        explicit = self.mirror or os.environ.get("GUI_ASSETS_MIRROR")
        if explicit:
            return Path(explicit).resolve()
        return ensure_demo_mirror(self.out_dir() / WORK_DIR / DEMO_MIRROR_DIR)

    def uses_demo_mirror(self) -> bool:
        return not (self.mirror or os.environ.get("GUI_ASSETS_MIRROR"))


class HubResource(dg.ConfigurableResource):
    """Hugging Face hub access. The token comes from HF_TOKEN at run time and is never logged.

    `endpoint` (or HF_ENDPOINT) points at a hub mirror; `revision` pins the upstream commit;
    `repo_id` (or GUI_ASSETS_HUB_REPO) is where uploads go, else `<out>/hub/`.
    """

    endpoint: str | None = None
    revision: str | None = None
    cache_dir: str | None = None
    repo_id: str | None = None

    def upload_repo(self) -> str | None:
        return self.repo_id or os.environ.get("GUI_ASSETS_HUB_REPO") or None

    def target(self, out_dir: Path) -> Target:
        repo = self.upload_repo()
        if repo is None:
            return LocalHubTarget(out_dir / "hub", hash_cache=out_dir / WORK_DIR / "hub_hash_cache.json")
        return HfHubTarget(
            repo, os.environ.get("HF_TOKEN") or None, self.endpoint or os.environ.get("HF_ENDPOINT")
        )

    def raw_settings(self, paths: GuiAssetsPaths) -> RawSettings:
        mode = paths.source_mode()
        return RawSettings(
            mode=mode,
            mirror=paths.mirror_dir() if mode == "mirror" else Path(),
            token=os.environ.get("HF_TOKEN") or None,
            endpoint=self.endpoint or os.environ.get("HF_ENDPOINT") or None,
            cache_dir=Path(self.cache_dir) if self.cache_dir else None,
            revision=self.revision,
        )


class BuildSettings(dg.ConfigurableResource):
    """The knobs that change output bytes (recorded in dataset_info.json build.config)."""

    shard_cap_mb: float = DEFAULT_SHARD_CAP_BYTES / 1e6
    # "isal" (ISA-L deflate + direct chunk writes; the default when isal is installed) or
    # "gzip" (h5py's filter). Both are plain gzip datasets to a reader.
    frame_codec: str | None = None
    isal_level: int = 2
    gzip_level: int = 4
    pango_hover: bool = False
    # Everything the shard writer holds decoded at once; a page needing more is left out by name.
    decode_budget_mb: int = 512
    # [H, W] every agentview frame is resized to (whole directories then batch together); None
    # keeps each demo's native size.
    agentview_hw: list[int] | None = None
    # The cua-lite export leaves a benchmark's evaluation tasks (WebArena's) out; true exports
    # them as validation (never as train).
    cua_lite_evaluation_as_validation: bool = False
    preview_count: int = 665
    preview_seed: int = 0
    # Threads that decode and deflate frames in a shard-writing step (not an output knob);
    # GUI_ASSETS_WRITE_THREADS, else the CPUs this process may use.
    write_threads: int | None = None

    def config(self) -> BuildConfig:
        return BuildConfig(
            shard_cap_bytes=int(self.shard_cap_mb * 1e6),
            frame_codec=self.frame_codec or default_frame_codec(),
            isal_level=self.isal_level,
            gzip_level=self.gzip_level,
            pango_hover=self.pango_hover,
            decode_budget_mb=self.decode_budget_mb,
            agentview_hw=tuple(self.agentview_hw) if self.agentview_hw else None,  # type: ignore[arg-type]
        )

    def threads(self) -> int | None:
        return self.write_threads or int(os.environ.get("GUI_ASSETS_WRITE_THREADS") or 0) or None


class AlertsResource(dg.ConfigurableResource):
    """Where failed checks and runs are reported: GUI_ASSETS_ALERT_WEBHOOK (read at run time)
    gets a Slack-compatible JSON POST; without it, `<out>/alerts.jsonl` and the run log."""

    webhook: str | None = None
    retries: int = 3
    timeout_s: float = 5.0
    backoff_s: float = 0.5

    def send(self, alert: Alert, out_dir: Path, log: Any) -> Delivery:
        return deliver(
            alert,
            webhook=self.webhook or os.environ.get("GUI_ASSETS_ALERT_WEBHOOK") or None,
            out_dir=out_dir,
            log=log,
            retries=self.retries,
            timeout=self.timeout_s,
            backoff=self.backoff_s,
        )
