"""No silent skips in CI: with CI=true, a skipped test fails the run unless it is allowed here.

A test that skips because its real client (robomimic, `datasets`, chromium, Redis, PostgreSQL,
g++) is missing proves nothing, and "N passed" looks the same without it. Locally a skip is
still a skip, so a developer without chromium can run the rest; CI installs everything
(`scripts/test`, all `.ci/run` does) and must run everything. Every run prints each skip and its
reason (`-rs`).
"""

from __future__ import annotations

import os
from typing import Any

import pytest

# Tests allowed to skip in CI, each with why. Keep this short.
ALLOWED_MARKERS: dict[str, str] = {
    # The real Hugging Face hub cannot be reached from CI (only package registries are); these
    # tests are deselected by default (`-m 'not hub'`) and skip without network or HF_TOKEN.
    "hub": "needs the real Hugging Face hub",
}
ALLOWED_NODEIDS: dict[str, str] = {}

_disallowed: list[tuple[str, str]] = []


def strict() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def allowed(item_markers: set[str], nodeid: str) -> bool:
    return bool(item_markers & ALLOWED_MARKERS.keys()) or any(
        nodeid == n or nodeid.startswith(n + "[") for n in ALLOWED_NODEIDS
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Any:
    outcome = yield
    report = outcome.get_result()
    if not report.skipped or hasattr(report, "wasxfail"):
        return
    if allowed({m.name for m in item.iter_markers()}, item.nodeid):
        return
    reason = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
    reason = reason.removeprefix("Skipped: ")
    _disallowed.append((item.nodeid, reason))
    if strict():
        report.outcome = "failed"
        report.longrepr = (
            f"skipped under CI=true, which runs every test: {reason}\n"
            "(install what it needs in scripts/test, or add it to gui_assets_tests/skip_policy.py with why)"
        )


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _disallowed:
        return
    verdict = "failed (CI=true)" if strict() else "skipped (would fail under CI=true)"
    terminalreporter.write_sep("-", f"{len(_disallowed)} test(s) {verdict}: not on the skip allow-list")
    for nodeid, reason in _disallowed:
        terminalreporter.write_line(f"{nodeid}: {reason}")
