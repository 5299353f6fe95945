"""Which episodes of a partition go to its main shards and which to a holdout.

Benchmark splits are used as they ship: the partition key IS the split, every episode goes to
the main shards and nothing is re-split. Holdout rules for sources without an official split
are added beside `shipped_split` with the same signature.
"""

from __future__ import annotations

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

    def record(self) -> dict[str, str]:
        return {"name": self.name, "description": self.description}


shipped_split = SplitRule(
    name="shipped",
    description="the upstream benchmark split, used as it ships: the partition key is the split",
    assign=lambda episode_id, attrs: MAIN,
)
