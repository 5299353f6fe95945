"""Resources: where inputs and outputs live, how the hub is reached, the byte-changing knobs.

Every setting is declared in gui_assets.pipeline.settings (variables and knobs) or on a source's spec
(its options); this module only reads them. Environment variables are read when a run starts,
never at import, so the code location loads with nothing set; a field set explicitly (tests,
run config) wins over the environment. The resources serve the registered sources: the demo
mirror holds each one's part, and `source_options` has a section per source with options.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
import pydantic

from gui_assets.checks.alerts import Alert, Delivery, deliver
from gui_assets.core.config import BuildConfig
from gui_assets.core.layout import WORK_DIR
from gui_assets.pipeline import settings
from gui_assets.pipeline.raw import RawSettings
from gui_assets.publish.hub import HfHubTarget, LocalHubTarget, Target
from gui_assets.sources.demo_mirror import ensure_demo_mirror
from gui_assets.sources.registry import SOURCES
from gui_assets.sources.spec import OptionError, SourceSpec

DEMO_MIRROR_DIR = "demo_mirror"


def _judged(variable: settings.Variable) -> str | None:
    """A variable's judged value; a bad one (set after the code location loaded) fails the run."""
    try:
        return variable.value()
    except settings.SettingError as e:
        raise dg.Failure(str(e)) from None


class GuiAssetsPaths(dg.ConfigurableResource):
    """GUI_ASSETS_OUT, GUI_ASSETS_MIRROR and GUI_ASSETS_SOURCE.

    With no mirror set, the bundled demo mirror is generated under <out>/_work/demo_mirror, each
    source's part when a build of that source first reads it.
    """

    out: str | None = None
    mirror: str | None = None
    source: str | None = None

    def out_dir(self) -> Path:
        return Path(self.out or settings.OUT.read() or "build").resolve()

    def source_mode(self) -> str:
        if self.source:  # set explicitly (tests, run config): wins over the environment
            mode = self.source.strip().lower()
            if mode not in settings.SOURCE.choices:
                allowed = ", ".join(settings.SOURCE.choices)
                raise dg.Failure(f"paths.source must be one of {allowed}, not {mode!r}")
            return mode
        return _judged(settings.SOURCE) or "mirror"

    def mirror_dir(self, spec: SourceSpec) -> Path:
        """The mirror `spec` reads: GUI_ASSETS_MIRROR, else the demo mirror with its part."""
        explicit = self.mirror or settings.MIRROR.read()
        if explicit:
            return Path(explicit).resolve()
        return ensure_demo_mirror(self.out_dir() / WORK_DIR / DEMO_MIRROR_DIR, [spec])


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
        return self.repo_id or settings.HUB_REPO.read()

    def target(self, out_dir: Path) -> Target:
        repo = self.upload_repo()
        if repo is None:
            return LocalHubTarget(out_dir / "hub", hash_cache=out_dir / WORK_DIR / "hub_hash_cache.json")
        return HfHubTarget(repo, settings.HF_TOKEN.read(), self.endpoint or settings.HF_ENDPOINT.read())

    def raw_settings(self, paths: GuiAssetsPaths, spec: SourceSpec) -> RawSettings:
        """How `spec`'s raw files are reached in this run."""
        mode = paths.source_mode()
        return RawSettings(
            mode=mode,
            mirror=paths.mirror_dir(spec) if mode == "mirror" else Path(),
            token=settings.HF_TOKEN.read(),
            endpoint=self.endpoint or settings.HF_ENDPOINT.read(),
            cache_dir=Path(self.cache_dir) if self.cache_dir else None,
            revision=self.revision,
        )


class BuildSettingsBase(dg.ConfigurableResource):
    """What `BuildSettings` does with its fields, which are made from the declarations below."""

    def config(self) -> BuildConfig:
        """The BuildConfig of these settings, every registered source's options checked and
        filled; a bad value fails the run with its name."""
        given = {k.field: k.to_config(getattr(self, k.name)) for k in settings.config_knobs()}
        options = getattr(self, "source_options", None)
        try:
            resolved = {
                spec.name: spec.resolve_options(dict(getattr(options, spec.name)))
                for spec in SOURCES
                if spec.options
            }
            return BuildConfig(**{k: v for k, v in given.items() if v is not None}, source_options=resolved)
        except (OptionError, ValueError) as e:
            raise dg.Failure(f"resources.build.config: {e}") from None

    def lerobot(self) -> bool:
        """Whether the LeRobot export is on: the `lerobot_export` knob, else GUI_ASSETS_LEROBOT."""
        explicit = getattr(self, "lerobot_export", None)
        if explicit is not None:
            return bool(explicit)
        return _judged(settings.LEROBOT) in ("1", "true", "yes")

    def threads(self) -> int | None:
        explicit = getattr(self, "write_threads", None)
        if explicit:
            return explicit
        value = _judged(settings.WRITE_THREADS)
        if value is None:
            return None
        return int(value) or None  # 0: the usable CPUs, as unset


def _options_model(spec: SourceSpec) -> type[dg.Config]:
    """One source's options as a run-config section (types, defaults and meanings shown by the UI)."""
    return pydantic.create_model(
        f"{spec.name.title().replace('_', '')}Options",
        __base__=dg.Config,
        __module__=__name__,
        __doc__=f"{spec.display_name}'s options, checked against its declaration when a run starts.",
        **{o.name: (o.type, pydantic.Field(default=o.default, description=o.meaning)) for o in spec.options},
    )


def _source_options_model(sources: tuple[SourceSpec, ...]) -> type[dg.Config]:
    sections = {s.name: _options_model(s) for s in sources if s.options}
    return pydantic.create_model(
        "SourceOptions",
        __base__=dg.Config,
        __module__=__name__,
        __doc__="Each registered source's options, by source name.",
        **{name: (model, pydantic.Field(default_factory=model)) for name, model in sections.items()},
    )


SourceOptions = _source_options_model(SOURCES)
# The knobs, from gui_assets.pipeline.settings (the byte-changing ones are BuildConfig's fields) and each
# registered source's options (`source_options.<source>.<option>`). Recorded in build.config.
BuildSettings = pydantic.create_model(
    "BuildSettings",
    __base__=BuildSettingsBase,
    __module__=__name__,
    __doc__="The knobs of a build: those that change output bytes are recorded in dataset_info.json "
    "build.config; `source_options` holds each source's own.",
    **{
        k.name: (k.type, pydantic.Field(default=k.default, description=k.meaning))
        for k in settings.build_knobs()
    },
    source_options=(
        SourceOptions,
        pydantic.Field(default_factory=SourceOptions, description="each source's options"),
    ),
)


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
            webhook=self.webhook or settings.ALERT_WEBHOOK.read(),
            out_dir=out_dir,
            log=log,
            retries=self.retries,
            timeout=self.timeout_s,
            backoff=self.backoff_s,
        )
