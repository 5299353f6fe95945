"""Which episodes of a partition go to its main shards and which to a holdout.

Benchmark splits are used as they ship: the partition key IS the split, every episode goes to
the main shards and nothing is re-split. Holdout rules for sources without an official split
are added beside `shipped_split` with the same signature.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

MAIN = "main"
VAL = "val"


@dataclass(frozen=True, slots=True)
class SplitRule:
    name: str
    description: str
    assign: Callable[[str, dict[str, str]], str]  # (episode_id, attrs) -> MAIN or VAL
    # The episode attr that must never straddle main and val (AgentNet: task_id), if any.
    group_key: str | None = None
    # The share of episodes a holdout rule must put in val, judged on non-trivial inputs.
    val_fraction: tuple[float, float] | None = None
    fraction: float | None = None  # the holdout share a hash rule aims at

    def record(self) -> dict[str, object]:
        d: dict[str, object] = {"name": self.name, "description": self.description}
        if self.group_key:
            d["group_key"] = self.group_key
        if self.fraction is not None:
            d["fraction"] = self.fraction
        return d


def hash_fraction(salt: str, key: str) -> float:
    """A stable number in [0, 1) for `key`: the first 32 bits of sha256(salt + ":" + key)."""
    return int(hashlib.sha256(f"{salt}:{key}".encode()).hexdigest()[:8], 16) / 2**32


def hash_holdout(salt: str, group_key: str, fraction: float) -> SplitRule:
    """Episodes whose `group_key` attr hashes below `fraction` go to val: a repeated id always
    lands on one side, and the assignment never changes when other episodes come or go."""

    def assign(episode_id: str, attrs: dict[str, str]) -> str:
        return VAL if hash_fraction(salt, attrs[group_key]) < fraction else MAIN

    return SplitRule(
        name="hash_holdout",
        description=f"val iff int(sha256('{salt}:' + {group_key})[:8 hex], 16) / 2**32 < {fraction}",
        assign=assign,
        group_key=group_key,
        val_fraction=(fraction * 0.75, fraction * 1.25),
        fraction=fraction,
    )


shipped_split = SplitRule(
    name="shipped",
    description="the upstream benchmark split, used as it ships: the partition key is the split",
    assign=lambda episode_id, attrs: MAIN,
)


# Upstream splits whose rows are held out of training: a validation split, and the benchmark
# evaluation split some cua-lite datasets ship as `eval`.
HELDOUT_SPLITS = ("validation", "eval")

shipped_validation = SplitRule(
    name="shipped_validation",
    description="the upstream splits as they ship: validation and eval (benchmark) rows go to the "
    "_val_ shards, train rows to the main ones; a row is never kept twice, and a train or "
    "validation row identical to an eval row is dropped",
    assign=lambda episode_id, attrs: VAL if attrs.get("upstream_split") in HELDOUT_SPLITS else MAIN,
)
