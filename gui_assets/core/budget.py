"""One memory budget for everything the shard writer holds decoded at once.

The frame encoder's threads decode pages while its read-ahead window holds finished chunks; both
draw bytes from one `ByteBudget`. Requests are granted strictly in submission order (tickets), so
the oldest unfinished page, the one the writer waits for, is never starved by younger ones, and
nothing can deadlock: whatever an older request holds is released as the writer consumes it. A
request larger than the whole budget is refused at its turn (the caller drops it by a named
reason) instead of being decoded.
"""

from __future__ import annotations

import threading


class ByteBudget:
    def __init__(self, total: int) -> None:
        if total <= 0:
            raise ValueError("a budget must be positive")
        self.total = total
        self.free = total
        self.peak = 0  # the most ever held at once (for tests and the benchmark)
        self._next = 0
        self._cv = threading.Condition()

    def acquire(self, ticket: int, n: int) -> bool:
        """Wait for `ticket`'s turn and `n` free bytes, then hold them. False (and nothing
        held) when `n` is more than the whole budget."""
        with self._cv:
            self._cv.wait_for(lambda: self._next == ticket and (n > self.total or self.free >= n))
            self._next += 1
            self._cv.notify_all()
            if n > self.total:
                return False
            self.free -= n
            self.peak = max(self.peak, self.total - self.free)
            return True

    def pass_turn(self, ticket: int) -> None:
        """Give up `ticket`'s turn without holding anything (its work failed before asking)."""
        with self._cv:
            self._cv.wait_for(lambda: self._next == ticket)
            self._next += 1
            self._cv.notify_all()

    def release(self, n: int) -> None:
        with self._cv:
            self.free = min(self.total, self.free + n)
            self._cv.notify_all()
