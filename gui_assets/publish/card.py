"""The dataset card `<out>/README.md`, generated from every dataset_info.json (never hand-edited).

The prose is the template `gui_assets/templates/dataset_card.md`; this module fills it from the
built directories alone: the splits table (episodes / steps / shards / size, holdout shards in
their own table), each directory's platform, each source's notes and its upstream repo and
licence, all read from `build.source` in the directories' dataset_info.json; and the
screen-overlap table, from the audit's summary (publish.screen_overlap).
"""

from __future__ import annotations

from pathlib import Path
from string import Template
from typing import Any

from gui_assets.core.atomic import atomic_write_text
from gui_assets.core.layout import PREVIEW_DIR, DatasetInfo, built_directories
from gui_assets.publish import screen_overlap

TEMPLATE = Path(__file__).resolve().parent / "templates" / "dataset_card.md"
# The LeRobot section: only in the card of a build whose LeRobot export is on.
LEROBOT_TEMPLATE = TEMPLATE.with_name("dataset_card_lerobot.md")
# The mobile section: only in the card of a build with a directory on the mobile platform.
MOBILE_TEMPLATE = TEMPLATE.with_name("dataset_card_mobile.md")
LICENSE_FILE = "LICENSE.md"  # the card's license_link
DEMO_NOTICE = (
    "\n> **Demo data, not a dataset.** Built from gui_assets' generated demo mirror: small synthetic\n"
    "> recordings in each upstream's real format, with deliberately broken records. Nothing here is a\n"
    "> real demonstration, and it is never uploaded to a dataset repo.\n"
)


def human_size(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


def _row(info: DatasetInfo, val: bool) -> dict[str, Any]:
    shards = info.val_shards if val else info.shards
    rule = info.build.get("holdout_rule", {})
    return {
        "directory": f"{info.directory}/",
        "source": info.source,
        "platform": info.source_record.get("platform", ""),
        "episodes": sum(s.demos for s in shards) if shards else (rule.get("val_episodes", 0) if val else 0),
        "steps": sum(s.steps for s in shards),
        "shards": len(shards),
        "bytes": sum(s.bytes for s in shards),
    }


def _table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    head = "| " + " | ".join(columns) + " |\n|" + "---|" * len(columns) + "\n"
    body = ""
    for r in rows:
        cells = [
            human_size(r["bytes"]) if c == "size" else f"{r[c]:,}" if isinstance(r[c], int) else str(r[c])
            for c in columns
        ]
        body += "| " + " | ".join(cells) + " |\n"
    return head + body


def _by_source(infos: list[DatasetInfo]) -> dict[str, dict[str, Any]]:
    """One record per source (the first directory's), in name order."""
    records: dict[str, dict[str, Any]] = {}
    for info in infos:
        records.setdefault(info.source, info.source_record)
    return dict(sorted(records.items()))


def _upstream_rows(infos: list[DatasetInfo]) -> str:
    """A table row per source: its upstream repo and licence (in the card and in LICENSE.md)."""
    rows = _by_source(infos).items()
    return "".join(f"| {name} | `{r.get('repo_id', '')}` | {r.get('license', '')} |\n" for name, r in rows)


def _listing(directories: list[str]) -> str:
    names = [f"`{d}/`" for d in directories]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def mobile_section(infos: list[DatasetInfo]) -> str:
    """What a tap, a long press, a scroll, the device keys, opening an app, typing and the end
    of an episode become in the action space: only when a directory's platform is mobile."""
    mobile = [i for i in infos if i.source_record.get("platform") == "mobile"]
    if not mobile:
        return ""
    direction_only = [i.directory for i in mobile if i.source_record.get("scroll_gestures") is False]
    sentence = ""
    if direction_only:
        verb = "records" if len(direction_only) == 1 else "record"
        sentence = (
            f"{_listing(direction_only)} {verb} a scroll's direction only: its SCROLLs have no "
            "gesture, and the direction is in action_desc alone."
        )
    names = _listing([i.directory for i in mobile])
    holds = f"The directory {names} holds" if len(mobile) == 1 else f"The directories {names} hold"
    return Template(MOBILE_TEMPLATE.read_text(encoding="utf-8")).substitute(
        mobile_directories=holds, direction_only_sentence=sentence
    )


def subsplits_section(infos: list[DatasetInfo]) -> str:
    """The named evaluation subsets of the directories that record them (dataset_info.json
    `subsplits`), one row per subset."""
    rows = []
    attrs = set()
    for info in infos:
        listed = info.extra.get("subsplits")
        if not isinstance(listed, dict) or not listed:
            continue
        attrs.add(f"`{info.source_record.get('subsplit_attr') or 'subsplits'}`")
        for name, counts in listed.items():
            rows.append({"directory": f"{info.directory}/", "subset": name, **counts})
    if not rows:
        return ""
    return (
        "Test sub-splits: named evaluation subsets of a directory, overlapping and not built as "
        f"directories of their own. Each demo lists the ones it belongs to in its {', '.join(sorted(attrs))} "
        "attribute (a JSON list), and dataset_info.json counts them under `subsplits`:\n\n"
        + _table(rows, ["directory", "subset", "episodes", "steps"])
    )


def screen_overlap_section(summary: dict[str, Any] | None) -> str:
    """The screen-overlap audit's table (publish.screen_overlap), when it has run."""
    if summary is None:
        return ""
    return (
        "Screens shared across splits: every frame has a 512-bit screen fingerprint, and an evaluation "
        f"frame within {summary.get('threshold_bits')} bits of a training frame is a near-duplicate (the "
        "same screen, give or take a typed character, the pointer or JPEG noise). Per evaluation set:\n\n"
        + screen_overlap.markdown_table(summary)
        + f"\n\n`{screen_overlap.OVERLAP_FILE}` lists every such evaluation step (`eval_directory`, "
        "`eval_episode_id`, `eval_step`: the demo's `episode_id` attribute and the 0-based step) with its "
        "nearest training step and the distance; drop or down-weight those steps when you evaluate. The "
        "splits themselves stay the benchmarks' own.\n"
    )


def samples_section(infos: list[DatasetInfo], pages: set[str]) -> str:
    """Links to the per-directory sample pages that exist (`samples/<directory>.html`)."""
    linked = [i.directory for i in infos if i.directory in pages]
    if not linked:
        return ""
    links = "".join(f"- [{d}](samples/{d}.html)\n" for d in linked)
    return (
        "## See a demonstration\n\n"
        "One demonstration per directory as a self-contained page (download it and open it in a "
        "browser): the pre-action frame with the action drawn at its params, the eye-in-hand window "
        "and crop, the mask and text of every step. `gui-assets view <folder>` serves the same page "
        "over any downloaded shards.\n\n" + links
    )


def card_text(
    infos: list[DatasetInfo],
    repo_id: str,
    sample_pages: set[str] | None = None,
    lerobot: bool = False,
    overlap: dict[str, Any] | None = None,
) -> str:
    main = [_row(i, val=False) for i in infos]
    val = [_row(i, val=True) for i in infos if i.val_shards]
    totals = {k: sum(r[k] for r in main + val) for k in ("episodes", "steps", "shards", "bytes")}
    sources = _by_source(infos)
    holdout = (
        "Holdout shards (`<directory>_val_NNNN.hdf5`), excluded from the table above:\n\n"
        + _table(val, ["directory", "episodes", "steps", "shards", "size"])
        if val
        else ""
    )
    notes = "".join(f"\n> **{name}:** {r['notes']}\n" for name, r in sources.items() if r.get("notes"))
    example = next(
        (f"{r['directory']}{i.shards[0].file}" for r, i in zip(main, infos, strict=True) if i.shards), ""
    )
    lerobot_section = ""
    if lerobot:
        lerobot_section = Template(LEROBOT_TEMPLATE.read_text(encoding="utf-8")).substitute(
            repo_id=repo_id, lerobot_example=infos[0].directory if infos else "<directory>"
        )
    return Template(TEMPLATE.read_text(encoding="utf-8")).substitute(
        preview_dir=PREVIEW_DIR,
        source_count=len(sources),
        episodes=f"{totals['episodes']:,}",
        steps=f"{totals['steps']:,}",
        shards=totals["shards"],
        size=human_size(totals["bytes"]),
        splits_table=_table(main, ["directory", "source", "platform", "episodes", "steps", "shards", "size"]),
        holdout_section=holdout,
        subsplits_section=subsplits_section(infos),
        screen_overlap_section=screen_overlap_section(overlap),
        mobile_section=mobile_section(infos),
        source_notes=notes,
        samples_section=samples_section(infos, sample_pages or set()),
        example=example,
        lerobot_section=lerobot_section,
        repo_id=repo_id,
        upstream_rows=_upstream_rows(infos),
        demo_notice=DEMO_NOTICE if any(i.demo for i in infos) else "",
        size_category=size_category(totals["episodes"]),
    )


def size_category(n: int) -> str:
    """The hub's size_categories bucket for n examples (episodes)."""
    for bound, label in (
        (1_000, "n<1K"),
        (10_000, "1K<n<10K"),
        (100_000, "10K<n<100K"),
        (1_000_000, "100K<n<1M"),
    ):
        if n < bound:
            return label
    return "1M<n<10M" if n < 10_000_000 else "n>10M"


def licence_text(infos: list[DatasetInfo]) -> str:
    """`LICENSE.md`, the card's `license_link`: each source's own terms."""
    return (
        "# Terms\n\nThis dataset is derived from the datasets below; each part keeps its upstream's terms. "
        "Check them before any use, and cite the upstream datasets.\n\n"
        "| source | upstream | licence |\n|---|---|---|\n" + _upstream_rows(infos)
    )


def write_card(
    out: Path, repo_id: str, sample_pages: set[str] | None = None, lerobot: bool = False
) -> dict[str, Any]:
    """The card and its licence file; `sample_pages` are the directories with a sample page;
    `lerobot`: the build's LeRobot export is on (the card says how to load it)."""
    infos = built_directories(out)
    overlap = screen_overlap.read_summary(out)
    atomic_write_text(out / "README.md", card_text(infos, repo_id, sample_pages, lerobot, overlap))
    atomic_write_text(out / LICENSE_FILE, licence_text(infos))
    return {"path": str(out / "README.md"), "directories": [i.directory for i in infos]}
