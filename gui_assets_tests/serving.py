"""The tests' local servers (the hub, the HTTPS bucket, the webhook receiver) serve on a thread of
the test's own process: `with Server(...) as s:` starts it, leaving the block stops it."""

from __future__ import annotations

import socketserver
import threading
from typing import Self

# How often serve_forever looks for a stop request: `shutdown()` waits for that look, and the
# default (0.5 s) held about forty tests half a second each at their end.
POLL_SECONDS = 0.02


class ServedOnAThread:
    """A context manager serving `self._server` (set by the subclass) until the block ends."""

    _server: socketserver.BaseServer

    def __enter__(self) -> Self:
        serve = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": POLL_SECONDS}, daemon=True
        )
        serve.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
