"""The screen-overlap audit's verdict (publish.screen_overlap): WARN when an evaluation set shows
too many screens the training set already holds.

Fails when, in any evaluation set (an evaluation directory, or a directory's `_val_` holdout),
more than MAX_SHARE of the frames have a near-duplicate in a training directory (of any source),
or when a built directory has no fingerprints (built before the shard stage kept them: the
audit cannot vouch for it until its shards are rebuilt). It never changes a split: the
benchmarks' splits stay the benchmarks'; the parquet says which steps to drop or weight.
"""

from __future__ import annotations

from typing import Any

from gui_assets.checks.verdict import MAX_EXAMPLES, WARN, Verdict

MAX_SHARE = 0.20  # of an evaluation set's frames with a near-duplicate in training


def screen_overlap(summary: dict[str, Any] | None) -> Verdict:
    if summary is None:
        return Verdict(False, WARN, "no screen-overlap summary: materialize screen_overlap")
    sets = summary.get("evaluation_sets") or []
    over = sorted((s for s in sets if s["frame_share_any"] > MAX_SHARE), key=lambda s: -s["frame_share_any"])
    missing = list(summary.get("directories_without_fingerprints") or [])
    worst = max(sets, key=lambda s: s["frame_share_any"], default=None)
    figures: dict[str, Any] = {
        "evaluation_sets": len(sets),
        "evaluation_frames": summary.get("evaluation_frames", 0),
        "training_frames": summary.get("training_frames", 0),
        "matched_frames": summary.get("matched_frames", 0),
        "worst_share": worst["frame_share_any"] if worst else 0.0,
        "worst_set": f"{worst['directory']} ({worst['part']})" if worst else "",
        "max_share": MAX_SHARE,
        "threshold_bits": summary.get("threshold_bits"),
        "directories_without_fingerprints": missing,
    }
    examples = [
        f"{s['directory']} ({s['part']}): {s['frame_share_any']:.1%} of frames, "
        f"{s['episode_share_any']:.1%} of episodes have a near-duplicate in training"
        for s in over[:MAX_EXAMPLES]
    ]
    examples += [f"{d}: no fingerprints; rebuild its shards" for d in missing[: MAX_EXAMPLES - len(examples)]]
    if over or missing:
        parts = []
        if over:
            parts.append(f"{len(over)} evaluation set(s) above {MAX_SHARE:.0%} of frames seen in training")
        if missing:
            parts.append(f"{len(missing)} directory(ies) without fingerprints")
        return Verdict(False, WARN, "; ".join(parts), figures, examples)
    if not sets:
        return Verdict(True, WARN, "no evaluation directory built: nothing to audit", figures)
    return Verdict(
        True,
        WARN,
        f"every evaluation set at or under {MAX_SHARE:.0%} of frames seen in training "
        f"(worst {figures['worst_set']}: {figures['worst_share']:.1%})",
        figures,
    )
