"""Every setting a user can give, declared once: the environment variables, and the knobs of the
build resource's run config (`resources.build.config`), each with its meaning and default.

The resources read the variables through `Variable.value()` (at run time, never at import); the
code location judges every variable's value when it loads (`refuse_bad_environment`), so a bad
one stops the load rather than a later run. The
build resource's fields are made from `build_knobs()` (the byte-changing knobs come from
BuildConfig's own fields, the others are declared in PUBLISH_KNOBS below) and from each
registered source's options, and the README's configuration tables are rendered from the same
declarations (`gui-assets docs`). The variables' names are a contract.
"""

from __future__ import annotations

import os
import typing
from dataclasses import MISSING, dataclass, fields
from typing import Any

from gui_assets.core.config import BuildConfig
from gui_assets.sources.spec import SourceOption, SourceSpec


class SettingError(ValueError):
    """A variable set to a value its declaration does not allow."""


@dataclass(frozen=True, slots=True)
class Variable:
    """One environment variable: read when a run starts, so the code location loads without it."""

    name: str
    meaning: str
    default: str  # what applies when it is unset, in words
    secret: bool = False  # never logged, never in metadata
    choices: tuple[str, ...] = ()  # the values it may take (case and spaces aside); empty: any
    whole_number: bool = False  # it counts something: digits only

    def read(self) -> str | None:
        """Its value as set, None when unset or empty."""
        return os.environ.get(self.name) or None

    def value(self) -> str | None:
        """Its value, judged against the declaration (a choice comes back lower-cased); None when
        unset. SettingError names the variable, the value and what it may be."""
        raw = self.read()
        if raw is None:
            return None
        if self.choices:
            chosen = raw.strip().lower()
            if chosen not in self.choices:
                raise SettingError(f"{self.name} must be one of {', '.join(self.choices)}, not {raw!r}")
            return chosen
        if self.whole_number and not raw.strip().isdigit():
            raise SettingError(f"{self.name} must be a whole number, not {raw!r}")
        return raw.strip() if self.whole_number else raw


OUT = Variable("GUI_ASSETS_OUT", "where datasets are written", "`./build`")
MIRROR = Variable(
    "GUI_ASSETS_MIRROR",
    "local directory laid out like the hub: `<mirror>/<owner>/<repo>/<path in repo>`",
    "the generated demo mirror, `<out>/_work/demo_mirror` (a source's part is generated when a "
    "build first reads it)",
)
SOURCE = Variable(
    "GUI_ASSETS_SOURCE",
    "`mirror` (read `GUI_ASSETS_MIRROR`) or `hub` (download with huggingface_hub, then read)",
    "`mirror`",
    choices=("mirror", "hub"),
)
HF_TOKEN = Variable(
    "HF_TOKEN", "hub token for gated repos and uploads; never logged or written", "unset", True
)
HF_ENDPOINT = Variable(
    "HF_ENDPOINT", "huggingface_hub's own variable: a hub mirror to download from", "the hub"
)
ALERT_WEBHOOK = Variable(
    "GUI_ASSETS_ALERT_WEBHOOK",
    "URL failed checks and runs are POSTed to (Slack-compatible JSON)",
    "unset: `<out>/alerts.jsonl` and the log",
)
HUB_REPO = Variable(
    "GUI_ASSETS_HUB_REPO",
    "the dataset repo uploads go to, `owner/name`",
    "unset: `<out>/hub/`, laid out as the repo",
)
EXECUTOR = Variable(
    "GUI_ASSETS_EXECUTOR",
    "how a run's steps execute, read when the code location loads: `in_process`, `multiprocess`, "
    "`celery` or `k8s`",
    "`in_process`",
    choices=("in_process", "multiprocess", "celery", "k8s"),
)
CELERY_BROKER = Variable(
    "GUI_ASSETS_CELERY_BROKER",
    "the Celery broker for `GUI_ASSETS_EXECUTOR=celery` (and its result backend unless "
    "`GUI_ASSETS_CELERY_BACKEND` is set)",
    "unset",
)
CELERY_BACKEND = Variable("GUI_ASSETS_CELERY_BACKEND", "the Celery result backend", "the broker")
WRITE_THREADS = Variable(
    "GUI_ASSETS_WRITE_THREADS",
    "threads that decode and deflate frames in a shard-writing step (the `write_threads` knob wins)",
    "the usable CPUs",
    whole_number=True,
)
LEROBOT = Variable(
    "GUI_ASSETS_LEROBOT",
    "`1`: write the LeRobot export (`lerobot_export`, `hub_lerobot`) with the rest; it doubles the "
    "bytes written and uploaded (the `lerobot_export` knob wins)",
    "off",
    choices=("0", "1", "true", "false", "yes", "no"),
)

VARIABLES: tuple[Variable, ...] = (
    MIRROR,
    OUT,
    SOURCE,
    HF_TOKEN,
    HF_ENDPOINT,
    ALERT_WEBHOOK,
    HUB_REPO,
    EXECUTOR,
    CELERY_BROKER,
    CELERY_BACKEND,
    WRITE_THREADS,
    LEROBOT,
)


def refuse_bad_environment() -> None:
    """Raises SettingError naming every variable whose value its declaration does not allow (the
    code location calls it when it loads, so `GUI_ASSETS_SOURCE=bogus` stops the load, not a run)."""
    problems = []
    for variable in VARIABLES:
        try:
            variable.value()
        except SettingError as e:
            problems.append(str(e))
    if problems:
        raise SettingError("bad gui_assets settings in the environment: " + "; ".join(problems))


@dataclass(frozen=True, slots=True)
class Knob:
    """One field of the build resource's run config."""

    name: str  # resources.build.config.<name>
    type: Any  # its run-config type
    default: Any
    meaning: str
    default_text: str = ""  # the README's default column, when the value alone would mislead
    field: str = ""  # the BuildConfig field it sets ("": a knob of the publishing assets)
    unit: float = 1  # BuildConfig value = run-config value x unit

    @property
    def recorded(self) -> bool:
        """Recorded in dataset_info.json build.config (it changes a directory's bytes)."""
        return bool(self.field)

    def to_config(self, value: Any) -> Any:
        """A run-config value as the BuildConfig field takes it."""
        if value is None or self.unit == 1:
            return tuple(value) if isinstance(value, list) else value
        return int(value * self.unit)


# The knobs of the publishing assets: they change the preview and the cua-lite export, not a
# directory's bytes, so they are not in BuildConfig.
PUBLISH_KNOBS: tuple[Knob, ...] = (
    Knob(
        "cua_lite_evaluation_as_validation",
        bool,
        False,
        "export a benchmark's evaluation tasks (WebArena's) to cua-lite as validation (never as train)",
    ),
    Knob(
        "lerobot_export",
        bool | None,
        None,
        "write every built directory as a LeRobot v3.0 dataset too (`lerobot_export`, `hub_lerobot`)",
        default_text="`GUI_ASSETS_LEROBOT`, else off",
    ),
    Knob(
        "lerobot_video",
        bool,
        False,
        "the LeRobot export's agentview as an AV1 video feature (lossy, smaller) instead of PNG images",
    ),
    Knob("preview_count", int, 665, "steps sampled into the preview, across every directory built"),
    Knob("preview_seed", int, 0, "the seed of the preview's sample"),
    Knob(
        "write_threads",
        int | None,
        None,
        "threads that decode and deflate frames in a shard-writing step (not an output knob)",
        default_text="`GUI_ASSETS_WRITE_THREADS`, else the usable CPUs",
    ),
)


def _run_config_type(hint: Any) -> Any:
    """A BuildConfig field's type as run config carries it: a tuple is typed as a list."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) is tuple:
        return list[args[0]]  # type: ignore[valid-type]
    if type(None) in args:
        (inner,) = (a for a in args if a is not type(None))
        return _run_config_type(inner) | None
    return hint


def config_knobs() -> tuple[Knob, ...]:
    """The byte-changing knobs, one per BuildConfig field declared with `config.knob`."""
    hints = typing.get_type_hints(BuildConfig)
    knobs = []
    for f in fields(BuildConfig):
        if "meaning" not in f.metadata:
            continue  # source_options and source: not a knob of their own
        meta = f.metadata
        typed = _run_config_type(hints[f.name])
        if f.default is MISSING:  # a computed default: unset in run config means "compute it"
            typed, default = typed | None, None
        else:
            default = f.default / meta["unit"] if meta["unit"] != 1 else f.default
            typed = float if meta["unit"] != 1 else typed
        knobs.append(
            Knob(
                meta["typed_as"] or f.name,
                typed,
                default,
                meta["meaning"],
                meta["default_text"],
                field=f.name,
                unit=meta["unit"],
            )
        )
    return tuple(knobs)


def build_knobs() -> tuple[Knob, ...]:
    """Every field of the build resource's run config but `source_options`, in README order."""
    return (*config_knobs(), *PUBLISH_KNOBS)


def option_path(spec: SourceSpec, option: SourceOption) -> str:
    """Where run config sets a source option, under resources.build.config."""
    return f"source_options.{spec.name}.{option.name}"
