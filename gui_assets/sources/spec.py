"""SourceSpec: everything the pipeline, the writers, the Dagster factory, the demo mirror, the
run config and the docs need to know about a source, declared once (the declarations themselves
are in `gui_assets.sources.registry`).

What a spec says about its source that readers of the output need (repo, licence, platform,
notes for the dataset card) is recorded in each directory's dataset_info.json by `record()`,
so the card, the preview and the cua-lite export read built files, never this module.

A source's options (`SourceOption`: what its adapter lets a build choose, such as Pango's
`hover`) are declared on its spec only: run config sets them as
`resources.build.config.source_options.<source>.<option>`, `SourceSpec.resolve_config` checks them
and fills the defaults, the adapter reads `run.config.options[<option>]`, and dataset_info.json
records them in `build.config.source_options`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # types only: a stage imports just what it runs (its code_version follows imports)
    from gui_assets.core.config import BuildConfig
    from gui_assets.core.ir import GuiEpisode
    from gui_assets.core.splits import SplitRule
    from gui_assets.sources.assembly import AdapterRun
    from gui_assets.sources.mirror import RawPartition

Adapter = Callable[["AdapterRun"], Iterator["GuiEpisode"]]
# Writes the source's part of the demo mirror under the mirror root given (`<root>/<repo_id>/...`).
DemoGenerator = Callable[[Path], object]
OPTION_TYPES = (bool, int, float, str)  # what run config can carry and a README can show
PLATFORMS = ("browser", "desktop", "mobile")  # cua-lite's platform vocabulary
# What a partition's main shards are for: training data, a benchmark's validation or test split
# (kept apart from training by every export), or a benchmark's evaluation tasks themselves.
SPLIT_ROLES = ("train", "validation", "evaluation")


class OptionError(ValueError):
    """A source option that is unknown, of the wrong type or outside its rule."""


@dataclass(frozen=True, slots=True)
class SourceOption:
    """One choice a source's adapter offers a build. Every option changes bytes, so each is
    recorded in the directory's dataset_info.json (`build.config.source_options`)."""

    name: str  # run config: resources.build.config.source_options.<source>.<name>
    type: type  # one of OPTION_TYPES
    default: Any
    meaning: str  # one line, for the README and the source's page
    rule: str = ""  # what a valid value is, in words: said when one is refused
    # (value, every option's value) -> valid; the mapping lets a rule depend on another option.
    check: Callable[[Any, Mapping[str, Any]], bool] | None = None

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"option name {self.name!r} is not an identifier")
        if self.type not in OPTION_TYPES:
            raise ValueError(f"option {self.name}: type must be one of {OPTION_TYPES}, not {self.type!r}")
        if self.check is not None and not self.rule:
            raise ValueError(f"option {self.name}: a check needs its rule in words")


def _typed(option: SourceOption, value: Any) -> Any:
    """`value` as the option's type, or None when it is not of it (a bool is no number)."""
    if option.type is bool:
        return value if isinstance(value, bool) else None
    if isinstance(value, bool):
        return None
    if option.type is float and isinstance(value, int | float):
        return float(value)
    return value if isinstance(value, option.type) else None


def resolve_options(
    source: str, declared: Sequence[SourceOption], given: Mapping[str, Any]
) -> dict[str, Any]:
    """Every declared option of `source`: its given value, else its default, each checked.
    OptionError names the source and the option for an unknown name, a wrong type or a value
    outside its rule."""
    known = [o.name for o in declared]
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise OptionError(
            f"{source} has no option {', '.join(unknown)} (its options: {', '.join(known) or 'none'})"
        )
    values: dict[str, Any] = {}
    for option in declared:
        raw = given.get(option.name, option.default)
        value = _typed(option, raw)
        if value is None:
            raise OptionError(f"{source} option {option.name} must be a {option.type.__name__}, not {raw!r}")
        values[option.name] = value
    for option in declared:
        if option.check is not None and not option.check(values[option.name], values):
            raise OptionError(
                f"{source} option {option.name} must be {option.rule}, not {values[option.name]!r}"
            )
    return values


@dataclass(frozen=True, slots=True)
class HubMode:
    """Whether GUI_ASSETS_SOURCE=hub can build a source: `summary` for a table cell, `detail`
    saying why not (empty when it can)."""

    works: bool
    summary: str
    detail: str = ""


@dataclass(frozen=True, slots=True, eq=False)
class SourceSpec:
    name: str  # the root asset key, the asset group, the episodes' source and id prefix
    repo_id: str  # upstream repo, also the mirror path <mirror>/<owner>/<repo>
    partition_keys: tuple[str, ...]  # output directories are f"{name}_{key}"
    file_patterns: Callable[[str], list[str]]  # partition key -> globs of repo paths
    # Called with the run's config resolved for this source (`resolve_config`), whoever
    # built the config: `run.config.options` holds every option of `options`, checked.
    adapter: Adapter
    split_rule: SplitRule
    description: str
    license: str
    # The platform the demonstrations run on, one of PLATFORMS: one for the whole source or
    # one per partition key.
    platform: str | Mapping[str, str]
    scrolls: bool  # the source yields SCROLL steps; none at all is suspicious (scroll_histogram)
    # False: the source's SCROLL steps record only the view's direction (AndroidControl's
    # `scroll(down)`), never a gesture: an all-zero mask, zero params, the direction in action_desc.
    scroll_gestures: bool = True
    # Markdown the dataset card shows under the source (warnings, holdout rules).
    notes: str = ""
    # For sources whose partition's files are named in an index file (WebLINX's splits.json):
    # (local repo root holding the file_patterns files, key) -> the rest of the patterns.
    resolve_patterns: Callable[[Path, str], list[str]] | None = None
    # Where the files come from when they are not on the hub (GUI_ASSETS_SOURCE=hub is refused).
    not_on_hub: str = ""
    # Episode attrs listed in dataset_info.json `heldout_ids`, so an evaluation can hold them out.
    heldout_attrs: tuple[str, ...] = ()
    # The episode attr holding a JSON list of the named evaluation subsets the episode belongs to
    # (AndroidControl's test_subsplits: overlapping subsets of a split, recorded on the demos and
    # never built as partitions); dataset_info.json counts them under `subsplits`. "": none.
    subsplit_attr: str = ""
    # The largest screenshot (width, height) the source really produces; a bigger one is a
    # forged or broken header and is dropped (image_too_large) before anything decodes it.
    max_image: tuple[int, int] = (8192, 8192)
    # The role of each partition's main shards (SPLIT_ROLES), one for all or one per key; a
    # holdout (`_val_`) series is always validation.
    split_role: str | Mapping[str, str] = "train"
    # Hosts outside the hub the source's records name files on (https only), fetched in hub mode.
    remote_hosts: tuple[str, ...] = ()
    # For sources whose records name files outside their own files (Pango's events documents and
    # screenshots): (the partition fetched so far, {URL: local copy} fetched so far) -> every
    # reference the records make, an https URL or a repo path. The raw stage (hub mode) calls it
    # until it names nothing new: URLs are fetched from remote_hosts, repo paths from the hub.
    remote_files: Callable[[RawPartition, Mapping[str, Path]], list[str]] | None = None
    # Writes the source's part of the generated demo mirror (gui_assets.sources.demo_mirror): every partition
    # key must find files there, so the demo builds the source offline. None: no demo part.
    demo: DemoGenerator | None = None
    # What the adapter lets a build choose; see the module docstring.
    options: tuple[SourceOption, ...] = ()
    # The source's name in prose (the README's sources table); the `name` when empty.
    title: str = ""
    # The adapter as declared, before `adapter` was bound to this spec's options.
    declared_adapter: Adapter = field(init=False, repr=False)

    def __post_init__(self) -> None:
        platforms = self.platform.values() if isinstance(self.platform, Mapping) else [self.platform]
        if any(p not in PLATFORMS for p in platforms):
            raise ValueError(f"{self.name}: platform must be one of {PLATFORMS}, not {self.platform!r}")
        if isinstance(self.platform, Mapping) and set(self.platform) != set(self.partition_keys):
            raise ValueError(f"{self.name}: a platform per partition key needs every key")
        roles = self.split_role.values() if isinstance(self.split_role, Mapping) else [self.split_role]
        if any(r not in SPLIT_ROLES for r in roles):
            raise ValueError(f"{self.name}: split_role must be one of {SPLIT_ROLES}, not {self.split_role!r}")
        if isinstance(self.split_role, Mapping) and set(self.split_role) != set(self.partition_keys):
            raise ValueError(f"{self.name}: a split role per partition key needs every key")
        if self.subsplit_attr and not self.subsplit_attr.isidentifier():
            raise ValueError(f"{self.name}: subsplit_attr must be an attr name, not {self.subsplit_attr!r}")
        names = [o.name for o in self.options]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.name}: option names must be unique: {names}")
        resolve_options(self.name, self.options, {})  # the defaults obey their own rules
        # dataclasses.replace hands the bound adapter back in: bind the declared one again.
        declared = getattr(self.adapter, _DECLARED, self.adapter)
        object.__setattr__(self, "declared_adapter", declared)
        object.__setattr__(self, "adapter", _bound_to_options(declared, self))

    def directory(self, key: str) -> str:
        if key not in self.partition_keys:
            raise KeyError(f"{self.name} has no partition {key!r} (known: {', '.join(self.partition_keys)})")
        return f"{self.name}_{key}"

    def platform_of(self, key: str) -> str:
        return self.platform[key] if isinstance(self.platform, Mapping) else self.platform

    def split_role_of(self, key: str) -> str:
        return self.split_role[key] if isinstance(self.split_role, Mapping) else self.split_role

    @property
    def adapter_name(self) -> str:
        return self.adapter.__module__

    @property
    def display_name(self) -> str:
        return self.title or self.name

    def resolve_options(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """Every option of this source from the values `given` (by name), defaults filled."""
        return resolve_options(self.name, self.options, given)

    def resolve_config(self, config: BuildConfig) -> BuildConfig:
        """`config` for one of this source's partitions: this source's options checked against
        its declaration and their defaults filled (OptionError names a bad one), the other
        sources' left out. Resolving twice changes nothing."""
        given = config.source_options.get(self.name, {})
        return replace(config, source_options={self.name: self.resolve_options(given)}, source=self.name)

    def hub_mode(self) -> HubMode:
        """Whether GUI_ASSETS_SOURCE=hub builds this source, from what the declaration says."""
        if self.not_on_hub:
            return HubMode(False, "no: not on the hub", f"the files are not on the hub: {self.not_on_hub}")
        if self.remote_files is not None and not self.remote_hosts:
            return HubMode(
                False,
                "no: no file host allowed",
                "its records name files outside the hub and the declaration allows no host to fetch "
                "them from (`remote_hosts`), so the raw stage stops and names the hosts the records use",
            )
        return HubMode(True, "yes")

    def record(self, key: str) -> dict[str, Any]:
        """The `build.source` block of a directory's dataset_info.json."""
        return {
            "name": self.name,
            "repo_id": self.repo_id,
            "license": self.license,
            "platform": self.platform_of(key),
            "split_role": self.split_role_of(key),
            "scroll_gestures": self.scroll_gestures,
            "subsplit_attr": self.subsplit_attr,
            "description": self.description,
            "notes": self.notes,
        }


_DECLARED = "declared_adapter"  # the attribute a bound adapter keeps its declared function under


def _bound_to_options(declared: Adapter, spec: SourceSpec) -> Adapter:
    """`declared`, called with the run's config resolved for `spec`: however the config was
    made (run config, a test, the benchmark), the adapter reads this source's checked options."""

    @functools.wraps(declared)
    def adapter(run: AdapterRun) -> Iterator[GuiEpisode]:
        run.config = spec.resolve_config(run.config)
        return declared(run)

    setattr(adapter, _DECLARED, declared)
    return adapter
